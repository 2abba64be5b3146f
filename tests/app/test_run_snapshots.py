"""Snapshot tests of a distributed run's views (SVGs in __snapshots__): the Ranks table (wide and at
80×24), the collectives, the kernels across ranks, a rank's explorer with the switcher in its
header, and the ranks' lanes of a step. Names on screen are the fixtures' file names only."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from tests.app.conftest import WIDE, keys, settle
from tests.ranks.conftest import GLOO4, NCCL2
from tracetui.app.rank_messages import OpenRank
from tracetui.app.run_app import RunApp
from tracetui.app.screens.rank_explorer import RankExplorerScreen
from tracetui.ranks.discover import resolve


def run_app(source: Path = GLOO4) -> RunApp:
    return RunApp(resolve([source]), source.name)


def test_ranks_table(snap_compare) -> None:
    """gloo, 4 ranks: rank 2 (the straggler, in red) arrives last at every all-reduce."""
    assert snap_compare(run_app(), terminal_size=WIDE, run_before=settle)


def test_ranks_table_80x24(snap_compare) -> None:
    """80×24: the figures first; file and device scroll off to the right."""
    assert snap_compare(run_app(), terminal_size=(80, 24), run_before=settle)


def test_ranks_table_nccl_two_ranks_marked(snap_compare) -> None:
    """NCCL, 2 ranks on 2 GPUs: rank 1 the straggler (last at 4 of 4); both ranks marked to compare."""
    assert snap_compare(run_app(NCCL2), terminal_size=WIDE, run_before=keys("space", "down", "space"))


def test_collectives_table(snap_compare) -> None:
    """The all-reduces aligned across ranks, the costliest wait first."""
    assert snap_compare(run_app(), terminal_size=WIDE, run_before=keys("2"))


def test_kernels_across_ranks(snap_compare) -> None:
    """GPU work by name: time on each rank, and its spread over the ranks."""
    assert snap_compare(run_app(), terminal_size=WIDE, run_before=keys("3"))


def test_rank_header_with_the_switcher(snap_compare) -> None:
    """Enter on rank 0, then ``]``: rank 1's explorer, "rank 1 of 4" in the header."""
    assert snap_compare(run_app(), terminal_size=WIDE, run_before=keys("enter", "right_square_bracket"))


def test_rank_lanes_of_a_step(snap_compare) -> None:
    """Rank 2's explorer on ProfilerStep#3: one lane per rank aligned at its step start, rank 2's
    arrivals marked last."""

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot)
        pilot.app.post_message(OpenRank(2))
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, RankExplorerScreen)
        step = screen.model.find("ProfilerStep#3", exact=True)[0]
        assert screen.dispatch_tree.reveal_event(step)
        await settle(pilot)

    assert snap_compare(run_app(), terminal_size=(140, 44), run_before=run_before)
