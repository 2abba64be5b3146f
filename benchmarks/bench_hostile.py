"""Benchmark: hostile and careless inputs load in bounded time and memory (issue 12).

    python benchmarks/bench_hostile.py duplicates [--calls N] [--limit-gb G] [--tracetui DIR]
    python benchmarks/bench_hostile.py nan [TRACE] [--tracetui DIR]

``duplicates``: N runtime calls that share one correlation id, each with its kernel (also of
that id): a join on the correlation id pairs every call with every kernel (N² rows). The file is
8 MB for N = 20,000. ``nan``: the trace re-saved as Python's ``json.dump`` writes it (one line)
with one NaN in a kernel's ``dur``: every event must load; the same file without the NaN is
loaded first, as the floor.

Each load runs in a fresh process (the trace cache off) whose wall time and peak RSS are
reported; the process is killed when its RSS passes ``--limit-gb`` (default 8), as the machine
would. ``--tracetui DIR`` loads with the tracetui package found in DIR (e.g. a checkout of
``main``), to measure before and after side by side. Files are written under ``$TMPDIR``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from headline_trace import HEADLINE as DEFAULT_TRACE
from headline_trace import need

CHILD = """
import sys, time, tracetui
start = time.perf_counter()
trace = tracetui.load(sys.argv[1])
work = trace.gpu
print(f"{time.perf_counter() - start:.2f} {trace.event_count} {work.height} {trace.orphans.height} "
      f"{trace.anomalies.height} {'; '.join(trace.repairs) or '-'}")
"""


def duplicates(path: Path, calls: int) -> None:
    """``calls`` cudaLaunchKernel calls with correlation 1, each followed by its kernel."""
    events = []
    for i in range(calls):
        ts = 10.0 * i
        events.append(
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": ts, "dur": 2.0, "args": {"correlation": 1, "External id": i}}
        )  # fmt: skip
        events.append(
            {"ph": "X", "cat": "kernel", "name": f"kernel_{i % 7}", "pid": 0, "tid": 7,
             "ts": ts + 3.0, "dur": 4.0, "args": {"correlation": 1, "device": 0, "stream": 7}}
        )  # fmt: skip
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))


def nan_trace(path: Path, source: Path, clean: Path) -> None:
    """``source`` as ``json.dump`` writes it, with one NaN (``path``) and without (``clean``)."""
    doc = json.loads(gzip.decompress(source.read_bytes()))
    with clean.open("w") as handle:
        json.dump(doc, handle)
    events = doc["traceEvents"]
    kernel = next(e for e in events[len(events) // 2 :] if e.get("cat") == "kernel")
    kernel["dur"] = float("nan")
    with path.open("w") as handle:
        json.dump(doc, handle)


def measure(path: Path, package: Path | None, limit_gb: float) -> str:
    env = dict(os.environ, TRACETUI_NO_CACHE="1")
    if package is not None:
        env["PYTHONPATH"] = str(package)
    child = subprocess.Popen(
        [sys.executable, "-P", "-c", CHILD, str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    peak = 0
    start = time.perf_counter()
    while child.poll() is None:
        peak = max(peak, _rss(child.pid))
        if peak > limit_gb * 2**30:
            child.kill()
            child.wait()
            return f"killed at {peak / 2**30:.1f} GB RSS after {time.perf_counter() - start:.1f} s"
        time.sleep(0.02)
    out, err = child.communicate()
    if child.returncode:
        return f"exit {child.returncode}: {err.decode().strip().splitlines()[-1:]}"
    seconds, events, gpu, orphans, anomalies, repairs = out.decode().split(" ", 5)
    return (
        f"{float(seconds):.2f} s load, peak RSS {peak / 2**20:,.0f} MB; {int(events):,} events, "
        f"{int(gpu):,} GPU, {int(orphans):,} orphans, {int(anomalies):,} anomalies; "
        f"repairs: {repairs.strip()}"
    )


def _rss(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((line for line in status.splitlines() if line.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1]) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("case", choices=["duplicates", "nan"])
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--limit-gb", type=float, default=8.0)
    parser.add_argument("--tracetui", type=Path, help="load with the tracetui package in this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{args.case}.json"
        if args.case == "duplicates":
            duplicates(path, args.calls)
        else:
            clean = Path(tmp) / "clean.json"
            nan_trace(path, need(args.trace), clean)
            print(f"the same file without the NaN ({clean.stat().st_size / 1e6:.1f} MB), for reference:")
            print(measure(clean, args.tracetui, args.limit_gb))
        print(f"{args.case}: {path.stat().st_size / 1e6:.1f} MB file")
        print(measure(path, args.tracetui, args.limit_gb))


if __name__ == "__main__":
    main()
