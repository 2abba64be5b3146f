"""Benchmark: the explorer's timeline on a big trace — each key from press to frame, the whole-trace
frame, the index's build and its memory.

    python benchmarks/bench_timeline.py [TRACE] [--runs N] [--presses N] [--size WxH] [--expanded]

Each run is a fresh process (``bench_timeline.py --child TRACE``) that opens the trace as ``tracetui
open`` does, headless, with ``bench_app.py``'s hook on the app's frame output (every frame also
rendered to terminal bytes, as a terminal would need). Once everything is loaded it shows the
timeline full screen (``v``, focused) and measures, from sending a key to the first frame that
shows its effect, median and max over the runs' presses:

* zoom in (``w``) from the whole trace down to 1 ns per column, and out again (``s``);
* pan (``a`` / ``d``) at a deep, a middle and a wide zoom;
* fit the trace (``0``: the whole-trace frame, from a deep zoom) and fit the selection (``f``);
* colour mode (``c``), the lane cursor (``down``) and expanding a lane (``space``).

Goals (issue 40): on the 8.66 GB trace zoom and pan ≤ 50 ms median, ≤ 150 ms worst, the whole-trace
frame ≤ 200 ms; on the 90 MB trace every key ≤ 16 ms median. ``--expanded`` expands every lane first
(every depth of every thread drawn: the most rows a screen shows).

A second child (``--memory``) measures what the timeline adds: the process's RSS with the trace, its
tree and its tables (the explorer's model) and again with the timeline's model built, the index's own
bytes (the order, skip lists, long events and pyramids), and the time to build it (or to read it
back from the trace cache: with the cache on, a run writes it and the next one reads it). The load
average is printed before and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_app import Frames, _settle
from headline_trace import HEADLINE as DEFAULT_TRACE
from headline_trace import need
from installed import compile_tracetui


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


CPU: dict[str, list[float]] = {}


async def _press(pilot: Any, frames: Frames, key: str, changed: Any, label: str = "") -> float:
    """Wall ms from sending ``key`` to the first frame that shows it; the process's CPU ms over the same
    span (every thread: a steadier figure on a shared machine) goes to :data:`CPU` under ``label``."""
    from textual import events

    await _settle(pilot)
    shown = frames.first_frame(changed)
    start, cpu = time.perf_counter(), time.process_time()
    pilot.app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
    wall = (await asyncio.wait_for(shown, 60) - start) * 1000
    CPU.setdefault(label, []).append((time.process_time() - cpu) * 1000)
    return wall


async def _child(trace: Path, presses: int, size: tuple[int, int], expanded: bool) -> dict[str, Any]:
    from tracetui.trace import prefetch

    prefetch.start(trace)
    from tracetui.app.app import TraceApp

    app = TraceApp(trace, freeze_gc=True)
    frames = Frames(app)
    times: dict[str, list[float]] = {}

    async def measure(label: str, key: str, changed: Any) -> None:
        times.setdefault(label, []).append(await _press(pilot, frames, key, changed, label))

    async with app.run_test(size=size) as pilot:
        await _settle(pilot)
        await pilot.press("v")
        await _settle(pilot)
        screen = app.screen
        timeline = screen.timeline  # type: ignore[attr-defined]
        if expanded:
            from dataclasses import replace

            keys = frozenset(lane.key for lane in timeline.model.lanes if lane.detail)
            timeline.set_layout(replace(timeline.lane_layout, expanded=keys))
            await _settle(pilot)
        marks: dict[str, Any] = {"rows": len(timeline.rows), "cells": timeline.cells}

        def moved() -> Any:
            before = timeline.window
            return lambda: timeline.window != before

        whole = "fit the trace (0): whole-trace frame"
        for _ in range(presses):
            await measure(whole, "0", lambda: True)
            deep = 0
            while timeline.window.span > timeline.cells:  # zoom in to 1 ns per column
                await measure("zoom in (w)", "w", moved())
                deep += 1
                if deep in (4, 12):
                    for key in ("d", "a"):
                        await measure(f"pan ({key}), {'wide' if deep == 4 else 'middle'}", key, moved())
            for key in ("d", "a"):
                await measure(f"pan ({key}), deep", key, moved())
            marks["zoom_levels"] = deep
            await measure(whole, "0", moved())
            for _ in range(deep):
                await pilot.press("w")
            bounds = timeline.model.bounds
            while timeline.window.span < bounds[1] - bounds[0]:
                await measure("zoom out (s)", "s", moved())
            row = timeline.row_cursor
            await measure("lane cursor (down)", "down", lambda r=row: timeline.row_cursor != r)
            mode = timeline.mode
            await measure("colour mode (c)", "c", lambda m=mode: timeline.mode != m)
            count = len(timeline.rows)
            await measure("expand a lane (space)", "space", lambda n=count: len(timeline.rows) != n)
            await pilot.press("space")
            if timeline.span is not None:
                await measure("fit the selection (f)", "f", moved())
        tree = screen.dispatch_tree  # type: ignore[attr-defined]
        marks["times"] = times
        marks["cpu"] = CPU
        model = timeline.model
        rows = [row.row for row in timeline.rows]
        window = model.whole(timeline.cells)
        draws = []
        for _ in range(3):
            model._drawn.clear()
            start = time.perf_counter()
            for row in rows:
                model.draw(row, window, timeline.cells, timeline.mode)
            draws.append((time.perf_counter() - start) * 1000)
        marks["whole_draw_ms"] = statistics.median(draws)
        marks["tree_rows"] = tree.row_count
    return marks


def _memory_child(trace: Path) -> dict[str, Any]:
    """RSS with the explorer's model (trace, tree, tables), then with the timeline's."""
    import gc

    import tracetui
    from tracetui.insight.memory import memory_of
    from tracetui.views.insight import load_insight
    from tracetui.views.tables import build_tables
    from tracetui.views.timeline import index as ix
    from tracetui.views.timeline.model import timeline_model
    from tracetui.views.tree import TreeModel

    start = time.perf_counter()
    loaded = tracetui.load(trace)
    load_s = time.perf_counter() - start
    tree = TreeModel(loaded)
    tree.first_frame()
    tree.warm()
    insight = load_insight(loaded)
    build_tables(loaded, insight, memory_of(loaded))
    gc.collect()
    before = _rss_mb()
    kept = loaded.parts.get(ix.KIND) is not None
    start = time.perf_counter()
    model = timeline_model(loaded)
    build_s = time.perf_counter() - start
    gc.collect()
    after = _rss_mb()
    index = model.index
    own = index.order.estimated_size()
    levels = 0
    for row in index.rows.values():
        own += len(row.skip) * 8 + row.long_starts.estimated_size() * 2 + row.long_rows.estimated_size()
        levels += sum(
            sum(s.estimated_size() for s in (lv.bins, lv.busy, lv.first, lv.last, lv.top))
            for lv in row.levels
        )
    from tracetui.trace import cache

    cache.settle()
    return {
        "load_s": load_s,
        "events": loaded.events.height,
        "from_cache": loaded.from_cache,
        "index_kept": kept,
        "build_s": build_s,
        "rss_model_mb": before,
        "rss_timeline_mb": after,
        "index_mb": own / 1e6,
        "pyramid_mb": levels / 1e6,
        "rows": len(index.rows),
    }


# as the tracetui CLI sets it (tracetui.trace.allocator): freed memory goes back, as in `tracetui open`
ALLOCATOR = {"_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0", "_TRACETUI_SET_MALLOC_CONF": "1"}


def _spawn(args: list[str]) -> dict[str, Any]:
    env = dict(os.environ, **ALLOCATOR)
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode:
        sys.exit(f"bench_timeline: the child failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes")
    parser.add_argument("--presses", type=int, default=2, help="passes through the keys per process")
    parser.add_argument("--size", default="160x50", help="terminal size, WIDTHxHEIGHT")
    parser.add_argument("--expanded", action="store_true", help="every lane expanded")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory child")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    width, height = (int(part) for part in args.size.lower().split("x"))
    if args.memory:
        print(json.dumps(_memory_child(args.trace)))
        return
    if args.child:
        print(json.dumps(asyncio.run(_child(args.trace, args.presses, (width, height), args.expanded))))
        return
    need(args.trace)
    compile_tracetui()
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.no_memory:
        for run in range(2):  # the first builds the index (and keeps it, cache on), the second reads it
            found = _spawn(["--memory", str(args.trace)])
            what = "read back from the cache" if found["index_kept"] else "built"
            share = 100 * (found["rss_timeline_mb"] - found["rss_model_mb"]) / found["rss_model_mb"]
            print(
                f"memory run {run + 1}: {found['events']:,} events, load {found['load_s']:.1f} s "
                f"(from cache: {found['from_cache']}); index {what} in {found['build_s']:.2f} s; "
                f"RSS model {found['rss_model_mb']:.0f} MB → with the timeline "
                f"{found['rss_timeline_mb']:.0f} MB ({share:+.1f} %); index {found['index_mb']:.1f} MB "
                f"+ pyramids {found['pyramid_mb']:.1f} MB, {found['rows']} rows"
            )
    extra = ["--expanded"] if args.expanded else []
    merged: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    result: dict[str, Any] = {}
    for _ in range(args.runs):
        result = _spawn(
            ["--child", str(args.trace), "--presses", str(args.presses), "--size", args.size, *extra]
        )
        for label, values in result["times"].items():
            merged.setdefault(label, []).extend(values)
        for label, values in result["cpu"].items():
            cpu.setdefault(label, []).extend(values)
    print(
        f"timeline of {args.trace.name}, {args.size}, {result['rows']} rows on screen of "
        f"{result['cells']} cells, {result['zoom_levels']} zoom steps from the whole trace to 1 ns per "
        f"column; {args.runs} runs"
    )
    print(f"{'key → frame':<40} {'median':>9} {'max':>9} {'n':>4}   {'CPU median':>10} {'CPU max':>9}")
    for label, values in merged.items():
        used = cpu.get(label, [0.0])
        print(
            f"{label:<40} {statistics.median(values):>7.1f}ms {max(values):>7.1f}ms {len(values):>4}"
            f"   {statistics.median(used):>8.1f}ms {max(used):>7.1f}ms"
        )
    print(f"whole-trace rows drawn (no cache, model only): {result['whole_draw_ms']:.1f} ms")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
