"""Benchmark: reopening a trace from tracetui's cache — the entry's size, and the time and memory to
`tracetui summary` and to the explorer's tree on a reopen.

    python benchmarks/bench_cache.py [TRACE] [--runs N] [--against SOURCE_TREE]

The cache is private (a temporary folder), primed by one ``tracetui summary``
(which writes the entry and keeps the summary with it) and one headless open. Then fresh processes,
the two kinds taking turns: ``tracetui summary TRACE`` (wall time and peak RSS from ``os.wait4``)
and a headless ``tracetui open`` (as ``bench_app.py``: 160×50, start-up to the first frame that
shows tree rows; its RSS then, and its peak). Also: how long opening the entry takes in-process
(every table file's CRC checked, no table read) and reading every table. Medians of ``--runs``,
with the load average before and after (this machine is shared: run it when ``uptime`` is low).
Goals (issue 13, 1 GB of JSON): reopen to the tree and ``summary`` ≤ 1.0 s with RSS ≤ 0.3× the
JSON; entry ≤ 0.35× the JSON. ``--against`` measures another checkout too (e.g. ``git archive main``
unpacked, with the scanner's built extension copied in), the two taking turns with their own caches.
tracetui is byte-compiled first, as an installed package is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from headline_trace import HEADLINE as DEFAULT_TRACE
from headline_trace import need
from installed import compile_tracetui

MB = 1 << 20


def _status(key: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(key):
                return int(line.split()[1]) << 10
    return 0


async def _child(trace: Path) -> dict[str, Any]:
    """Runs in the spawned process: like ``tracetui open``, up to the first frame with tree rows."""
    from tracetui.trace import prefetch

    prefetch.start(trace)
    from bench_app import SIZE, Frames

    from tracetui.app.app import TraceApp

    app = TraceApp(trace, freeze_gc=True)
    frames = Frames(app)

    def tree_rows() -> int:
        if type(app.screen).__name__ != "ExplorerScreen":
            return 0
        trees = app.screen.query("DispatchTree")
        return trees.first().row_count if trees else 0  # type: ignore[attr-defined]

    shown = frames.first_frame(lambda: tree_rows() > 0)
    async with app.run_test(size=SIZE) as pilot:
        at = time.time() - (time.perf_counter() - await shown)
        rss, peak = _status("VmRSS"), _status("VmHWM")
        await pilot.pause()
    return {"tree": at, "rss": rss, "peak": peak}


def _summary(trace: Path, env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    command = [sys.executable, "-m", "tracetui", "summary", str(trace)]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=env["TRACETUI_CACHE_DIR"]
    )
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"summary failed: {process.stderr.read().decode() if process.stderr else ''}")
    return time.perf_counter() - start, usage.ru_maxrss << 10


def _tree(trace: Path, env: dict[str, str]) -> dict[str, Any]:
    start = time.time()
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(trace)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=env["TRACETUI_CACHE_DIR"],
    )
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    return {"tree": marks["tree"] - start, "rss": marks["rss"], "peak": marks["peak"]}


def _in_process(trace: Path, env: dict[str, str]) -> dict[str, float]:
    script = (
        "import json, sys, time; import tracetui, tracetui.trace.loader; "
        "TABLES = ('events', 'instants', 'flows', 'meta_events', 'tracks', 'anomalies'); "
        "s = time.perf_counter(); trace = tracetui.load(sys.argv[1]); "
        "o = time.perf_counter(); [getattr(trace, n) for n in TABLES]; r = time.perf_counter(); "
        "assert trace.from_cache; print(json.dumps({'open': o - s, 'read_all': r - o}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(trace)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=env["TRACETUI_CACHE_DIR"],
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _json_bytes(trace: Path) -> int:
    """The trace's JSON size, counted in a child (a parent holding the JSON would pass its RSS on
    to the children it forks: ``ru_maxrss`` survives ``exec``)."""
    script = "import sys; from tracetui.trace.source import read_all; print(len(read_all(sys.argv[1])[1]))"
    done = subprocess.run(
        [sys.executable, "-c", script, str(trace)], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        help="another tracetui source tree, measured in turns with this one",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.trace))))
        return
    compile_tracetui()
    sides: dict[str, Path | None] = {"this tree": None}
    if args.against is not None:
        sides[str(args.against)] = args.against
    json_bytes = _json_bytes(need(args.trace))
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as scratch:
        envs = {}
        for number, (name, source) in enumerate(sides.items()):
            env = {k: v for k, v in os.environ.items() if k != "TRACETUI_NO_CACHE"}
            env["TRACETUI_CACHE_DIR"] = str(Path(scratch) / str(number))
            Path(env["TRACETUI_CACHE_DIR"]).mkdir()  # also the children's working folder: no stray imports
            paths = [str(source)] if source is not None else []
            env["PYTHONPATH"] = os.pathsep.join(
                [*paths, str(Path(__file__).parent), env.get("PYTHONPATH", "")]
            )
            envs[name] = env
        print(f"load average before: {_load()}")
        results: dict[str, dict[str, list[Any]]] = {}
        for name, env in envs.items():
            _summary(args.trace, env)  # primes: writes the entry (and keeps the summary with it)
            _tree(args.trace, env)
            root = Path(env["TRACETUI_CACHE_DIR"])
            entry = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
            results[name] = {"entry": [entry], "summary": [], "tree": [], "open": []}
        for _ in range(args.runs):
            for name, env in envs.items():
                results[name]["summary"].append(_summary(args.trace, env))
                results[name]["tree"].append(_tree(args.trace, env))
                results[name]["open"].append(_in_process(args.trace, env))
        print(f"load average after: {_load()}")
    print(f"trace: {args.trace.name}, {json_bytes / MB:.0f} MB of JSON; medians of {args.runs}")
    for name, found in results.items():
        _report(name, found, json_bytes)


def _report(name: str, found: dict[str, list[Any]], json_bytes: int) -> None:
    median = statistics.median
    entry = found["entry"][0]
    print(f"--- {name}")
    print(f"entry on disk: {entry / MB:.1f} MB = {entry / json_bytes:.3f}x the JSON")
    opened = median(o["open"] for o in found["open"])
    print(f"open the entry in-process (no table read where lazy): {opened:.3f} s")
    print(f"read every table after that: {median(o['read_all'] for o in found['open']):.3f} s")
    walls = [w for w, _ in found["summary"]]
    rsss = [r for _, r in found["summary"]]
    print(
        f"summary on reopen: {median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}), "
        f"peak RSS {median(rsss) / MB:.0f} MB = {median(rsss) / json_bytes:.2f}x"
    )
    times = [t["tree"] for t in found["tree"]]
    rss, peak = median(t["rss"] for t in found["tree"]), median(t["peak"] for t in found["tree"])
    print(
        f"to the tree on reopen: {median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}), "
        f"RSS then {rss / MB:.0f} MB = {rss / json_bytes:.2f}x, peak {peak / MB:.0f} MB"
    )


if __name__ == "__main__":
    main()
