"""GPU timing helpers for the benchmark: CUDA-graph and event timings, copy bandwidth, kernels off a trace."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
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


class GraphTimer:
    """``calls`` calls of ``fn`` captured once in a CUDA graph; each replay times them together.

    Replaying a graph removes the CPU's launch overhead, so a sample is the GPU's own time per
    call (kernels back to back). ``fn`` is warmed up on a side stream first, as capture requires.
    """

    def __init__(self, fn: Callable[[], object], *, calls: int = 20) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        self.calls = calls
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for _ in range(calls):
                fn()
        self.graph.replay()
        torch.cuda.synchronize()

    def sample(self, reps: int = 5) -> list[float]:
        """``reps`` timed replays, in µs per call."""
        times = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            self.graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / self.calls)
        return times


def interleaved_us(
    fns: dict[str, Callable[[], object]], *, calls: int = 20, rounds: int = 7
) -> dict[str, float]:
    """Median µs per call of each ``fn``, graph-timed in turns so that clock drift hits all alike."""
    timers = {name: GraphTimer(fn, calls=calls) for name, fn in fns.items()}
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, timer in timers.items():
            samples[name] += timer.sample()
    return {name: statistics.median(times) for name, times in samples.items()}


def warm_up_gpu(seconds: float = 1.0) -> None:
    """Keep the GPU busy for ``seconds`` (1 GiB copies) so its clocks are up before anything is timed."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(20):
            dst.copy_(src)
        torch.cuda.synchronize()


def copy_bandwidth_gbps(sizes: list[int]) -> dict[int, float]:
    """Device-to-device copy bandwidth in GB/s (bytes read plus bytes written) for each buffer size.

    Timed with ``do_bench`` (stream launches), not graph replay: inside a CUDA graph a large copy
    can become a copy-engine memcpy node, which is slower than the SM copy a stream launch gets.
    """
    result = {}
    for n_bytes in sizes:
        src = torch.randint(0, 256, (n_bytes,), dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        result[n_bytes] = 2 * n_bytes / median_us(partial(dst.copy_, src)) / 1e3
    return result


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
