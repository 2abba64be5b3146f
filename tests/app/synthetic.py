"""Small Kineto-style traces written to disk by the tests (markup injection, deep stacks, orphans, …)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PID, TID = 100, 100


def op(name: str, ts: float, dur: float, cat: str = "cpu_op", **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur, "args": args}


def kernel(name: str, ts: float, dur: float, correlation: int, cat: str = "kernel") -> dict[str, Any]:
    args = {"correlation": correlation, "stream": 7, "device": 0, "grid": [1, 1, 1], "block": [128, 1, 1]}
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": args}


def thread_name(pid: int, tid: int, name: str) -> dict[str, Any]:
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}


def write(path: Path, events: list[dict[str, Any]], **top: Any) -> Path:
    top.setdefault("deviceProperties", [{"id": 0, "name": "NVIDIA H200"}])
    path.write_text(json.dumps({"schemaVersion": 1, **top, "traceEvents": events}))
    return path


def cpu_steps_trace(path: Path) -> Path:
    """Two ProfilerSteps of CPU ops only (no GPU work): each step's verdict is ``idle``."""
    events = []
    for step in range(2):
        start = 1_000.0 + 1_000.0 * step
        events.append(op(f"ProfilerStep#{step}", start, 900.0, cat="user_annotation"))
        events.append(op("aten::mm", start + 10, 800.0))
    return write(path, events)


MARKUP_NAMES = ("[bold red]x[/]", "[/tmp/x]", "[@click=app.quit]quit[/]", "esc\x1b]52;c;aGk=\x07bytes")


def markup_trace(path: Path) -> Path:
    """Names that Rich/Textual markup would parse, plus an OSC 52 escape sequence."""
    events = [thread_name(PID, TID, "[b]main[/b]"), op("ProfilerStep#1", 0, 100, cat="user_annotation")]
    for index, name in enumerate(MARKUP_NAMES):
        start = 5 + index * 20
        events.append(op(name, start, 15))
        events.append(op("cudaLaunchKernel", start + 1, 5, cat="cuda_runtime", correlation=index + 1))
        events.append(kernel(f"{name}_kernel", start + 10, 4, index + 1))
    return write(path, events)


def deep_trace(path: Path, depth: int = 3000) -> Path:
    """A python stack ``depth`` frames deep with one kernel launch at the bottom."""
    events = [
        op(f"frame_{level}.py({level}): f{level}", level * 0.01, 1000 - level * 0.02, cat="python_function")
        for level in range(depth)
    ]
    bottom = depth * 0.01
    events.append(op("aten::mm", bottom + 1, 10))
    events.append(op("cudaLaunchKernel", bottom + 2, 5, cat="cuda_runtime", correlation=1))
    events.append(kernel("deep_gemm_kernel", bottom + 20, 8, 1))
    return write(path, events)


def orphan_trace(path: Path) -> Path:
    """One launched kernel and two kernels whose launch call is missing."""
    events = [
        op("aten::relu", 0, 20),
        op("cudaLaunchKernel", 2, 5, cat="cuda_runtime", correlation=1),
        kernel("relu_kernel", 10, 3, 1),
        kernel("lost_kernel_a", 30, 4, 77),
        kernel("lost_kernel_b", 40, 6, 78),
    ]
    return write(path, events)


def truncated_trace(path: Path, source: bytes) -> Path:
    """The first two thirds of a real (decompressed) trace: a writer killed mid-file."""
    path.write_bytes(source[: len(source) * 2 // 3])
    return path


def wide_trace(path: Path, count: int = 30_000) -> Path:
    """``count`` consecutive top-level ops on one thread (no steps): one node with that many children."""
    return write(path, [op(f"aten::op_{index % 7}", index * 2.0, 1.0) for index in range(count)])
