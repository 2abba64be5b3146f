"""Benchmark: `tracetui summary DIR` of a distributed run, cold and warm, and the cost of a rank.

    python benchmarks/bench_ranks.py [--ranks 8] [--runs 3] [--dir /work/tmp/ranks/bench8]

The rank set is made once (if DIR does not hold it) from one real single-GPU trace with
``python -m tests.ranks.synthetic`` (default: ../shared/traces/transformer_train_long.json.gz,
90 MB of JSON, 265k events; each rank gets an NCCL all-reduce per step, rank 3 arrives 3 ms late).
Each run is a fresh process; *cold* starts with an empty cache directory (every rank decoded, its
trace cache entry written), *warm* is the next run on the same cache (the ranks' small tables
and the first rank's summary read from the derived cache). Peak RSS is that of the whole process
tree (the command and its worker processes, summed), sampled every 20 ms from /proc; CPU is the
user + system time of the command and its workers (what a busy machine cannot inflate). Then cold
runs on the first 2, 4, … ranks give the cost of each added rank (least squares).
Goals (issue 18, 8 ranks × 90 MB, 2 cores): cold ≤ 8 s, warm ≤ 2 s, peak RSS ≤ 2 GB.
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

from headline_trace import HEADLINE as SOURCE
from headline_trace import need
from installed import compile_tracetui

sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the checkout's root: its tests' fixtures
from tests.ranks.synthetic import rank_set

DEFAULT_DIR = Path("/work/tmp/ranks/bench8")


def tree_rss_kb(root: int) -> int:
    """Resident memory (KB) of ``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields.get("PPid", "0").strip() or 0), []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0] or 0)
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack += children.get(pid, [])
    return total


def run(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) of the process tree, and CPU seconds (user + system, the command
    and the workers it waited for) of one command (run in ``cwd``: in a checkout, ``python -m``
    imports that checkout whatever ``PYTHONPATH`` says)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    peak = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, tree_rss_kb(proc.pid))
        time.sleep(0.02)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
    return wall, peak / 1024, usage.ru_utime + usage.ru_stime


def summary_cmd(files: list[Path]) -> list[str]:
    return [sys.executable, "-m", "tracetui", "summary", *map(str, files)]


def cold_and_warm(files: list[Path], runs: int, base: dict[str, str]) -> tuple[list, list]:  # type: ignore[type-arg]
    cold, warm = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="tracetui-bench-", dir="/work/tmp") as cache:
            env = {**base, "TRACETUI_CACHE_DIR": cache}
            cold.append(run(summary_cmd(files), env))
            warm.append(run(summary_cmd(files), env))
    return cold, warm


def show(label: str, samples: list[tuple[float, float, float]], goal_s: float) -> None:
    wall = statistics.median(s[0] for s in samples)
    rss = max(s[1] for s in samples)
    cpu = statistics.median(s[2] for s in samples)
    spread = ", ".join(f"{s[0]:.2f}" for s in samples)
    met = "met" if wall <= goal_s and rss <= 2048 else "NOT met"
    print(
        f"{label:<24} median {wall:5.2f} s (runs: {spread}), CPU {cpu:5.2f} s, peak RSS {rss:5.0f} MB", end=""
    )
    print(f"   goal ≤ {goal_s} s, ≤ 2 GB: {met} (fastest run {min(s[0] for s in samples):.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--keep", action="store_true", help="keep the rank set afterwards")
    args = parser.parse_args()
    compile_tracetui()
    files = sorted(args.dir.glob("rank*.pt.trace.json.gz"), key=lambda p: int(p.name[4:].split(".")[0]))
    if len(files) != args.ranks:
        shutil.rmtree(args.dir, ignore_errors=True)
        print(f"making {args.ranks} ranks from {args.source.name} in {args.dir} …", flush=True)
        files = rank_set(need(args.source), args.dir, args.ranks, straggler=min(3, args.ranks - 1))
    size = sum(p.stat().st_size for p in files) / 2**20
    cpus = len(os.sched_getaffinity(0))
    print(f"{len(files)} ranks, {size:.0f} MB gzip on disk; {cpus} CPUs; {args.runs} runs\n")
    base = {k: v for k, v in os.environ.items() if k != "TRACETUI_NO_CACHE"}
    cold, warm = cold_and_warm(files, args.runs, base)
    show(f"summary, {len(files)} ranks, cold", cold, 8.0)
    show(f"summary, {len(files)} ranks, warm", warm, 2.0)
    counts = sorted({n for n in (2, len(files) // 2, len(files)) if 2 <= n <= len(files)})
    points = [
        (n, statistics.median(s[0] for s in cold_and_warm(files[:n], args.runs, base)[0])) for n in counts
    ]
    mean_n = statistics.mean(n for n, _ in points)
    mean_t = statistics.mean(t for _, t in points)
    slope = sum((n - mean_n) * (t - mean_t) for n, t in points) / sum((n - mean_n) ** 2 for n, _ in points)
    print("\ncold, by number of ranks: " + ", ".join(f"{n} ranks {t:.2f} s" for n, t in points))
    print(f"cost of an added rank (cold): {slope:.2f} s; fixed part {mean_t - slope * mean_n:.2f} s")
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
