"""Rank sets derived from real traces, for tests and benchmarks: a rank's clock shifted, a rank that
arrives late at every collective, a rank missing, a rank with one more step, another run of a rank,
and N ranks made from one single-GPU trace (with NCCL-like collectives added).

Every change is exact: times are moved in integer nanoseconds, so a test can predict each figure.
``python -m tests.ranks.synthetic SRC OUT --ranks 8 [--straggler 3]`` (from the repository's root)
builds the benchmark's set. A test fixture, so not in the wheel: ``benchmarks/bench_ranks.py``
imports it from here (tests/ is a package; the benchmarks run from a checkout).
"""

from __future__ import annotations

import argparse
import copy
import gzip
import os
import types
from pathlib import Path
from typing import Any

import msgspec

_gzip: types.ModuleType
try:
    from isal import igzip as _gzip
except ImportError:  # pragma: no cover - isal is a declared dependency
    _gzip = gzip

Doc = dict[str, Any]
ID_OFFSET = 10_000_000  # added to correlation / External id / flow ids of copied events
COLLECTIVE_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def read(path: str | Path) -> Doc:
    """A trace file (plain or gzip) as a dict."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = msgspec.json.decode(raw)
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a Kineto trace object")
    return doc


def write(doc: Doc, path: str | Path, mtime_ns: int | None = None) -> Path:
    """Write ``doc`` (gzip when the name ends in ``.gz``); ``mtime_ns`` sets the file's time."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = msgspec.json.encode(doc)
    if path.name.endswith(".gz"):
        data = _gzip.compress(data, 1)
    path.write_bytes(data)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def set_rank(doc: Doc, rank: int, world_size: int | None = None, backend: str | None = None) -> Doc:
    """``doc`` with its ``distributedInfo`` saying ``rank`` (and the world size / backend)."""
    info = dict(doc.get("distributedInfo") or {})
    info["rank"] = rank
    if world_size is not None:
        info["world_size"] = world_size
    if backend is not None:
        info["backend"] = backend
    return {**doc, "distributedInfo": info}


def without_rank(doc: Doc) -> Doc:
    """``doc`` without ``distributedInfo`` (the rank must then come from the file name)."""
    return {k: v for k, v in doc.items() if k != "distributedInfo"}


def shift_clock(doc: Doc, delta_ns: int) -> Doc:
    """Every timestamp of ``doc`` moved by ``delta_ns`` (a rank whose clock is off)."""
    events = [_moved(e, delta_ns) for e in doc["traceEvents"]]
    return {**doc, "traceEvents": events}


def is_collective(event: Doc) -> bool:
    """A collective as tracetui sees it: an NCCL kernel or a ``gloo:*`` span on a CPU thread."""
    name = str(event.get("name", ""))
    if event.get("cat") == "kernel":
        return name.startswith(("nccl", "void nccl", "rccl"))
    return event.get("cat") == "user_annotation" and name.startswith("gloo:")


def delay_collectives(doc: Doc, delay_ns: int) -> Doc:
    """Each collective of ``doc`` starts ``delay_ns`` later and ends when it did (a rank that arrives
    late: the others' waiting is unchanged, its own is shorter)."""

    def late(event: Doc) -> Doc:
        if event.get("ph") != "X" or not is_collective(event):
            return event
        start, dur = _ns(event["ts"]), _ns(event["dur"])
        shift = min(delay_ns, dur)
        return {**event, "ts": _us(start + shift), "dur": _us(dur - shift)}

    return {**doc, "traceEvents": [late(e) for e in doc["traceEvents"]]}


def steps(doc: Doc) -> list[Doc]:
    """The ``ProfilerStep#N`` spans of ``doc``, in time order."""
    found = [
        e
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    return sorted(found, key=lambda e: e["ts"])


def add_step(doc: Doc) -> Doc:
    """``doc`` with its last step copied after the end of the trace as the next step number: every
    event from the last step's start on, with new correlation, External id and flow ids."""
    last = steps(doc)[-1]
    start = _ns(last["ts"])
    end = max(_ns(e["ts"]) + _ns(e.get("dur", 0)) for e in doc["traceEvents"] if "ts" in e)
    shift = end - start + 1000
    number = int(str(last["name"]).split("#")[1])
    copies = []
    for event in doc["traceEvents"]:
        if event.get("ph") == "M" or "ts" not in event or _ns(event["ts"]) < start:
            continue
        copied = _renumbered(_moved(copy.deepcopy(event), shift))
        if copied.get("name") == last["name"]:
            copied["name"] = f"ProfilerStep#{number + 1}"
        copies.append(copied)
    return {**doc, "traceEvents": [*doc["traceEvents"], *copies]}


def collective_events(
    step_spans: list[Doc], delay_ns: int = 0, device: int = 0, longest_delay_ns: int = 0
) -> list[Doc]:
    """One NCCL all-reduce per step, as a DDP rank would have: a ``cudaLaunchKernel`` 200 µs before
    the step's end on its thread and the kernel on its own stream, with the collective args NCCL
    kernels carry. The kernel starts ``delay_ns`` late (this rank arrives late) and ends when the
    latest rank's (``longest_delay_ns``) has run 150 µs."""
    events: list[Doc] = []
    correlation = 9 * ID_OFFSET
    for step in step_spans:
        launch_at = _ns(step["ts"]) + _ns(step["dur"]) - 200_000
        correlation += 1
        args = {"correlation": correlation, "External id": correlation}
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": step["pid"],
                "tid": step["tid"],
                "ts": _us(launch_at),
                "dur": 5.0,
                "args": {**args, "cbid": 211},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": COLLECTIVE_KERNEL,
                "pid": device,
                "tid": 99,
                "ts": _us(launch_at + 10_000 + delay_ns),
                "dur": _us(longest_delay_ns - delay_ns + 150_000),
                "args": {
                    **args,
                    "device": device,
                    "stream": 99,
                    "Collective name": "allreduce",
                    "In msg nelems": 1 << 20,
                    "Out msg nelems": 1 << 20,
                    "dtype": "Float",
                    "Process Group Name": "0",
                    "Process Group Ranks": "[0]",
                },
            }
        )
    return events


def rank_set(
    source: str | Path,
    out: str | Path,
    ranks: int,
    straggler: int | None = None,
    delay_ns: int = 3_000_000,
) -> list[Path]:
    """``ranks`` traces made from one single-GPU trace, one per rank, with an NCCL all-reduce per
    step; ``straggler`` reaches every all-reduce ``delay_ns`` late. The source's text is kept as it
    is (its size and layout: what loading costs), with ``distributedInfo`` first, as PyTorch writes
    it, and the collectives added at the end of its events. Written as
    ``OUT/rank<N>.<n>.pt.trace.json.gz``."""
    import msgspec

    raw = Path(source).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:  # where the events array lies: its text, found in the file
        events = msgspec.json.decode(raw, type=dict[str, msgspec.Raw]).get("traceEvents")
    except msgspec.MsgspecError as exc:
        raise ValueError(f"{source}: not a trace object ({exc})") from None
    at = -1 if events is None else raw.find(bytes(events))
    if events is None or at < 0:
        raise ValueError(f"{source}: not a trace object (no traceEvents)")
    start, end = at + 1, at + len(events)
    head, body, tail = raw[:start].lstrip(), raw[start : end - 1].rstrip(), raw[end - 1 :]
    if b'"distributedInfo"' in head or not head.startswith(b"{"):
        raise ValueError(f"{source}: already a rank's trace")
    step_spans = steps(read(source))
    late = delay_ns if straggler is not None else 0
    paths = []
    for rank in range(ranks):
        info = {
            "backend": "nccl",
            "rank": rank,
            "world_size": ranks,
            "pg_count": 1,
            "pg_config": [
                {"pg_name": "0", "pg_desc": "default_pg", "pg_size": ranks, "ranks": list(range(ranks))}
            ],
        }
        added = collective_events(step_spans, delay_ns if rank == straggler else 0, 0, late)
        text = b"".join(
            [
                b'{"distributedInfo": ',
                msgspec.json.encode(info),
                b", ",
                head[1:],
                body,
                *(b",\n" + msgspec.json.encode(event) for event in added),
                tail,
            ]
        )
        path = Path(out) / f"rank{rank}.{1_000 + rank}.pt.trace.json.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_gzip.compress(text, 1))
        paths.append(path)
    return paths


def _moved(event: Doc, delta_ns: int) -> Doc:
    if "ts" not in event:
        return event
    return {**event, "ts": _us(_ns(event["ts"]) + delta_ns)}


def _renumbered(event: Doc) -> Doc:
    args = event.get("args")
    if isinstance(args, dict):
        for key in ("correlation", "External id"):
            if isinstance(args.get(key), int):
                args[key] += ID_OFFSET
    if event.get("ph") in ("s", "f", "t") and isinstance(event.get("id"), int):
        event["id"] += ID_OFFSET
    return event


def _ns(value: Any) -> int:
    """µs as written (int, or float with 3 decimals) -> exact integer ns."""
    if isinstance(value, int):
        return value * 1000
    return round(float(value) * 1000)


def _us(ns: int) -> float:
    return ns / 1000


def _main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--straggler", type=int, default=None)
    parser.add_argument("--delay-ms", type=float, default=3.0)
    args = parser.parse_args(argv)
    for path in rank_set(args.source, args.out, args.ranks, args.straggler, round(args.delay_ms * 1e6)):
        print(path)


if __name__ == "__main__":
    _main()
