"""Benchmark: the load on N cores. ``tracetui summary`` cold (trace cache off) of each trace with the
process held to its first N cores (``sched_setaffinity``, inherited by the child: its scanners and
polars' threads see N cores) and ``TRACETUI_WORKERS=N``, for each N; and the one-scanner floor
(inflate + scan) once. Wall and CPU seconds (user + sys) and peak RSS from ``os.wait4``, medians of
``--runs``, the core counts taking turns run by run; the speed-up is against N = 1.

    python benchmarks/bench_cores.py TRACE [TRACE ...] [--cores 1,2,4,8,16] [--runs 3]

``benchmarks/floor_device.sh`` builds the scanner and the inputs and runs this on a machine of many
cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from bench_scale import ALLOCATOR, FLOOR_CHILD, LAST, json_size, run_measured
from installed import compile_tracetui

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("traces", type=Path, nargs="+")
    parser.add_argument("--cores", default="1,2,4,8,16")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    compile_tracetui()
    mine = sorted(os.sched_getaffinity(0))
    counts = [n for n in (int(c) for c in args.cores.split(",")) if n <= len(mine)]
    env = dict(os.environ, TRACETUI_NO_CACHE="1", PYTHONPATH=str(HERE.parent), **ALLOCATOR)
    env.pop("TRACETUI_CACHE_DIR", None)
    print(f"{len(mine)} cores here, load average {os.getloadavg()[0]:.1f}; {args.runs} runs each, medians")
    print("\n| trace | cores | summary cold | CPU | peak RSS | speed-up |")
    print("| --- | --- | --- | --- | --- | --- |")
    for trace in (t.resolve() for t in args.traces):
        json_bytes, events = json_size(trace)
        label = f"{trace.name} ({json_bytes / 1e9:.2f} GB, {events / 1e6:.2f}M)"
        runs: dict[int, list[tuple[float, float, float]]] = {n: [] for n in counts}
        try:
            for _ in range(args.runs):
                for n in counts:
                    os.sched_setaffinity(0, mine[:n])
                    cmd = [sys.executable, "-m", "tracetui", "summary", str(trace)]
                    wall, rss, _ = run_measured(cmd, dict(env, TRACETUI_WORKERS=str(n)))
                    runs[n].append((wall, LAST["cpu"], rss))
        finally:
            os.sched_setaffinity(0, mine)
        alone = statistics.median(r[0] for r in runs[counts[0]])
        for n in counts:
            wall = statistics.median(r[0] for r in runs[n])
            cpu = statistics.median(r[1] for r in runs[n])
            rss = max(r[2] for r in runs[n])
            row = f"| {label} | {n} | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MB | {alone / wall:.2f}x |"
            print(row, flush=True)
        _, _, out = run_measured([sys.executable, "-c", FLOOR_CHILD, "scan", str(trace)], env)
        print(f"| {label} | floor: inflate + one scanner | {float(out):.2f} s | | | |", flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
