"""Benchmark: many small ranks, `tracetui summary` side by side with Holistic Trace Analysis.

    python benchmarks/bench_many_ranks.py [--ranks 8,32] [--steps 10] [--runs 3]
        [--hta-python /work/hta-venv/bin/python] [--against /work/main] [--convert] [--dir DIR]

Each rank set is made once by ``benchmarks/many_ranks.py`` (the bundled 4-rank gloo set replicated,
each rank with ``--steps`` steps: 10 steps are ~0.2 MB of gzip a rank; rank 5 arrives 20 ms late).
For each set, in turns (one run of each command, then the next round, so a busy machine weighs on
all alike): tracetui's ``summary DIR`` cold (an empty cache folder: every rank decoded) and warm
(the next run on that cache), the tracetui of ``--against`` (another checkout, e.g. the tree
before a change: its ``PYTHONPATH``) cold, HTA's ``TraceAnalysis(trace_dir=DIR)`` (its load: every
rank parsed), and with ``--convert`` ``tracetui convert DIR`` cold. Each command is a fresh
process; wall time, CPU time (user + system of the command and every worker it waited for) and
the peak RSS of the whole process tree (sampled every 20 ms from /proc, summed) are reported as
medians (peak: the highest), with the load average.
Goals (issue 38, 2 cores): 8 and 32 ranks cold ≥ 3× faster than HTA, warm ≤ 0.5 s; 1,024 ranks
cold ≤ 60 s and ≤ 1.5 GB peak; convert ≤ 1.5× a cold summary.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import bench_ranks
import many_ranks
from installed import compile_tracetui

HTA_SNIPPET = "import sys; from hta.trace_analysis import TraceAnalysis; TraceAnalysis(trace_dir=sys.argv[1])"
HTA = "HTA TraceAnalysis (load)"
DEFAULT_DIR = Path("/work/tmp/many-ranks")
ROOT = Path(__file__).resolve().parents[1]
Sample = tuple[float, float, float]  # wall s, CPU s, peak RSS MB


def run(cmd: list[str], env: dict[str, str], cwd: Path) -> Sample:
    """Wall seconds, CPU seconds and peak RSS (MB) of the process tree of one command, in ``cwd``."""
    wall, peak, cpu = bench_ranks.run(cmd, env, cwd)
    return wall, cpu, peak


def rank_set(root: Path, ranks: int, steps: int) -> Path:
    folder = root / f"gloo-{ranks}x{steps}"
    if len(list(folder.glob("rank*.pt.trace.json.gz"))) != ranks:
        shutil.rmtree(folder, ignore_errors=True)
        print(f"making {ranks} ranks in {folder} …", flush=True)
        many_ranks.make(folder, ranks, "gloo", steps, straggler=5 if ranks > 5 else None)
    return folder


def measure(folder: Path, args: argparse.Namespace, base: dict[str, str]) -> dict[str, list[Sample]]:
    tracetui = [sys.executable, "-m", "tracetui"]
    samples: dict[str, list[Sample]] = {}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="tracetui-bench-", dir=args.dir) as scratch:
            cache = Path(scratch) / "cache"
            env = {**base, "TRACETUI_CACHE_DIR": str(cache)}
            turns: list[tuple[str, list[str], dict[str, str]]] = [
                ("tracetui summary, cold", [*tracetui, "summary", str(folder)], env),
                ("tracetui summary, warm", [*tracetui, "summary", str(folder)], env),
            ]
            if args.against:
                other = {**base, "PYTHONPATH": str(args.against), "TRACETUI_CACHE_DIR": str(cache) + "-b"}
                turns.append((f"  before ({args.against}), cold", [*tracetui, "summary", str(folder)], other))
            if args.convert:
                out = Path(scratch) / "dataset"
                conv = {**env, "TRACETUI_CACHE_DIR": str(cache) + "-c"}
                convert = [*tracetui, "convert", str(folder), "-o", str(out)]
                turns.append(("tracetui convert, cold", convert, conv))
            if args.hta_python:
                hta = [args.hta_python, "-c", HTA_SNIPPET, str(folder)]
                turns.append((HTA, hta, base))
            for label, cmd, run_env in turns:
                samples.setdefault(label, []).append(run(cmd, run_env, Path(scratch)))
    return samples


def report(samples: dict[str, list[Sample]]) -> dict[str, float]:
    medians = {}
    for label, runs in samples.items():
        wall = statistics.median(s[0] for s in runs)
        cpu = statistics.median(s[1] for s in runs)
        peak = max(s[2] for s in runs)
        medians[label] = wall
        spread = ", ".join(f"{s[0]:.2f}" for s in runs)
        print(f"  {label:<34} {wall:6.2f} s wall (runs {spread}), CPU {cpu:6.2f} s, peak RSS {peak:5.0f} MB")
    return medians


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--ranks", default="8,32", help="comma-separated rank counts")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--hta-python", help="a Python with holistictraceanalysis installed")
    parser.add_argument("--against", type=Path, help="another checkout to run cold in the same turns")
    parser.add_argument("--convert", action="store_true", help="also time convert, cold")
    args = parser.parse_args()
    compile_tracetui()
    args.dir.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k not in ("TRACETUI_NO_CACHE", "TRACETUI_WORKERS")}
    base["PYTHONPATH"] = str(ROOT)
    cpus = len(os.sched_getaffinity(0))
    for ranks in (int(n) for n in args.ranks.split(",")):
        folder = rank_set(args.dir, ranks, args.steps)
        size = sum(p.stat().st_size for p in folder.glob("*.gz")) / 1e6
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"\n{ranks} ranks, {size:.1f} MB gzip ({size / ranks:.2f} MB a rank); {cpus} CPUs; load {load}")
        medians = report(measure(folder, args, base))
        print(f"  load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        cold = medians["tracetui summary, cold"]
        if HTA in medians:
            print(f"  cold summary is {medians[HTA] / cold:.1f}x faster than HTA's load")
        if "tracetui convert, cold" in medians:
            print(f"  convert is {medians['tracetui convert, cold'] / cold:.2f}x a cold summary")


if __name__ == "__main__":
    main()
