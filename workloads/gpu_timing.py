"""GPU timing helpers for the benchmark: event-timed medians, copy bandwidth, kernels read off a trace."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import triton.testing
from torch.profiler import ProfilerActivity, profile

# Chrome-trace categories of work that runs on the GPU (gpu_user_annotation spans are not work).
GPU_CATS = frozenset({"kernel", "gpu_memset", "gpu_memcpy"})


@dataclass(frozen=True)
class GpuEvent:
    """One kernel, memset or memcpy from a trace: category, name, duration in µs."""

    cat: str
    name: str
    dur_us: float


def median_us(fn: Callable[[], object], *, warmup_ms: int = 50, rep_ms: int = 300) -> float:
    """Median time of ``fn`` in µs with CUDA events (``triton.testing.do_bench``, L2 flushed per call)."""
    return float(triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median")) * 1e3


def copy_bandwidth_gbps(n_bytes: int) -> float:
    """Device-to-device copy bandwidth in GB/s, counting bytes read plus bytes written."""
    src = torch.randint(0, 256, (n_bytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    us = median_us(lambda: dst.copy_(src))
    return 2 * n_bytes / us / 1e3


def gpu_events(fn: Callable[[], object], iters: int) -> list[GpuEvent]:
    """Run ``fn`` ``iters`` times under the profiler; the GPU work it did, read off the Chrome trace."""
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    return [
        GpuEvent(e["cat"], e["name"], float(e["dur"]))
        for e in events
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS
    ]


def kernel_median_us(events: list[GpuEvent], prefix: str) -> tuple[str, float]:
    """Name and median duration (µs) of the kernels whose name starts with ``prefix``."""
    picked = sorted(
        (e for e in events if e.cat == "kernel" and e.name.startswith(prefix)), key=lambda e: e.dur_us
    )
    if not picked:
        raise LookupError(f"no kernel named {prefix}* in {sorted({e.name for e in events})}")
    return picked[0].name, picked[len(picked) // 2].dur_us
