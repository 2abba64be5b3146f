"""Pilot tests of ``tracetui open`` on a distributed run: the Ranks screen and its numbers (those of
``summary --json``), switching ranks (keys, palette, Enter on a row), the comparison of two ranks,
the ranks' lanes of a step, one rank held at a time, and which app ``open`` starts."""

from __future__ import annotations

import gc
import json
import shutil
import weakref
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from textual.pilot import Pilot

from tests.app.conftest import fixture, settle
from tests.ranks.conftest import GLOO4, NCCL2
from tracetui import formatting as fmt
from tracetui.app.app import TraceApp
from tracetui.app.rank_messages import OpenRank, ShowRanks
from tracetui.app.run_app import RunApp
from tracetui.app.screens.rank_diff import RankDiffScreen
from tracetui.app.screens.rank_explorer import RankExplorerScreen
from tracetui.app.screens.ranks import RanksScreen
from tracetui.app.screens.tables import TablesScreen
from tracetui.app.widgets.rank_lanes import RankLanes
from tracetui.app.widgets.rank_table import RankTable
from tracetui.app.widgets.trace_header import TraceHeader
from tracetui.cli import cli
from tracetui.commands import open as open_module
from tracetui.ranks.discover import resolve

SIZE = (140, 40)


def run_app(source: Path = GLOO4) -> RunApp:
    """What ``tracetui open SOURCE`` starts for a run."""
    return RunApp(resolve([source]), source.name)


def shown(table: RankTable) -> list[dict[str, str]]:
    """Every row of the table as the widget writes its cells (header → text)."""
    return [{c.title: c.text(table.row(i).get(c.key)) for c in table.columns} for i in range(table.row_count)]


def explorer(app: RunApp) -> RankExplorerScreen:
    assert isinstance(app.screen, RankExplorerScreen), type(app.screen).__name__
    return app.screen


def header_text(app: RunApp) -> str:
    return str(app.screen.query_one(TraceHeader).render())


async def open_rank(pilot: Pilot[int], rank: int) -> RankExplorerScreen:
    pilot.app.post_message(OpenRank(rank))
    await settle(pilot)
    return explorer(pilot.app)  # type: ignore[arg-type]


# ---- the Ranks screen -----------------------------------------------------------------------------


async def test_open_run_shows_the_ranks_table_with_the_straggler() -> None:
    app = run_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, RanksScreen)
        table = app.screen.query_one(RankTable)
        assert [row["rank"] for row in shown(table)] == ["0", "1", "2", "3"]
        assert table.highlight == {2}  # the straggler, drawn in the error colour
        red = table.component("rank-table--straggler").color

        def drawn_red(index: int) -> bool:
            return all(s.style is not None and s.style.color == red for s in table._row_strip(index, 140))

        assert [drawn_red(i) for i in (1, 2, 3)] == [False, True, False]  # row 0 has the cursor
        caption = str(app.screen.query_one("#ranks-caption").render())
        assert caption.startswith("rank 2 arrives last at 6 of 6 all-reduces")
        assert "\nwhy: rank 2 spends 6.25 ms per step in untraced time" in caption  # why it is late
        assert "4 ranks of gloo_4rank_mlp" in str(app.screen.query_one("#ranks-facts").render())


def _summary_json(source: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["summary", str(source), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("source", [GLOO4, NCCL2], ids=["gloo4", "nccl2"])
async def test_the_tables_cells_are_the_numbers_of_summary_json(source: Path) -> None:
    """One number, one computation: every figure of the three tables, as drawn, is the `summary
    --json` figure written by the formatter every surface uses."""
    data = _summary_json(source)
    app = run_app(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RanksScreen)
        table = screen.query_one(RankTable)
        last = {s["rank"]: s["last_count"] for s in data["stragglers"]}
        expected = []
        for r in data["ranks"]:
            parts = [r[k] for k in ("compute_us", "comm_us", "memory_us", "idle_us")]
            window = sum(parts)
            expected.append(
                {
                    "rank": str(r["rank"]),
                    "step": fmt.duration(r["step_us_median"]),
                    "GPU busy": fmt.duration(r["gpu_busy_us"]),
                    "comp": fmt.percent(100 * parts[0] / window),
                    "comm": fmt.percent(100 * parts[1] / window),
                    "mem": fmt.percent(100 * parts[2] / window),
                    "idle": fmt.percent(100 * parts[3] / window),
                    "overlap": fmt.percent(r["overlap_pct"]),
                    "host": fmt.duration(r["host_comm_us"]),
                    "last": fmt.count(last.get(r["rank"], 0)),
                    "steps": fmt.count(r["steps"]),
                    "device": r["device"],
                    "file": r["file"],
                }
            )
        cells = [{k: v for k, v in row.items() if k != "slowest"} for row in shown(table)]
        assert cells == expected
        slowest = {s["slowest_rank"] for s in data["distributed"]["steps"]}
        assert {row["rank"] for row in shown(table) if row["slowest"] != "0"} == {str(r) for r in slowest}

        await pilot.press("2")
        by_key = {(c["group"], str(c["seq"])): c for c in data["collectives"]}
        rows = shown(table)
        assert len(rows) == len(by_key)
        for row in rows:
            c = by_key[(row["group"], row["seq"])]
            assert (row["skew"], row["last"], row["wait"], row["ranks"], row["size"]) == (
                fmt.duration(c["arrival_skew_us"]),
                str(c["last_rank"]),
                fmt.duration(c["wait_us"]),
                fmt.count(c["ranks"]),
                fmt.size(c["bytes"]),
            )

        await pilot.press("3")
        kernels = {k["name"]: k for k in data["distributed"]["kernels"]}
        rows = shown(table)
        assert len(rows) == len(kernels)
        for row in rows:
            k = kernels[row["name"]]
            assert (row["min"], row["median"], row["max"], row["max on"], row["calls max"]) == (
                fmt.duration(k["time_min_us"]),
                fmt.duration(k["time_median_us"]),
                fmt.duration(k["time_max_us"]),
                str(k["max_rank"]),
                fmt.count(k["calls_max"]),
            )
            per_rank = [row[f"rank {r['rank']}"] for r in data["ranks"]]
            assert fmt.duration(k["time_max_us"]) in per_rank and fmt.duration(k["time_min_us"]) in per_rank


# ---- one rank ---------------------------------------------------------------------------------------


async def test_enter_on_a_rank_row_opens_that_rank() -> None:
    app = run_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        screen = explorer(app)
        assert screen.choice.rank == 2 and screen.trace.path.name.startswith("rank2.")
        assert "rank 2 of 4" in header_text(app)
        # a row of the collectives table leads to the rank that arrived last
        await pilot.press("R", "2", "enter")
        await settle(pilot)
        assert explorer(app) is screen  # rank 2 again: the explorer kept, not loaded again


@pytest.mark.slow
async def test_switch_ranks_with_the_keys_wrapping_around() -> None:
    app = run_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_rank(pilot, 2)
        visited = []
        for key in ("right_square_bracket", "right_square_bracket", "left_square_bracket"):
            await pilot.press(key)
            await settle(pilot)
            visited.append(explorer(app).choice.rank)
        assert visited == [3, 0, 3]
        assert "rank 3 of 4" in header_text(app)
        assert explorer(app).trace.path.name.startswith("rank3.")
        kept = explorer(app)
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, RanksScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is kept  # back to the same rank, nothing loaded


async def test_switch_ranks_with_the_palette() -> None:
    app = run_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_rank(pilot, 0)
        await pilot.press("ctrl+p", *"switch to rank 1")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert explorer(app).choice.rank == 1 and "rank 1 of 4" in header_text(app)


async def test_one_rank_is_held_at_a_time() -> None:
    app = run_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = await open_rank(pilot, 0)
        await pilot.press("t")  # its tables screen, installed by the explorer
        await settle(pilot)
        await pilot.press("escape")
        trace = weakref.ref(first.trace)
        del first
        await open_rank(pilot, 1)
        await pilot.pause(0.1)
        gc.collect()
        assert trace() is None  # rank 0's trace (its explorer and tables) is gone
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, TablesScreen)
        assert app.screen.tables["ops"].frame.equals(explorer_of(app).trace.ops)  # rank 1's tables


def explorer_of(app: RunApp) -> RankExplorerScreen:
    screen = app.get_screen("rank-explorer")
    assert isinstance(screen, RankExplorerScreen)
    return screen


async def test_leaving_a_loading_rank_drops_it() -> None:
    app = run_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.post_message(OpenRank(3))
        app.post_message(ShowRanks())
        await settle(pilot)
        assert isinstance(app.screen, RanksScreen) and app.current is None
        assert not app.is_screen_installed("rank-explorer")


# ---- two ranks ---------------------------------------------------------------------------------------


async def test_two_marked_ranks_open_in_the_comparison() -> None:
    app = run_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("space", "down", "down", "space", "c")
        await settle(pilot)
        assert isinstance(app.screen, RankDiffScreen)
        assert app.screen.data["a"]["name"].startswith("rank0.")
        assert app.screen.data["b"]["name"].startswith("rank2.")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RanksScreen)
        # one mark and the cursor on another rank: those two
        await pilot.press("down", "c")  # marks are 0 and 2; the cursor is on rank 3
        await settle(pilot)
        assert isinstance(app.screen, RankDiffScreen)
        assert app.screen.data["b"]["name"].startswith("rank2.")


async def test_compare_from_the_palette_with_the_open_rank() -> None:
    app = run_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_rank(pilot, 2)
        await pilot.press("ctrl+p", *"compare rank 2 with rank 0")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RankDiffScreen)
        assert app.screen.data["a"]["name"].startswith("rank2.")
        assert app.screen.data["b"]["name"].startswith("rank0.")
        await pilot.press("escape")
        await settle(pilot)
        assert explorer(app).choice.rank == 2


# ---- the ranks' lanes ----------------------------------------------------------------------------------


async def test_rank_lanes_follow_the_cursors_step_and_mark_the_last_arrival() -> None:
    app = run_app()
    async with app.run_test(size=(140, 44)) as pilot:
        await settle(pilot)
        screen = await open_rank(pilot, 0)
        tree, model = screen.dispatch_tree, screen.model
        step_3 = model.find("ProfilerStep#3", exact=True)[0]
        assert tree.reveal_event(step_3)
        await settle(pilot)
        lanes = screen.query_one(RankLanes)
        assert lanes.step == 3
        assert [lane.rank for lane in lanes.lanes] == [0, 1, 2, 3]
        assert [[a.last for a in lane.arrivals] for lane in lanes.lanes] == [[False] * 2] * 2 + [
            [True] * 2
        ] + [[False] * 2]
        # drawn: rank 2's arrival marks in the "last" colour, the others' in the arrival colour
        last = lanes.component("rank-lanes--last")
        arrival = lanes.component("rank-lanes--arrival")
        for y, lane in enumerate(lanes.lanes, 1):
            marks = [s for s in lanes.render_line(y) if "▼" in s.text]
            assert marks and all(s.style is not None for s in marks)
            wanted = last if lane.rank == 2 else arrival
            assert all(s.style.color == wanted.color for s in marks)  # type: ignore[union-attr]
        # outside any step the lanes say so
        outside = next(k for k in model.tops() if not isinstance(k, int) or k not in model.step_ids)
        path = model.path_of(outside)
        assert path is not None and tree.reveal(path)
        await settle(pilot)
        assert lanes.step is None and lanes.lanes == []


# ---- what `open` starts --------------------------------------------------------------------------------


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    apps: list[Any] = []

    def fake_run(self: Any) -> None:
        apps.append(self)
        self._return_code = 0

    monkeypatch.setattr(TraceApp, "run", fake_run)
    monkeypatch.setattr(RunApp, "run", fake_run)
    return apps


def test_open_starts_the_run_explorer_for_ranks_and_the_explorer_for_one_trace(
    started: list[Any], tmp_path: Path
) -> None:
    def open_(*args: str) -> int:
        return open_module.open_command.main(list(args), standalone_mode=False)  # type: ignore[no-any-return]

    open_(str(GLOO4))
    files = sorted(str(p) for p in GLOO4.glob("*.json.gz"))
    open_(*files[:2])
    open_(str(GLOO4 / "rank*.json.gz"))
    single = tmp_path / "one"
    single.mkdir()
    shutil.copy(files[0], single)
    open_(str(single))  # a directory with one trace: as today
    open_(str(fixture("mlp_eager")))
    assert [type(a).__name__ for a in started] == ["RunApp", "RunApp", "RunApp", "TraceApp", "TraceApp"]
    assert [len(a.target.ranks) for a in started[:3]] == [4, 2, 4]
    assert started[0].run_name == "gloo_4rank_mlp"
    with pytest.raises(Exception, match="--expect checks one trace"):
        open_(str(GLOO4), "--expect", str(tmp_path / "x.toml"))


# ---- a dataset ----------------------------------------------------------------------------------------


async def test_open_dataset_shows_the_runs_tables_and_a_rank_from_its_events(tmp_path: Path) -> None:
    """`open DATASET`: the Ranks screen from the dataset's small tables (the same as the
    directory's); a rank whose trace is gone opens from the dataset's events, and says so."""
    from tracetui.ranks.discover import discover
    from tracetui.ranks.run import convert

    traces = Path(shutil.copytree(GLOO4, tmp_path / "traces"))
    found = discover([traces])
    assert found is not None
    convert(found, tmp_path / "run.parquet")
    next(traces.glob("rank1.*")).unlink()

    directory = run_app()
    async with directory.run_test(size=SIZE) as pilot:
        await settle(pilot)
        expected = shown(directory.screen.query_one(RankTable))
    app = run_app(tmp_path / "run.parquet")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, RanksScreen)
        assert "4 ranks of run.parquet" in str(app.screen.query_one("#ranks-facts").render())
        assert shown(app.screen.query_one(RankTable)) == expected
        screen = await open_rank(pilot, 1)
        assert screen.trace.reader == "dataset" and "from the dataset (no raw args)" in header_text(app)
        assert screen.dispatch_tree.row_count > 0
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert explorer(app).trace.reader != "dataset"  # rank 2's trace is still there


RUN_IN_PROCESSES = """
import asyncio, sys
from tests.app.conftest import settle
from tracetui.app.run_app import RunApp
from tracetui.ranks.discover import resolve


async def main() -> None:
    app = RunApp(resolve([sys.argv[1]]), "run")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        print(type(app.screen).__name__)


if __name__ == "__main__":
    asyncio.run(main())
"""


def test_ranks_load_in_worker_processes_under_the_app(tmp_path: Path) -> None:
    """Textual replaces stderr by a stream without a file descriptor; the worker processes of a big
    run (multiprocessing's resource tracker) need one: it is started before the app takes over."""
    import subprocess
    import sys

    script = tmp_path / "run_in_processes.py"
    script.write_text(RUN_IN_PROCESSES)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(script), str(GLOO4)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={**__import__("os").environ, "PYTHONPATH": str(root), "TRACETUI_WORKERS": "2"},
    )
    assert done.stdout.strip().splitlines()[-1] == "RanksScreen", done.stdout + done.stderr


async def test_outside_text_on_the_ranks_screen_is_shown_as_data(tmp_path: Path) -> None:
    """A run's directory and file names are outside text: direction overrides and zero-width
    characters are written as visible escapes, never obeyed (safetext.shown)."""
    run = tmp_path / "run\u202eevil"
    run.mkdir()
    for path in sorted(GLOO4.glob("*.json.gz")):
        shutil.copy(path, run / path.name.replace(".", ".\u200b", 1))
    app = RunApp(resolve([run]), run.name)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        facts = str(app.screen.query_one("#ranks-facts").render())
        assert "run\\u202eevil" in facts and "\u202e" not in facts
        table = app.screen.query_one(RankTable)
        drawn = "".join(segment.text for segment in table._row_strip(1, 400))
        assert "\\u200b" in drawn and "\u200b" not in drawn
