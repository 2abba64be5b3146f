"""View data for the explorer's rank switcher, Ranks table and aligned timeline lanes."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import pytest

from tests.ranks import synthetic
from tests.ranks.conftest import GLOO4
from tracetui import formatting as fmt
from tracetui.ranks import view
from tracetui.ranks.discover import resolve
from tracetui.ranks.run import report_for


def test_rank_choices_and_switching(gloo_report) -> None:  # type: ignore[no-untyped-def]
    choices = view.rank_choices(gloo_report)
    assert [c.rank for c in choices] == [0, 1, 2, 3]
    assert choices[2].title == "rank 2 of 4" and choices[2].path.name.startswith("rank2.")
    assert choices[0].source == "distributedInfo"
    assert view.step_rank(choices, 3, +1).rank == 0 and view.step_rank(choices, 0, -1).rank == 3


def test_ranks_table(gloo_report) -> None:  # type: ignore[no-untyped-def]
    table = view.ranks_table(gloo_report)
    assert [c.key for c in table.columns] == table.frame.columns
    assert table.frame["rank"].to_list() == [0, 1, 2, 3]
    assert table.highlight == (2,) and table.caption.startswith("rank 2 arrives last")
    shares = table.frame.select("compute_pct", "comm_pct", "memory_pct", "idle_pct").sum_horizontal()
    assert shares.to_list() == pytest.approx([100.0] * 4)
    ranks = gloo_report.analysis.ranks
    assert table.frame["comm_pct"][2] == pytest.approx(100 * ranks["comm_us"][2] / ranks["window_us"][2])


def test_collectives_and_kernels_tables(gloo_report) -> None:  # type: ignore[no-untyped-def]
    collectives = view.collectives_table(gloo_report)
    assert collectives.frame["wait_us"].is_sorted(descending=True)
    assert set(collectives.frame["rank"]) == {2}
    kernels = view.kernels_table(gloo_report)
    assert kernels.frame.height == 25 and "rank" in kernels.frame.columns


def test_step_lanes_are_aligned_at_step_starts(gloo_report) -> None:  # type: ignore[no-untyped-def]
    assert gloo_report.analysis.steps["step"].to_list() == [2, 3, 4]
    lanes = view.step_lanes(gloo_report, 3)
    assert [lane.rank for lane in lanes] == [0, 1, 2, 3]
    steps = gloo_report.analysis.rank_steps
    for lane in lanes:
        row = steps.filter((steps["rank"] == lane.rank) & (steps["step"] == 3)).row(0, named=True)
        assert lane.start_ns == row["window_start_ns"]
        assert lane.length_ns == row["window_end_ns"] - row["window_start_ns"]
        total = lane.compute_us + lane.comm_us + lane.memory_us + lane.idle_us
        assert total * 1000 == pytest.approx(lane.length_ns)
        assert len(lane.arrivals) == 2  # two all-reduces per step
        assert all(0 <= a.at_ns < lane.length_ns for a in lane.arrivals)
        assert all(a.last == (lane.rank == 2) for a in lane.arrivals)
    # rank 2 reaches them later into its step than the others
    first = {lane.rank: lane.arrivals[0].at_ns for lane in lanes}
    assert max(first, key=first.__getitem__) == 2


def test_step_lanes_of_a_shifted_clock_stay_on_the_ranks_own_clock(
    gloo_report,
    derive: Callable,  # type: ignore[no-untyped-def, type-arg]
) -> None:
    """Arrivals are corrected for the comparison across ranks, but a lane is drawn on its rank's own
    clock: a rank whose clock is 250 ms off has the same lane as before."""
    shifted = derive("shifted", GLOO4, lambda r, d: synthetic.shift_clock(d, 250_000_000) if r == 3 else d)
    report = report_for(resolve([shifted]), summary=False)
    assert report.analysis.clocks_corrected
    moved, original = view.step_lanes(report, 3), view.step_lanes(gloo_report, 3)
    assert [lane.arrivals for lane in moved] == [lane.arrivals for lane in original]
    assert moved[3].start_ns == original[3].start_ns + 250_000_000


def test_pick_lanes_keeps_the_current_rank_and_the_last_arrivers(gloo_report) -> None:  # type: ignore[no-untyped-def]
    lanes = view.step_lanes(gloo_report, 3)
    assert view.pick_lanes(lanes, 0, 8) == lanes
    assert [lane.rank for lane in view.pick_lanes(lanes, 3, 2)] == [2, 3]  # rank 2 came last
    assert [lane.rank for lane in view.pick_lanes(lanes, 2, 1)] == [2]


def test_kernels_table_has_each_ranks_time(gloo_report) -> None:  # type: ignore[no-untyped-def]
    table = view.kernels_table(gloo_report)
    per_rank = gloo_report.analysis.rank_kernels
    assert [c.header for c in table.columns if c.key.startswith("rank_")] == [f"rank {r}" for r in range(4)]
    for row in table.frame.iter_rows(named=True):
        for rank in range(4):
            mine = per_rank.filter((pl.col("rank") == rank) & (pl.col("name") == row["name"]))["total_us"]
            assert row[f"rank_{rank}_us"] == (mine[0] if len(mine) else 0.0)
        times = [row[f"rank_{r}_us"] for r in range(4)]
        assert (row["time_min_us"], row["time_max_us"]) == (min(times), max(times))
        assert row["short"]  # the decoded name


def test_display_columns_write_each_unit_as_every_surface_does(gloo_report) -> None:  # type: ignore[no-untyped-def]
    columns = {c.key: c for c in view.display_columns(view.ranks_table(gloo_report))}
    assert columns["step_us_median"].text(33212.832) == fmt.duration(33212.832) == "33.21 ms"
    assert columns["idle_pct"].text(93.6) == "94%" and columns["idle_pct"].align == "right"
    assert columns["file"].align == "left" and columns["file"].width == 0  # the rest of the width
    assert columns["rank"].text(None) == ""
    collectives = {c.key: c for c in view.display_columns(view.collectives_table(gloo_report))}
    assert collectives["bytes"].text(16 * 2**20) == "16.0 MiB"


def test_run_facts_and_notes(gloo_report, derive: Callable) -> None:  # type: ignore[no-untyped-def, type-arg]
    assert view.run_facts(gloo_report, "gloo_4rank_mlp") == (
        "4 ranks of gloo_4rank_mlp · rank from distributedInfo · world size 4 · backend gloo"
    )
    assert view.run_notes(gloo_report) == []
    missing = derive("missing", GLOO4, lambda r, d: None if r == 1 else d)
    notes = view.run_notes(report_for(resolve([missing]), summary=False))
    assert notes[0] == "missing: rank 1 (no trace)"
    assert any("fewer ranks than their process group" in note for note in notes)
