"""Benchmark: hostile and careless inputs load in bounded time and memory (issue 12).

    python benchmarks/bench_hostile.py duplicates [--calls N] [--limit-gb G] [--tracetui DIR]
    python benchmarks/bench_hostile.py nan [TRACE] [--tracetui DIR]
    python benchmarks/bench_hostile.py long [--field F] [--mb N] [--cap-kb K] [--gzip] [--tracetui DIR]

``duplicates``: N runtime calls that share one correlation id, each with its kernel (also of
that id): a join on the correlation id pairs every call with every kernel (N² rows). The file is
8 MB for N = 20,000. ``nan``: the trace re-saved as Python's ``json.dump`` writes it (one line)
with one NaN in a kernel's ``dur``: every event must load; the same file without the NaN is
loaded first, as the floor. ``long``: three events, one of them with an N MB (default 300) value
in ``--field``: ``name``, ``cat``, ``thread`` (a thread_name event's name), ``args`` (an args
value), ``escaped`` (a name written as ``\u00e9`` escapes), ``top`` (a top-level key's value);
``tracetui summary`` runs on it under an address-space cap of ``--cap-kb`` KB (default 2,500,000:
``ulimit -v 2500000``): its exit status and the last line of its stderr are reported.

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
import resource
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


def long_value(path: Path, field: str, megabytes: int, gzipped: bool) -> None:
    """Three events, one with a ``megabytes`` MB value in ``field``, written in 1 MB pieces."""
    piece = (r"\u00e9" * ((1 << 20) // 6) if field == "escaped" else "k" * (1 << 20)).encode()  # ~1 MB
    odd = '{"ph":"X","cat":"cpu_op","name":"aten::odd","pid":1,"tid":1,"ts":2.0,"dur":1.0'
    head = {
        "name": '{"ph":"X","cat":"cpu_op","pid":1,"tid":1,"ts":2.0,"dur":1.0,"name":"',
        "escaped": '{"ph":"X","cat":"cpu_op","pid":1,"tid":1,"ts":2.0,"dur":1.0,"name":"',
        "cat": '{"ph":"X","name":"aten::odd","pid":1,"tid":1,"ts":2.0,"dur":1.0,"cat":"',
        "thread": '{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"',
        "args": odd + ',"args":{"v":"',
        "top": odd + "}",
    }[field]
    tail = "" if field == "top" else '"}}' if field in ("thread", "args") else '"}'
    first = '{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1.0,"dur":5.0}'
    last = '{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":10.0,"dur":2.0}'
    opener = gzip.open if gzipped else open
    with opener(path, "wb") as handle:  # type: ignore[operator]
        handle.write(f'{{"schemaVersion":1,"traceEvents":[{first},\n{head}'.encode())
        if field != "top":
            for _ in range(megabytes):
                handle.write(piece)
        handle.write(f"{tail},\n{last}]".encode())
        if field == "top":
            handle.write(b',"hostile":"')
            for _ in range(megabytes):
                handle.write(piece)
            handle.write(b'"')
        handle.write(b"}\n")


def measure_summary(path: Path, package: Path | None, limit_gb: float, cap_kb: int) -> str:
    """``tracetui summary`` of ``path`` under an address-space cap: wall, peak RSS, status."""
    cap = cap_kb << 10
    env = dict(os.environ, TRACETUI_NO_CACHE="1", COLUMNS="200")
    if package is not None:
        env["PYTHONPATH"] = str(package)

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    child = subprocess.Popen(
        [sys.executable, "-P", "-m", "tracetui", "summary", str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=capped,
    )
    peak, start = _watch(child, limit_gb, HANG_S)
    out, err = child.communicate()
    wall = time.perf_counter() - start
    if wall >= HANG_S:
        return f"hung: killed after {wall:.0f} s, peak RSS {peak / 2**20:,.0f} MB"
    lines = err.decode(errors="replace").strip().splitlines()
    said = [line for line in lines if line.strip()]
    found = [line for line in out.decode(errors="replace").splitlines() if "Anomalies" in line]
    return (
        f"exit {child.returncode} in {wall:.1f} s, peak RSS {peak / 2**20:,.0f} MB; "
        f"stderr {len(said)} lines{': ' + said[-1][:160] if said else ''}; "
        f"{found[0].strip()[:80] if found else 'no summary'}"
    )


HANG_S = 180.0  # a summary still running after this long is killed (a thread's MemoryError: a hang)


def _watch(child: subprocess.Popen[bytes], limit_gb: float, hang_s: float) -> tuple[int, float]:
    """Poll the child's peak RSS until it ends (killed past ``limit_gb`` or ``hang_s``)."""
    peak = 0
    start = time.perf_counter()
    while child.poll() is None:
        peak = max(peak, _rss(child.pid))
        if peak > limit_gb * 2**30 or time.perf_counter() - start > hang_s:
            child.kill()
            child.wait()
            break
        time.sleep(0.02)
    return peak, start


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
    parser.add_argument("case", choices=["duplicates", "nan", "long"])
    parser.add_argument(
        "--field", choices=["name", "cat", "thread", "args", "escaped", "top"], default="name"
    )
    parser.add_argument("--mb", type=int, default=300, help="the long value's size (MB)")
    parser.add_argument("--cap-kb", type=int, default=2_500_000, help="address-space cap, KB (long)")
    parser.add_argument("--gzip", action="store_true", help="write the long case gzip'd")
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--limit-gb", type=float, default=8.0)
    parser.add_argument("--tracetui", type=Path, help="load with the tracetui package in this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{args.case}.json"
        if args.case == "long":
            path = path.with_name(f"long_{args.field}.json" + (".gz" if args.gzip else ""))
            long_value(path, args.field, args.mb, args.gzip)
            print(f"long {args.field}: {args.mb} MB value, {path.stat().st_size / 1e6:.1f} MB file")
            print(measure_summary(path, args.tracetui, args.limit_gb, args.cap_kb))
            return
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
