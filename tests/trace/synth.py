"""Build small synthetic Kineto-style traces for tests."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

PID = 100
TID = 100


def x(
    cat: str, name: str, ts: float, dur: float, pid: Any = PID, tid: Any = TID, **args: Any
) -> dict[str, Any]:
    """A complete event; keyword args become ``args`` (underscores → spaces for known keys)."""
    event: dict[str, Any] = {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
    }
    if args:
        event["args"] = {ARG_NAMES.get(k, k): v for k, v in args.items()}
    return event


ARG_NAMES = {
    "external_id": "External id",
    "input_dims": "Input Dims",
    "input_type": "Input type",
    "seq": "Sequence number",
    "fwd_tid": "Fwd thread id",
}


def op(name: str, ts: float, dur: float, **kw: Any) -> dict[str, Any]:
    return x("cpu_op", name, ts, dur, **kw)


def annotation(name: str, ts: float, dur: float, **kw: Any) -> dict[str, Any]:
    return x("user_annotation", name, ts, dur, **kw)


def launch(name: str, ts: float, dur: float, correlation: int, **kw: Any) -> dict[str, Any]:
    return x("cuda_runtime", name, ts, dur, correlation=correlation, **kw)


def kernel(
    name: str, ts: float, dur: float, correlation: int | None, stream: int = 7, **kw: Any
) -> dict[str, Any]:
    args: dict[str, Any] = {"device": 0, "stream": stream, **kw}
    if correlation is not None:
        args["correlation"] = correlation
    return x("kernel", name, ts, dur, pid=0, tid=stream, **args)


def trace_doc(events: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"schemaVersion": 1, "baseTimeNanoseconds": 1790857026000000000}
    doc.update(top)
    doc["traceEvents"] = events
    return doc


def write(path: Path, doc: Any, gz: bool = False) -> Path:
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def mlp_like() -> list[dict[str, Any]]:
    """One step: annotation → linear (launches a GEMM) and t (launches nothing)."""
    return [
        annotation("ProfilerStep#1", 0.0, 100.0),
        annotation("fwd", 1.0, 90.0),
        op("aten::linear", 2.0, 50.0),
        op("aten::t", 3.0, 5.0),
        op("aten::addmm", 10.0, 30.0),
        launch("cudaLaunchKernel", 12.0, 5.0, correlation=7),
        kernel("gemm_kernel", 20.0, 40.0, correlation=7),
    ]
