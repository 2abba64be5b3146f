"""Benchmark: `tracetui open RUN` — start-up to the Ranks table, and the cost of its keys.

    python benchmarks/bench_run_app.py RUN [--runs N] [--presses N]

RUN is a directory of rank traces (``benchmarks/bench_ranks.py --keep`` makes 8 × 90 MB ones; the
4-rank fixture set is ``tests/fixtures/ranks/gloo_4rank_mlp``). Each run is a fresh process doing
what ``tracetui open RUN`` does, headless (160×50), every frame rendered to terminal bytes as a
real terminal needs (the ``Frames`` hook of ``bench_app.py``).

(a) Start-up, from just before the process is spawned to the first frame of the Ranks table:
cold (an empty cache directory: every rank decoded, its trace and derived cache entries written)
and warm (the same cache again: the ranks' small tables from the derived cache). Goal (issue 18,
8 ranks × 90 MB): cold ≤ 8 s.

(b) Keys, from sending the key to the first frame that shows its effect, median and max over
``--presses``: on the Ranks screen, show another table (``2``, ``3``, ``1``) and move the cursor;
open a rank (Enter) and switch to the next one (``]``): to the frame of the loading screen (the
UI never waits for a load) and, apart, to the frame of the rank's tree (its load from the trace
cache); ``R`` back to the Ranks table. Goal: ≤ 50 ms per key (a rank's load is not a key's cost).

The machine's load (``uptime``) is printed before and after: on a shared machine it moves every
figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_app import Frames
from installed import compile_tracetui

SIZE = (160, 50)


def screen_name(app: Any) -> str:
    return type(app.screen).__name__


async def settle(pilot: Any) -> None:
    """Until no worker runs and the screen shown has nothing outstanding."""
    for _ in range(6000):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        screen = pilot.app.screen
        loading = "Loading" in type(screen).__name__
        if not loading and getattr(screen, "settled", True):
            return
        await pilot.pause(0.01)


async def key_to_frame(pilot: Any, frames: Frames, key: str, changed: Any) -> float:
    from textual import events

    await settle(pilot)
    shown = frames.first_frame(changed)
    start = time.perf_counter()
    pilot.app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
    return (await asyncio.wait_for(shown, 120) - start) * 1000


async def _child(run: Path, presses: int) -> dict[str, Any]:
    """Runs in the spawned process, as ``tracetui open RUN`` (``open_command`` → ``open_run``)."""
    from tracetui.app.launch import run_name
    from tracetui.app.run_app import RunApp
    from tracetui.ranks.discover import RankSet, resolve

    target = resolve([run])
    assert isinstance(target, RankSet), "not a run of several ranks"
    app = RunApp(target, run_name(target), freeze_gc=True)
    frames = Frames(app)
    marks: dict[str, Any] = {"ranks": len(target.ranks)}

    def ranks_rows() -> int:
        if screen_name(app) != "RanksScreen":
            return 0
        return app.screen.query_one("RankTable").row_count  # type: ignore[attr-defined, no-any-return]

    shown = frames.first_frame(lambda: ranks_rows() > 0)
    async with app.run_test(size=SIZE) as pilot:
        marks["ranks_table"] = time.time() - (time.perf_counter() - await shown)
        await settle(pilot)
        times: dict[str, list[float]] = {}

        def add(label: str, value: float) -> None:
            times.setdefault(label, []).append(value)

        def tab(key: str) -> bool:
            return screen_name(app) == "RanksScreen" and app.screen.active == key  # type: ignore[attr-defined]

        for _ in range(presses):
            for key, name in (("2", "collectives"), ("3", "kernels"), ("1", "ranks")):
                add(
                    f"Ranks screen: show a table ({key})",
                    await key_to_frame(pilot, frames, key, lambda n=name: tab(n)),
                )
            table = app.screen.query_one("RankTable")
            row = table.cursor_row  # type: ignore[attr-defined]
            add(
                "Ranks screen: move the cursor",
                await key_to_frame(pilot, frames, "down", lambda r=row, t=table: t.cursor_row != r),  # type: ignore[attr-defined]
            )
            await pilot.press("home")
        rank_loads: list[float] = []
        for index in range(presses):
            key = "enter" if index == 0 else "right_square_bracket"
            label = "open a rank (Enter)" if index == 0 else "switch rank (])"
            await settle(pilot)
            before = app.current_rank
            loading = frames.first_frame(lambda: "Loading" in screen_name(app))

            def tree_shown(before: int | None = before) -> bool:
                screen: Any = app.screen
                return screen_name(app) == "RankExplorerScreen" and (
                    app.current_rank != before and screen.dispatch_tree.row_count > 0
                )

            tree = frames.first_frame(tree_shown)
            start = time.perf_counter()
            from textual import events

            driver: Any = app._driver
            driver.send_message(events.Key(key, None))
            add(f"{label}: to the loading screen", (await asyncio.wait_for(loading, 120) - start) * 1000)
            rank_loads.append((await asyncio.wait_for(tree, 600) - start) * 1000)
            await settle(pilot)
            add(
                "R: back to the Ranks table",
                await key_to_frame(pilot, frames, "R", lambda: screen_name(app) == "RanksScreen"),
            )
            add(
                "Esc: back to the rank",
                await key_to_frame(pilot, frames, "escape", lambda: screen_name(app) == "RankExplorerScreen"),
            )
        marks["times"] = times
        marks["rank_loads_ms"] = rank_loads
    return marks


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _spawn(run: Path, presses: int, env: dict[str, str]) -> dict[str, Any]:
    """One fresh process; its result, with the CPU time it and its workers used (``cpu_s``)."""
    before = _cpu_of_children()
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(run), "--presses", str(presses)],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_run_app: the child failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["cpu_s"] = _cpu_of_children() - before
    return result


def uptime() -> str:
    with open("/proc/loadavg") as loadavg:
        return "load average " + ", ".join(loadavg.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per mode")
    parser.add_argument("--presses", type=int, default=5, help="presses per key")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.run, args.presses))))
        return
    compile_tracetui()
    print(f"before: {uptime()}")
    base = {k: v for k, v in os.environ.items() if k != "TRACETUI_NO_CACHE"}
    starts: dict[str, list[float]] = {"cold": [], "warm": []}
    cpu: dict[str, list[float]] = {"cold": [], "warm": []}
    result: dict[str, Any] = {}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="tracetui-bench-", dir="/work/tmp") as cache:
            env = {**base, "TRACETUI_CACHE_DIR": cache}
            for mode in ("cold", "warm"):
                spawned = time.time()
                result = _spawn(args.run, args.presses if mode == "warm" else 0, env)
                starts[mode].append(result["ranks_table"] - spawned)
                cpu[mode].append(result["cpu_s"])
    print(f"tracetui open {args.run.name}: {result['ranks']} ranks, {args.runs} runs per mode\n")
    print(f"{'start-up (spawn → Ranks table frame)':<44} {'median':>9} {'min':>9} {'max':>9} {'CPU':>9}")
    for mode, values in starts.items():
        print(
            f"{mode:<44} {statistics.median(values):>8.2f}s {min(values):>8.2f}s {max(values):>8.2f}s"
            f" {statistics.median(cpu[mode]):>8.2f}s"
            + ("   goal ≤ 8 s (8 × 90 MB)" if mode == "cold" else "")
        )
    print("(CPU: user + system of the process and its workers; cold: to the Ranks table; warm: the keys too)")
    print(f"\n{'key → frame (warm runs)':<44} {'median':>9} {'max':>9}   goal")
    for label, values in result["times"].items():
        print(f"{label:<44} {statistics.median(values):>7.1f}ms {max(values):>7.1f}ms   ≤ 50 ms")
    loads = result["rank_loads_ms"]
    print(
        f"{'a rank from key to its tree (load, cached)':<44} {statistics.median(loads):>7.0f}ms "
        f"{max(loads):>7.0f}ms   (not a key's cost: behind the loading screen)"
    )
    print(f"\nafter: {uptime()}")


if __name__ == "__main__":
    main()
