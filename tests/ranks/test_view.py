"""View data for the explorer's rank switcher, Ranks table and aligned timeline lanes."""

from __future__ import annotations

import pytest

from tracetui.ranks import view


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
    assert view.lane_steps(gloo_report) == [2, 3, 4]
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
