"""Snapshots of the timeline full screen (SVGs in __snapshots__), each at 80×24 and 200×50: the whole
trace, a GEMM zoomed to with its launch flow, a range and its table, a run's rank lanes, and the
critical path overlaid."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from tests.app.conftest import fixture, keys, settle
from tests.ranks.conftest import GLOO4
from tracetui.app.app import TraceApp
from tracetui.app.rank_messages import OpenRank
from tracetui.app.run_app import RunApp
from tracetui.app.widgets.timeline import Timeline
from tracetui.ranks.discover import resolve
from tracetui.views.timeline.lanes import select

TRAIN = fixture("mlp_train_tbhandler_stack_memory.pt.trace")
SIZES = pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])


@SIZES
def test_whole_trace(snap_compare, size: tuple[int, int]) -> None:
    """A training step's trace: both threads, both streams, memory; the tree cursor's kernel and its flows."""
    assert snap_compare(TraceApp(TRAIN), terminal_size=size, run_before=keys("v", "0"))


@SIZES
def test_zoomed_gemm_with_its_launch_flow(snap_compare, size: tuple[int, int]) -> None:
    """The explorer opens on a GEMM kernel: ``f`` fits it with its op and launch call; the main thread
    expanded shows aten::mm → cuLaunchKernelEx above the kernel."""
    assert snap_compare(
        TraceApp(fixture("mlp_eager")), terminal_size=size, run_before=keys("v", "space", "f")
    )


@SIZES
def test_range_and_its_table(snap_compare, size: tuple[int, int]) -> None:
    """``b`` … ``e`` over a stretch of the step: the range shaded, its table by total time under it."""

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot)
        await pilot.press("v", "0")
        await settle(pilot)
        timeline = pilot.app.screen.query_one(Timeline)
        assert timeline.window is not None
        timeline.cursor_ns = timeline.window.start_ns + timeline.window.span * 2 // 3
        await pilot.press("b", *["right"] * (timeline.cells // 6), "e")
        await settle(pilot)

    assert snap_compare(TraceApp(TRAIN), terminal_size=size, run_before=run_before)


@SIZES
def test_rank_lanes_of_a_run(snap_compare, size: tuple[int, int]) -> None:
    """Rank 2 of a gloo run of 4: its main thread and stream, then every rank's collectives on its
    clock (rank 2, the straggler, arrives last: the others wait for it)."""

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot)
        pilot.app.post_message(OpenRank(2))
        await settle(pilot)
        await pilot.press("v", "0")
        await settle(pilot)
        timeline = pilot.app.screen.query_one(Timeline)
        assert timeline.model is not None
        timeline.set_layout(select(timeline.model.lanes, "CPU python3,GPU 0 s7,rank"))
        await settle(pilot)

    app = RunApp(resolve([GLOO4]), GLOO4.name)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@SIZES
def test_critical_path_overlay(snap_compare, size: tuple[int, int]) -> None:
    """``r`` over the whole trace: the events on the steps' critical paths marked in amber on their
    lanes, the path's steps and length in the header."""
    assert snap_compare(TraceApp(TRAIN), terminal_size=size, run_before=keys("v", "0", "r"))


def test_counter_lanes(snap_compare) -> None:
    """A trace with hardware counters (``"ph":"C"``): a lane per series under the streams, each the
    counter's level over time, its range in the header."""

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot)
        await pilot.press("v", "0")
        await settle(pilot)
        timeline = pilot.app.screen.query_one(Timeline)
        assert timeline.model is not None
        timeline.set_layout(select(timeline.model.lanes, "GPU 0 s7,counter"))
        await settle(pilot)

    app = TraceApp(fixture("synthetic_counters"))
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
