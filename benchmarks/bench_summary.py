"""Benchmark: `tracetui summary` end to end vs Holistic Trace Analysis, side by side.

    python benchmarks/bench_summary.py [TRACE] [--hta-python PATH] [--runs N]

Each run is a fresh process (interpreter start to exit); wall time and peak RSS come from
``os.wait4``. tracetui runs cold (trace cache off: decode everything) and warm (from its
trace cache, primed by one run, in a private directory). HTA (PyPI ``holistictraceanalysis``)
is run as ``TraceAnalysis(trace_dir=...)`` on a directory holding only TRACE, with the Python
given by ``--hta-python`` (install it in its own venv: it pins pandas/numpy versions).
tracetui is byte-compiled first, as an installed package is. Goal (issue 2): tracetui >= 10x
faster, < 600 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from headline_trace import HEADLINE as DEFAULT_TRACE
from headline_trace import need
from installed import compile_tracetui

HTA_SNIPPET = "import sys; from hta.trace_analysis import TraceAnalysis; TraceAnalysis(trace_dir=sys.argv[1])"


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def measure(
    label: str, cmd: list[str], runs: int, env: dict[str, str] | None = None
) -> tuple[str, float, float]:
    samples = [run(cmd, env) for _ in range(runs)]
    wall = statistics.median(s[0] for s in samples)
    rss = max(s[1] for s in samples)
    spread = ", ".join(f"{s[0]:.2f}" for s in samples)
    print(f"{label:<28} median {wall:6.2f} s  (runs: {spread})  peak RSS {rss:6.0f} MB", flush=True)
    return label, wall, rss


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--hta-python", help="a Python with holistictraceanalysis installed")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    trace = need(args.trace).resolve()
    compile_tracetui()
    size = trace.stat().st_size / 2**20
    print(f"trace: {trace.name} ({size:.1f} MB on disk); {os.cpu_count()} CPUs; {args.runs} runs each\n")
    summary = [sys.executable, "-m", "tracetui", "summary", str(trace)]
    cold_env = {**os.environ, "TRACETUI_NO_CACHE": "1"}
    tracetui = measure("tracetui summary (cold)", summary, args.runs, cold_env)
    measure("tracetui summary --json (cold)", [*summary, "--json"], args.runs, cold_env)
    with tempfile.TemporaryDirectory() as cache_dir:
        warm_env = {k: v for k, v in os.environ.items() if k != "TRACETUI_NO_CACHE"}
        warm_env["TRACETUI_CACHE_DIR"] = cache_dir
        run(summary, warm_env)  # primes the cache
        warm = measure("tracetui summary (warm cache)", summary, args.runs, warm_env)
    if not args.hta_python:
        print("\nHTA not run: pass --hta-python (a venv with `pip install holistictraceanalysis`).")
        return
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(trace, Path(tmp) / trace.name)
        hta = measure("HTA TraceAnalysis", [args.hta_python, "-c", HTA_SNIPPET, tmp], args.runs)
    for label, result in (("cold", tracetui), ("warm", warm)):
        ratio = hta[1] / result[1]
        verdict = "met" if ratio >= 10 and result[2] < 600 else "NOT met"
        print(
            f"\n{label}: tracetui summary is {ratio:.1f}x faster than HTA; peak RSS {result[2]:.0f} MB vs "
            f"{hta[2]:.0f} MB; goal (>= 10x, < 600 MB) {verdict}",
            end="",
        )
    print()


if __name__ == "__main__":
    main()
