"""Small traces with ``[memory]`` events, written by the memory tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PID, TID = 100, 100
ALLOCATOR_TID = 999  # a thread with no events: as the caching allocator's own threads
CUDA = (1, 0)
CPU = (0, -1)


def x(cat: str, name: str, ts: float, dur: float, tid: int = TID) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur}


def op(name: str, ts: float, dur: float, tid: int = TID) -> dict[str, Any]:
    return x("cpu_op", name, ts, dur, tid)


def step(number: int, ts: float, dur: float) -> dict[str, Any]:
    return x("user_annotation", f"ProfilerStep#{number}", ts, dur)


def mem(
    ts: float,
    addr: int,
    nbytes: int,
    allocated: int,
    reserved: int = 1 << 30,
    tid: int = TID,
    device: tuple[int, int] = CUDA,
) -> dict[str, Any]:
    """A ``[memory]`` instant as Kineto writes it."""
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "s": "t",
        "name": "[memory]",
        "pid": PID,
        "tid": tid,
        "ts": ts,
        "args": {
            "Total Reserved": reserved,
            "Total Allocated": allocated,
            "Bytes": nbytes,
            "Device Id": device[1],
            "Device Type": device[0],
            "Addr": addr,
        },
    }


class Allocator:
    """Writes memory events whose totals add up: ``alloc``/``free`` return the event."""

    def __init__(self, start: int = 0, device: tuple[int, int] = CUDA, reserved: int = 8 << 20) -> None:
        self.total = start
        self.device = device
        self.reserved = reserved
        self.sizes: dict[int, int] = {}

    def alloc(self, ts: float, addr: int, size: int, tid: int = TID) -> dict[str, Any]:
        self.total += size
        self.sizes[addr] = size
        return mem(ts, addr, size, self.total, self.reserved, tid=tid, device=self.device)

    def free(self, ts: float, addr: int, size: int | None = None, tid: int = TID) -> dict[str, Any]:
        size = self.sizes.pop(addr) if size is None else size
        self.total -= size
        return mem(ts, addr, -size, self.total, self.reserved, tid=tid, device=self.device)


def write(path: Path, events: list[dict[str, Any]]) -> Path:
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": events}
    path.write_text(json.dumps(doc))
    return path


def reuse_trace(path: Path) -> Path:
    """Address 0x1000 allocated, freed and allocated again (the caching allocator's reuse), a
    second block, a block allocated before the trace freed in it, one never freed."""
    a = Allocator(start=4096, reserved=8192)  # 4 KiB allocated before the trace
    events = [
        step(1, 0, 100),
        op("aten::empty", 1, 4),
        a.alloc(2, 0x1000, 1024),
        op("aten::relu", 10, 4),
        a.free(11, 0x1000),
        op("aten::mm", 20, 10),
        a.alloc(21, 0x1000, 1024),  # the same address again, a new block
        a.alloc(22, 0x2000, 2048),
        op("aten::add", 40, 10),
        a.free(41, 0x9000, 4096),  # allocated before the trace
        a.free(42, 0x1000),
        op("aten::ones", 60, 4),
        a.alloc(61, 0x1000, 512),  # never freed
    ]
    return write(path, events)


def allocator_thread_trace(path: Path) -> Path:
    """Allocations on a thread with no events (no enclosing op) beside one inside an op."""
    a = Allocator()
    events = [
        step(1, 0, 100),
        op("aten::mm", 5, 10),
        a.alloc(6, 0x1000, 1000),
        a.alloc(20, 0x2000, 5000, tid=ALLOCATOR_TID),
        a.alloc(21, 0x3000, 3000, tid=ALLOCATOR_TID),
        a.free(30, 0x3000, tid=ALLOCATOR_TID),
        a.free(40, 0x1000),
    ]
    return write(path, events)


def leaking_trace(path: Path, steps: int = 3, leak: bool = True, kept: int = 32 << 20) -> Path:
    """``steps`` profiler steps, each allocating a scratch block and (``leak``) a block of ``kept``
    bytes it keeps."""
    a = Allocator(start=1 << 20)
    events: list[dict[str, Any]] = []
    for n in range(steps):
        t = 100.0 * n
        events += [step(n + 1, t, 90), op("aten::mm", t + 1, 20), a.alloc(t + 2, 0x10000 + n, 4096)]
        if leak:
            events += [op("aten::cat", t + 30, 5), a.alloc(t + 31, 0x20000000 + n * kept, kept)]
        events += [op("aten::relu", t + 50, 5), a.free(t + 51, 0x10000 + n)]
    return write(path, events)
