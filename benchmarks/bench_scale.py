"""Benchmark: big traces. Time and peak memory to the summary and to the explorer's tree, cold and on a
reopen (from the trace cache), the cache entry's size, and the floor: the time to only inflate and to
only inflate and scan the same file.

    python benchmarks/bench_scale.py [--source TRACE[,TRACE...]] [--sizes 90M,1G,3G,8G] [--runs N]
                                     [--workdir DIR] [--plain] [--keys N] [--keep] [--against TREE]

Each size is made from each ``--source`` (default: the 90 MB transformer trace; several, comma-separated:
traces of several shapes, each printed) by
``benchmarks/make_big_trace.py`` (its steps replicated; gzip level 1, or ``--plain`` JSON) into
``--workdir`` (default ``/work/tmp/core``; multi-GB files: delete them after, or without ``--keep``
they are deleted when the size is done). Every measurement is a fresh process; wall time and peak RSS
come from ``os.wait4``; each figure is the median of ``--runs``, the modes taking turns run by run.

* summary cold: ``tracetui summary TRACE`` with the trace cache off;
* tree cold: ``tracetui open`` headless (160x50) until the first frame that shows tree rows;
* settled cold: the same, on until the explorer's tables worker is done (the tables, the insight
  readings, the memory view): the peak a session of the explorer holds, not only its first frame;
* first open: ``summary`` and the settled tree with the trace cache on and empty (a user's
  default first open): the entry is written meanwhile, and the process waits for it to be done
  before it leaves, as the CLI does;
* reopen: the same two from the trace cache (primed by one run of each, in a private directory: the
  summary keeps its figures, the tree its first frame, with the entry);
* tree 1st reopen: that priming run of the tree (the entry written by ``summary``, the tree's first
  frame computed from it and kept);
* floor: inflate only (the reader's blocks, nothing kept) and inflate + scan (the native scanner's
  tables, no model), each in one process;
* ``--against TREE``: the same measurements of another checkout (e.g. ``git archive main`` with its
  scanner built), taking turns with this one, as "before" rows (under the same load);
* after the table: each side's median CPU seconds (user + sys) cold, and the load's stages and the
  read's spans of one more cold ``summary`` with ``TRACETUI_TIMING=1``;
* ``--keys N``: for the largest size, keys through the explorer (``bench_app.py``'s child: expand,
  move, open a table, find next), N presses each, cold.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import make_big_trace
from headline_trace import HEADLINE as DEFAULT_SOURCE
from headline_trace import need
from installed import compile_tracetui

HERE = Path(__file__).resolve().parent
# as the tracetui CLI sets it (tracetui.trace.allocator.hand_back_at_once, written out: a --against
# tree may not have it); a load then keeps freed memory under its budget, as in the CLI
ALLOCATOR = {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0", "_TRACETUI_SET_MALLOC_CONF": "1"}

FLOOR_CHILD = """
import sys, time
from tracetui.trace.source import open_source
from tracetui.trace import native
mode, path = sys.argv[1], sys.argv[2]
start = time.perf_counter()
src, blocks = open_source(path)
if mode == "inflate":
    for block in blocks:
        pass
else:
    scanner, rest = native.scanner(), b""
    for block in blocks:
        rest = rest + block if rest else block
        status, used, why = scanner.feed(rest, False)
        rest = rest[used:]
        scanner.take_args()
    scanner.feed(rest, True)
    scanner.flush()
print(time.perf_counter() - start)
"""

TREE_CHILD = """
import asyncio, os, sys, time
sys.path.insert(0, sys.argv[2])
from bench_app import Frames
async def main(trace):
    from tracetui.trace import prefetch
    prefetch.start(trace)
    from tracetui.app.app import TraceApp
    app = TraceApp(trace, freeze_gc=True)
    frames = Frames(app)
    def rows():
        if type(app.screen).__name__ != "ExplorerScreen":
            return 0
        trees = app.screen.query("DispatchTree")
        return trees.first().row_count if trees else 0
    shown = frames.first_frame(lambda: rows() > 0)
    async with app.run_test(size=(160, 50)):
        await asyncio.wait_for(shown, 600)
        if sys.argv[3:] == ["settled"]:  # on until the tables' worker is done (what a session holds)
            for _ in range(12000):
                if getattr(app.screen, "tables", None) is not None:
                    break
                await asyncio.sleep(0.05)
            else:
                raise SystemExit("the tables never came")
    from tracetui.trace import cache
    cache.settle()  # a cache entry being written is finished, as the CLI's exit does (none: at once)
    os._exit(0)
from pathlib import Path
asyncio.run(main(Path(sys.argv[1])))
"""


# the last run's CPU seconds (user + sys, of exactly that child) and stderr
LAST: dict[str, Any] = {"cpu": 0.0, "err": ""}


def run_measured(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB, of exactly this child: wait4 on its pid) and stdout of one run
    (its CPU seconds and stderr in :data:`LAST`).
    Run from a folder holding no ``tracetui``: ``python -m``/``-c`` put the working folder first on
    the import path, ahead of ``PYTHONPATH``, so a run started in a checkout would import that
    checkout's code on both sides of ``--against``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir()
    )
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        code = os.waitstatus_to_exitcode(status)
        raise SystemExit(f"failed ({code}): {' '.join(cmd)[-300:]}\n{err.decode()[-2000:]}")
    LAST.update(cpu=usage.ru_utime + usage.ru_stime, err=err.decode())
    return wall, usage.ru_maxrss / 1024, out.decode()


def make(source: Path, size: str, workdir: Path, plain: bool) -> Path:
    """``source`` at about ``size`` of JSON, in ``workdir``: the source itself where one copy is that
    size (gzip'd, as wanted), else its copies by ``make_big_trace.py``. Named by the source and the
    size, so that a trace made from another source is never taken for it."""
    suffix = ".json" if plain else ".json.gz"
    out = workdir / f"{source.name.split('.')[0]}_{size}{suffix}"
    if not out.exists():
        copies = max(1, round(make_big_trace.parse_size(size) / len(make_big_trace.read(source))))
        if copies == 1 and not plain and source.name.endswith(".gz"):
            shutil.copy(source, out)  # the source itself
        else:
            maker = [sys.executable, str(HERE / "make_big_trace.py"), str(source), str(out)]
            subprocess.run([*maker, "--copies", str(copies)], check=True)
    return out


def json_size(path: Path) -> tuple[int, int]:
    """Bytes of JSON and events of a trace (one scan)."""
    code = (
        "import sys; from tracetui.trace.source import open_source; from tracetui.trace import stream\n"
        "src, blocks = open_source(sys.argv[1]); s = stream.read(src.path, blocks)\n"
        "print(src.json_bytes, s.args.events)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    json_bytes, events = out.stdout.split()
    return int(json_bytes), int(events)


def median(samples: list[tuple[float, float]]) -> tuple[float, float]:
    """The median wall time and the highest peak RSS."""
    return statistics.median(s[0] for s in samples), max(s[1] for s in samples)


def measure(trace: Path, runs: int, against: Path | None) -> dict[str, dict[str, Any]]:
    """Per side (this tree, and ``against`` when given: another checkout, run the same way in
    turns), the medians of every mode."""
    sides = {"now": None} | ({"before": against} if against is not None else {})
    samples: dict[str, dict[str, list[tuple[float, float]]]] = {side: {} for side in sides}
    cpu: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    entries: dict[str, int] = {}
    with tempfile.TemporaryDirectory(dir=trace.parent, prefix=".bench-cache-") as cache_root:
        envs = {}
        for side, tree in sides.items():
            cold = dict(os.environ, TRACETUI_NO_CACHE="1", **ALLOCATOR)
            cold.pop("TRACETUI_CACHE_DIR", None)
            # this checkout's code, not whatever the interpreter has installed; or the other tree's
            cold["PYTHONPATH"] = str(tree if tree is not None else HERE.parent)
            warm = {k: v for k, v in cold.items() if k != "TRACETUI_NO_CACHE"}
            warm["TRACETUI_CACHE_DIR"] = str(Path(cache_root) / side)
            fresh = dict(warm, TRACETUI_CACHE_DIR=str(Path(cache_root) / f"{side}-fresh"))
            envs[side] = (cold, warm, fresh)
            run_measured([sys.executable, "-m", "tracetui", "summary", str(trace)], warm)  # primes the cache
            # the first tree from the entry computes the tree's first frame and keeps it: measured apart
            first = run_measured([sys.executable, "-c", TREE_CHILD, str(trace), str(HERE)], warm)
            samples[side]["tree 1st reopen"] = [first[:2]]
            files = Path(warm["TRACETUI_CACHE_DIR"]).rglob("*")
            entries[side] = sum(p.stat().st_size for p in files if p.is_file())
        summary = [sys.executable, "-m", "tracetui", "summary", str(trace)]
        tree_cmd = [sys.executable, "-c", TREE_CHILD, str(trace), str(HERE)]
        settled = [*tree_cmd, "settled"]
        for _ in range(runs):  # the modes and sides take turns: a slow spell hits each alike
            for side, (cold, warm, fresh) in envs.items():
                for mode, cmd, env in (
                    ("summary cold", summary, cold),
                    ("tree cold", tree_cmd, cold),
                    ("settled cold", settled, cold),
                    ("summary reopen", summary, warm),
                    ("tree reopen", tree_cmd, warm),
                    ("summary first open", summary, fresh),
                    ("settled first open", settled, fresh),
                ):
                    if env is fresh:  # an empty cache: the open writes the entry meanwhile
                        shutil.rmtree(env["TRACETUI_CACHE_DIR"], ignore_errors=True)
                    wall, rss, _ = run_measured(cmd, env)
                    samples[side].setdefault(mode, []).append((wall, rss))
                    cpu[side].setdefault(mode, []).append(LAST["cpu"])
        cold = envs["now"][0]
        for mode in ("inflate", "inflate + scan"):
            for _ in range(runs):
                _, _, out = run_measured(
                    [sys.executable, "-c", FLOOR_CHILD, mode.split()[-1], str(trace)], cold
                )
                samples["now"].setdefault(mode, []).append((float(out), 0.0))
    result: dict[str, dict[str, Any]] = {}
    for side, modes in samples.items():
        result[side] = {mode: median(values) for mode, values in modes.items()}
        result[side]["entry"] = entries[side]
        result[side]["cpu"] = {mode: statistics.median(values) for mode, values in cpu[side].items()}
        result[side]["stages"] = stages(trace, envs[side][0])
    return result


def stages(trace: Path, cold: dict[str, str]) -> str:
    """The load's stages and the read's spans (``TRACETUI_TIMING=1``, one cold ``summary``)."""
    run_measured([sys.executable, "-m", "tracetui", "summary", str(trace)], dict(cold, TRACETUI_TIMING="1"))
    lines = [line for line in LAST["err"].splitlines() if line.startswith("tracetui: ")]
    return "\n".join(f"  {line.removeprefix('tracetui: ')}" for line in lines)


def keys(trace: Path, presses: int) -> str:
    env = dict(os.environ, TRACETUI_NO_CACHE="1", **ALLOCATOR)
    done = subprocess.run(
        [sys.executable, str(HERE / "bench_app.py"), "--child", str(trace), "--presses", str(presses)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    lines = [f"keys at {trace.name} ({marks['rows']:,} rows at start; key → frame, median / max):"]
    for label, values in marks["frame_times"].items():
        lines.append(f"  {label:<20} {statistics.median(values):7.1f} ms {max(values):7.1f} ms")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", default=str(DEFAULT_SOURCE), help="traces, comma-separated")
    parser.add_argument("--sizes", default="90M,1G,3G,8G")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path("/work/tmp/core"))
    parser.add_argument("--plain", action="store_true", help="plain JSON instead of gzip")
    parser.add_argument("--keys", type=int, default=0, help="presses per key at the largest size")
    parser.add_argument("--keep", action="store_true", help="keep the generated traces")
    parser.add_argument(
        "--against",
        type=Path,
        help="another checkout (its package folder's parent), run in turns as 'before'",
    )
    args = parser.parse_args()
    # the runs start elsewhere: absolute paths
    sources = [need(Path(source)).resolve() for source in args.source.split(",")]
    args.workdir = args.workdir.resolve()
    args.against = args.against.resolve() if args.against is not None else None
    compile_tracetui()
    args.workdir.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} at the start; {args.runs} runs each, medians\n")
    header = (
        "| JSON / events | summary cold | tree cold | summary reopen | tree reopen | peak RSS cold "
        "(summary / tree) | RSS reopen (summary / tree) | cache entry | inflate | inflate+scan "
        "| tree 1st reopen | settled cold | first open, cache on (summary / settled) |"
    )
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    sizes = args.sizes.split(",")
    notes: list[str] = []
    for source, size in ((source, size) for source in sources for size in sizes):
        trace = make(source, size, args.workdir, args.plain)
        json_bytes, events = json_size(trace)
        measured = measure(trace, args.runs, args.against)
        ratio = 2**20 / json_bytes
        for side, r in measured.items():
            floor = f"{r['inflate'][0]:.2f} s | {r['inflate + scan'][0]:.2f} s" if "inflate" in r else "| "
            label = f"{json_bytes / 1e9:.2f} GB / {events / 1e6:.2f}M" + (
                "" if side == "now" else f" ({side})"
            )
            print(
                f"| {label} "
                f"| {r['summary cold'][0]:.2f} s | {r['tree cold'][0]:.2f} s "
                f"| {r['summary reopen'][0]:.2f} s | {r['tree reopen'][0]:.2f} s "
                f"| {r['summary cold'][1]:.0f} / {r['tree cold'][1]:.0f} MB "
                f"({r['summary cold'][1] * ratio:.2f}x / {r['tree cold'][1] * ratio:.2f}x) "
                f"| {r['summary reopen'][1]:.0f} / {r['tree reopen'][1]:.0f} MB "
                f"| {r['entry'] / 2**20:.0f} MB ({r['entry'] / json_bytes:.2f}x) "
                f"| {floor} "
                f"| {r['tree 1st reopen'][0]:.2f} s / {r['tree 1st reopen'][1]:.0f} MB "
                f"| {r['settled cold'][0]:.2f} s / {r['settled cold'][1]:.0f} MB "
                f"({r['settled cold'][1] * ratio:.2f}x) "
                f"| {r['summary first open'][0]:.2f} / {r['settled first open'][0]:.2f} s, "
                f"{r['summary first open'][1]:.0f} / {r['settled first open'][1]:.0f} MB "
                f"({r['summary first open'][1] * ratio:.2f}x / {r['settled first open'][1] * ratio:.2f}x) |",
                flush=True,
            )
            c = r["cpu"]
            notes.append(
                f"{trace.name} ({side}): CPU (user + sys) summary cold {c['summary cold']:.2f} s, "
                f"tree cold {c['tree cold']:.2f} s, settled cold {c['settled cold']:.2f} s; stages:\n"
                + r["stages"]
            )
        if args.keys and size == sizes[-1]:
            print("\n" + keys(trace, args.keys))
        if not args.keep and trace.stat().st_size > 100 << 20:
            trace.unlink()
    print("\n" + "\n".join(notes))
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
