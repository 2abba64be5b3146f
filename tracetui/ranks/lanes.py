"""A run's ranks as timeline lanes (:mod:`tracetui.views.timeline`), on the open rank's clock.

One lane per rank: collapsed, its collectives (from its arrival to the end of its wait and the
transfer; the rank that arrived last, whom the others waited for, in the error colour); expanded, its
step windows above them. Times are aligned as the cross-rank analysis aligns them: on corrected
clocks when the ranks' clocks were corrected (:func:`tracetui.ranks.analysis.clock_offsets`), then
moved onto the open rank's own clock, so that its own lanes and the ranks' line up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.ranks.collectives import pretty
from tracetui.views.timeline.lanes import ArrayRow, Lane, Row

if TYPE_CHECKING:
    from tracetui.ranks.run import RunReport

US = 1000


def offsets_ns(report: RunReport) -> dict[int, int]:
    """Per rank, its clock's offset (own clock − corrected clock), in ns; none when not corrected."""
    analysis = report.analysis
    if not analysis.clocks_corrected:
        return {}
    rows = analysis.clock_offsets.select("rank", (pl.col("offset_us") * US).round().cast(pl.Int64))
    return dict(rows.iter_rows())  # type: ignore[arg-type]


def rank_lanes(report: RunReport, current: int | None) -> list[Lane]:
    """A lane per rank of the run, in rank order, on rank ``current``'s clock."""
    analysis = report.analysis
    offsets = offsets_ns(report)
    mine = offsets.get(current, 0) if current is not None else 0
    last = analysis.collectives.select("group", "seq", "last_rank")
    arrivals = analysis.arrivals.join(last, on=["group", "seq"], how="left").sort("rank", "arrival_ns")
    by_rank = arrivals.partition_by("rank", as_dict=True)
    lanes = []
    for rank in analysis.ranks["rank"].to_list():
        shift = mine - offsets.get(rank, 0)  # own clock → corrected → the open rank's clock
        steps = analysis.rank_steps.filter(pl.col("rank") == rank).sort("window_start_ns")
        step_row = ArrayRow(
            [t + shift for t in steps["window_start_ns"].to_list()],
            [t + shift for t in steps["window_end_ns"].to_list()],
            ["step"] * steps.height,
            steps["name"].to_list(),
        )
        found = by_rank.get((rank,))
        waits = found if found is not None else arrivals.clear()
        starts = [t + mine for t in waits["arrival_ns"].to_list()]  # arrivals are on corrected clocks
        collective_row = ArrayRow(
            starts,
            [t + d for t, d in zip(starts, waits["dur_ns"].to_list(), strict=True)],
            ["last" if r == rank else "collective" for r in waits["last_rank"].to_list()],
            [pretty(name) for name in waits["name"].to_list()],
        )
        label = f"rank {rank}" + (" (open)" if rank == current else "")
        summary = (Row("", collective_row),) if waits.height else (Row("", step_row),)
        detail = (Row("", step_row), Row("collectives", collective_row)) if waits.height else ()
        lanes.append(Lane(f"rank:{rank}", label, "rank", summary, detail))
    return lanes
