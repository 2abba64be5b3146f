"""Benchmark: what the "why" analyses (issue 39: critical paths, idle time, launch statistics, the
advice) cost after the load, on a big trace (goal at 1 GB: <= 1 s of CPU, <= 100 MB of peak).

    python benchmarks/bench_why_cost.py TRACE [--runs 3] [--annotations] [--no-why] [--against TREE]

Each run is a fresh process (the tracetui of ``PYTHONPATH``, else this checkout's), its allocator
set as the CLI sets it: the trace is loaded (cache off) and the readings ``summary`` makes before
the why are made (as ``summary_data`` does: memory, steps and annotations, rooflines, kernel
names, distributions, compile overheads), then what ``summary`` computes for the why (``step_why``
and ``advice_records``; with ``--annotations`` also ``annotation_why``, the median call of each
annotation) is timed alone: CPU seconds (user + sys of the process, every thread) and wall seconds,
the peak resident memory above the resident memory before it (sampled every 2 ms), each stage's
own figure too, what stays resident after it (``kept_mb``), the page faults it took (thousands:
a figure of the memory it touched afresh, which load does not sway), and the process's peak RSS
(``process_peak_mb``: with ``--no-why``, without the why, the figure to compare it with). The
1 GB input::

    python benchmarks/make_big_trace.py ../shared/traces/transformer_train_long.json.gz 1g.json --size 1G
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracetui.trace import Trace

HERE = Path(__file__).resolve().parent


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Peak:
    """The highest resident memory while it runs (a thread sampling /proc every 2 ms)."""

    def __enter__(self) -> Peak:
        self.base = self.high = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self.high = max(self.high, _rss())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.high = max(self.high, _rss())


def before_why(loaded: Trace) -> None:
    """The readings ``summary_data`` makes before the why (some of which the why reuses)."""
    from tracetui.insight.compile_names import compile_overheads
    from tracetui.insight.distributions import distribution_record, step_distribution
    from tracetui.insight.gpu_work import gpu_work_union_us, span_us
    from tracetui.insight.kernels import decoded_kernels, kernel_rooflines
    from tracetui.insight.memory import memory_of
    from tracetui.insight.memory_data import memory_data
    from tracetui.insight.spans import span_readings

    memory_data(memory_of(loaded), loaded.t0_ns)
    span_readings(loaded)
    kernel_rooflines(loaded)
    decoded_kernels(loaded)
    distribution_record(step_distribution(loaded.steps), loaded)
    span_us(loaded), gpu_work_union_us(loaded)
    compile_overheads(loaded)


def child(trace: Path, annotations: bool, why: bool) -> dict[str, float]:
    os.environ["TRACETUI_NO_CACHE"] = "1"
    from tracetui.trace.allocator import hand_back_at_once

    hand_back_at_once()  # as the CLI does before polars starts (the load then sets its budget)
    import tracetui
    from tracetui.insight.critical_path import step_paths
    from tracetui.insight.idle import step_idle, step_launches, stream_idle
    from tracetui.insight.why_data import advice_records, annotation_why, step_why

    loaded = tracetui.load(trace)
    before_why(loaded)
    stages = [
        ("step paths", lambda: step_paths(loaded)),
        ("idle and launches", lambda: (step_idle(loaded), stream_idle(loaded), step_launches(loaded))),
        ("step_why records", lambda: step_why(loaded)),
        ("advice", lambda: advice_records(loaded)),
    ]
    if annotations:
        stages.append(("annotation_why", lambda: annotation_why(loaded)))
    if not why:
        stages = []
    out: dict[str, float] = {}
    faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with Peak() as whole:
        for name, stage in stages:
            cpu = time.process_time()
            with Peak() as peak:
                stage()
            out[f"{name} cpu_s"] = time.process_time() - cpu
            out[f"{name} peak_mb"] = (peak.high - peak.base) / 1e6
    out["total cpu_s"] = time.process_time() - cpu0
    out["total wall_s"] = time.perf_counter() - wall0
    out["total peak_mb"] = (whole.high - whole.base) / 1e6
    out["page_faults_k"] = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0) / 1e3
    out["kept_mb"] = (_rss() - whole.base) / 1e6
    out["process_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trace", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--annotations", action="store_true")
    parser.add_argument("--no-why", action="store_true", help="only the load and the readings before")
    parser.add_argument("--against", type=Path, help="another checkout, run taking turns with this one")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.trace, args.annotations, not args.no_why)))
        return
    trees = {"this": os.environ["PYTHONPATH"]} | ({"against": str(args.against)} if args.against else {})
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    loads = []
    for _ in range(args.runs):
        for label, tree in trees.items():  # taking turns
            command = [sys.executable, __file__, str(args.trace), "--child"]
            command += ["--annotations"] * args.annotations + ["--no-why"] * args.no_why
            env = os.environ | {"PYTHONPATH": tree}
            done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
            runs[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
    print(
        f"{args.trace.name}: {args.runs} runs each, load average {min(loads):.1f}-{max(loads):.1f}; "
        + ", ".join(f"{label} = {tree}" for label, tree in trees.items())
    )
    print(f"  {'median (runs)':<28}" + "".join(f"{label:>34}" for label in trees))
    for key in runs["this"][0]:
        cells = []
        for label in trees:
            values = [r[key] for r in runs[label]]
            spread = " ".join(f"{v:.2f}" for v in values)
            cells.append(f"{statistics.median(values):8.2f} ({spread})")
        print(f"  {key:<28}" + "".join(f"{c:>34}" for c in cells))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(HERE.parent))
    sys.path.insert(0, os.environ["PYTHONPATH"].split(os.pathsep)[0])
    main()
