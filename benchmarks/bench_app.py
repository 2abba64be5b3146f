"""Benchmark: `tracetui open` on a big trace — start-up to the tree, and the cost of each keypress.

    python benchmarks/bench_app.py [TRACE] [--runs N] [--presses N] [--cold-only]

Each run is a fresh process (``bench_app.py --child TRACE``) that does what ``tracetui open``
does, but headless (``App.run_test``, 160×50), with a hook on the app's frame output that also
converts every frame to terminal bytes, as a real terminal would need. Start-up is measured cold
(the trace cache off: everything decoded), on a first open (the cache on and empty: everything
decoded, and the cache entry written, in the background) and warm (from tracetui's trace
cache, primed by one run, in a private directory); ``--cold-only`` measures only cold. The
modes take turns run by run. tracetui is byte-compiled first, as an installed package is.

(a) Start-up, from just before the process is spawned to the first frame that shows the tree
rows (and to the first frame of the loading screen). Goal (issue 4): ≤ 2 s.

(b) Keypresses, once the tree is up and every worker has finished, median and max over
``--presses`` presses: "key → frame" is from sending the key to the first frame that shows its
effect; "pilot.press + pause" is Textual's test pilot around the same key (it waits until the
process looks idle, so it also counts the details pane's debounced worker and the pilot's own
idle detection: see the no-op key's row). Keys: expand a node (a step's autograd thread, ~270
children on the default trace), move the cursor, open the ops table, find next (2 100
``aten::mm`` matches). Goal: ≤ 50 ms each.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from headline_trace import HEADLINE as DEFAULT_TRACE
from headline_trace import need
from installed import compile_tracetui

SIZE = (160, 50)


class Frames:
    """Wraps ``app._display``: renders each frame to terminal bytes and resolves waiters on it."""

    def __init__(self, app: Any) -> None:
        from textual._compositor import CompositorUpdate

        self.app = app
        self.waiters: list[tuple[Callable[[], bool], asyncio.Future[float]]] = []
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            if isinstance(renderable, CompositorUpdate):
                renderable.render_segments(app.console)  # what the terminal driver would write
            original(screen, renderable)
            now = time.perf_counter()
            for waiter in list(self.waiters):
                condition, future = waiter
                if not future.done() and condition():
                    future.set_result(now)
                    self.waiters.remove(waiter)

        app._display = display

    def first_frame(self, condition: Callable[[], bool]) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiters.append((condition, future))
        return future


async def _settle(pilot: Any) -> None:
    from tracetui.app.screens.explorer import ExplorerScreen

    for _ in range(3000):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        explorer = next((s for s in pilot.app.screen_stack if isinstance(s, ExplorerScreen)), None)
        if explorer is not None and explorer.settled:
            return
        await pilot.pause(0.01)


async def _key_to_frame(pilot: Any, frames: Frames, key: str, changed: Callable[[], bool]) -> float:
    from textual import events

    await _settle(pilot)
    shown = frames.first_frame(changed)
    start = time.perf_counter()
    pilot.app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
    return (await asyncio.wait_for(shown, 30) - start) * 1000


async def _pilot_press(pilot: Any, key: str) -> float:
    await _settle(pilot)
    start = time.perf_counter()
    await pilot.press(key)
    await pilot.pause()
    return (time.perf_counter() - start) * 1000


async def _child(trace: Path, presses: int) -> dict[str, Any]:
    """Runs in the spawned process, like ``tracetui open`` (``open_trace``)."""
    from tracetui.trace import prefetch

    prefetch.start(trace)  # as `tracetui open`: read and scan on another core during the imports
    from tracetui.app.app import TraceApp  # polars is imported by the loader

    app = TraceApp(trace, freeze_gc=True)
    frames = Frames(app)
    marks: dict[str, Any] = {}

    def tree_rows() -> int:
        if type(app.screen).__name__ != "ExplorerScreen":
            return 0
        trees = app.screen.query("DispatchTree")
        return trees.first().row_count if trees else 0  # type: ignore[attr-defined]

    loading = frames.first_frame(lambda: type(app.screen).__name__ == "LoadingScreen")
    shown = frames.first_frame(lambda: tree_rows() > 0)
    async with app.run_test(size=SIZE) as pilot:
        marks["loading_screen"] = time.time() - (time.perf_counter() - await loading)
        marks["tree"] = time.time() - (time.perf_counter() - await shown)
        from tracetui.app.messages import Search
        from tracetui.app.screens.explorer import ExplorerScreen
        from tracetui.app.screens.tables import TablesScreen

        await _settle(pilot)
        explorer = app.screen
        assert isinstance(explorer, ExplorerScreen)
        tree, model = explorer.dispatch_tree, explorer.model
        marks["rows"] = tree.row_count
        threads = [k for s in model.step_ids for k in model.children(s) if isinstance(k, tuple)]
        targets = threads or [k for k in model.tops() if model.has_children(k)]
        marks["expanded_children"] = len(model.children(targets[0]))
        frame_times: dict[str, list[float]] = {}
        pilot_times: dict[str, list[float]] = {}

        def add(table: dict[str, list[float]], label: str, value: float) -> None:
            table.setdefault(label, []).append(value)

        def collapse(target: Any) -> None:
            path = model.path_of(target)
            assert path is not None
            tree.reveal(path)
            if tree.is_expanded(target):
                tree.collapse_row(tree.cursor_row)

        for index in range(presses):
            target = targets[index % len(targets)]
            collapse(target)
            rows = tree.row_count
            add(
                frame_times,
                "expand a node",
                await _key_to_frame(pilot, frames, "right", lambda r=rows: tree.row_count > r),
            )
            collapse(target)
            add(pilot_times, "expand a node", await _pilot_press(pilot, "right"))
            row = tree.cursor_row
            add(
                frame_times,
                "move the cursor",
                await _key_to_frame(pilot, frames, "down", lambda r=row: tree.cursor_row != r),
            )
            add(pilot_times, "move the cursor", await _pilot_press(pilot, "down"))
            opened = await _key_to_frame(pilot, frames, "1", lambda: isinstance(app.screen, TablesScreen))
            add(frame_times, "open a table", opened)
            await pilot.press("escape")
            add(pilot_times, "open a table", await _pilot_press(pilot, "1"))
            await pilot.press("escape")
            add(pilot_times, "no-op key (pilot's floor)", await _pilot_press(pilot, "x"))
        explorer.start_find(Search("aten::mm"), jump=True)
        await _settle(pilot)
        marks["find_matches"] = len(explorer.matches.ids)
        for _ in range(presses):
            key = tree.cursor_key
            add(
                frame_times,
                "find next",
                await _key_to_frame(pilot, frames, "n", lambda k=key: tree.cursor_key != k),
            )
            add(pilot_times, "find next", await _pilot_press(pilot, "n"))
        marks["frame_times"] = frame_times
        marks["pilot_times"] = pilot_times
    return marks


def _spawn(trace: Path, presses: int, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(trace), "--presses", str(presses)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes for the start-up time")
    parser.add_argument("--presses", type=int, default=10, help="presses per key")
    parser.add_argument("--cold-only", action="store_true", help="no warm (cached) runs")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.trace, args.presses))))
        return
    need(args.trace)
    compile_tracetui()
    base_env = {k: v for k, v in os.environ.items() if k != "TRACETUI_NO_CACHE"}
    starts: dict[str, list[tuple[float, float]]] = {}
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as cache_root:
        warm_env = dict(base_env, TRACETUI_CACHE_DIR=str(Path(cache_root) / "warm"))
        modes = ["cold"] if args.cold_only else ["cold", "first open", "warm"]
        if "warm" in modes:
            _spawn(args.trace, 1, warm_env)  # primes the cache
        for run in range(args.runs):  # the modes take turns, so a slow spell hits each alike
            for mode in modes:
                env = {
                    "cold": dict(os.environ, TRACETUI_NO_CACHE="1"),
                    "first open": dict(base_env, TRACETUI_CACHE_DIR=str(Path(cache_root) / f"first{run}")),
                    "warm": warm_env,
                }[mode]
                spawned = time.time()
                result = _spawn(args.trace, args.presses, env)
                starts.setdefault(mode, []).append(
                    (result["loading_screen"] - spawned, result["tree"] - spawned)
                )
    print(f"tracetui open {args.trace.name}: {result['rows']:,} rows at start, {args.runs} runs each")
    print()
    print(f"{'start-up (process spawn → frame)':<34} {'median':>9} {'min':>9} {'max':>9}   goal")
    for mode, samples in starts.items():
        for label, values, goal in (
            (f"loading screen ({mode})", [s[0] for s in samples], ""),
            (f"tree ({mode})", [s[1] for s in samples], "≤ 2 s"),
        ):
            median, low, high = statistics.median(values), min(values), max(values)
            print(f"{label:<34} {median:>8.2f}s {low:>8.2f}s {high:>8.2f}s   {goal}")
    print()
    notes = {
        "expand a node": f"{result['expanded_children']:,} children",
        "find next": f"{result['find_matches']:,} matches",
    }
    for title, table in (
        ("key → frame", result["frame_times"]),
        ("pilot.press + pause", result["pilot_times"]),
    ):
        print(f"{title:<34} {'median':>9} {'max':>9}   goal")
        for label, values in table.items():
            note = f"   ({notes[label]})" if label in notes else ""
            goal = "" if label.startswith("no-op") else "≤ 50 ms"
            print(f"{label:<34} {statistics.median(values):>7.1f}ms {max(values):>7.1f}ms   {goal}{note}")
        print()


if __name__ == "__main__":
    main()
