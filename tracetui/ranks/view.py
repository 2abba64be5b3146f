"""View data for the explorer's many-ranks views, as plain data (no widgets, no Textual).

* the **rank switcher**: :class:`RankChoice` per rank (its trace, "rank 2 of 4"), and the next or
  previous one (:func:`rank_choices`, :func:`step_rank`);
* the **Ranks table**: :class:`TableView` (frame, columns with their units, the row's rank, the
  ranks to highlight) from :func:`ranks_table`, and the same for the aligned collectives
  (:func:`collectives_table`) and the kernels across ranks (:func:`kernels_table`);
* the **timeline, one lane per rank aligned at step starts**: :func:`step_lanes` gives, for one
  step, each rank's step window measured from its own start, its GPU-time breakdown and where it
  arrived at each collective (and whether last). Finer lanes (each rank's busy intervals) come from
  the rank's own trace, or from a dataset's ``kernels`` table, windowed to the step.

Numbers stay numbers (µs, %, counts, bytes: each column says which); the widget formats them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from tracetui.ranks.run import RunReport

US = 1000


@dataclass(frozen=True)
class RankChoice:
    """One rank of the run: where its trace is and how the header names it."""

    rank: int
    path: Path
    source: str  # where the rank number came from: distributedInfo, file name or order
    position: int  # 0-based, in rank order
    count: int  # ranks in the run (loaded)
    world_size: int | None

    @property
    def title(self) -> str:
        """``rank 2 of 4`` (of the world size when the traces say it)."""
        return f"rank {self.rank} of {self.world_size or self.count}"


def rank_choices(report: RunReport) -> list[RankChoice]:
    """Every rank of the run, in rank order."""
    files = sorted(report.facts["ranks"], key=lambda f: f["rank"])
    return [
        RankChoice(f["rank"], Path(f["file"]), f["source"], i, len(files), report.facts["world_size"])
        for i, f in enumerate(files)
    ]


def step_rank(choices: list[RankChoice], current: int, delta: int) -> RankChoice:
    """The rank ``delta`` places after ``current`` (wrapping around)."""
    position = next((c.position for c in choices if c.rank == current), 0)
    return choices[(position + delta) % len(choices)]


@dataclass(frozen=True)
class Column:
    """A column: frame column, header, unit (``rank``, ``text``, ``us``, ``pct``, ``count``,
    ``bytes``) and whether higher is worse (what the table highlights)."""

    key: str
    header: str
    unit: str
    worse_high: bool = False


@dataclass(frozen=True)
class TableView:
    """A table as data: ``frame`` (one row per item, ``rank`` column = the rank a row leads to),
    ``columns`` in display order, the ranks to highlight, and a line to show above it."""

    frame: pl.DataFrame
    columns: tuple[Column, ...]
    highlight: tuple[int, ...] = ()
    caption: str = ""


RANK_COLUMNS = (
    Column("rank", "rank", "rank"),
    Column("device", "device", "text"),
    Column("steps", "steps", "count"),
    Column("step_us_median", "step", "us", worse_high=True),
    Column("gpu_busy_us", "GPU busy", "us"),
    Column("compute_pct", "compute", "pct"),
    Column("comm_pct", "comm", "pct", worse_high=True),
    Column("memory_pct", "memory", "pct"),
    Column("idle_pct", "idle", "pct", worse_high=True),
    Column("overlap_pct", "overlap", "pct"),
    Column("host_comm_us", "host comm", "us"),
    Column("slowest_steps", "slowest", "count", worse_high=True),
    Column("last_arrivals", "last", "count", worse_high=True),
    Column("file", "file", "text"),
)


def ranks_table(report: RunReport) -> TableView:
    """The Ranks table: per rank the figures of ``summary`` (shares of the steps' GPU time), the
    straggler highlighted, the verdict as caption."""
    analysis = report.analysis
    window = pl.col("window_us")
    share = [
        pl.when(window > 0).then(100.0 * pl.col(f"{part}_us") / window).alias(f"{part}_pct")
        for part in ("compute", "comm", "memory", "idle")
    ]
    frame = analysis.ranks.with_columns(share).select([c.key for c in RANK_COLUMNS])
    straggler = analysis.stragglers.head(1)["rank"].to_list() if "arrives last" in analysis.verdict else []
    return TableView(frame, RANK_COLUMNS, tuple(straggler), analysis.verdict)


COLLECTIVE_COLUMNS = (
    Column("group", "group", "text"),
    Column("seq", "seq", "count"),
    Column("step", "step", "count"),
    Column("name", "collective", "text"),
    Column("bytes", "size", "bytes"),
    Column("ranks", "ranks", "count"),
    Column("arrival_skew_us", "skew", "us", worse_high=True),
    Column("last_rank", "last", "rank"),
    Column("wait_us", "wait", "us", worse_high=True),
)


def collectives_table(report: RunReport) -> TableView:
    """Aligned collectives, the costliest waits first; a row leads to the rank that came last."""
    frame = (
        report.analysis.collectives.sort(["wait_us", "group", "seq"], descending=[True, False, False])
        .select([c.key for c in COLLECTIVE_COLUMNS])
        .with_columns(rank=pl.col("last_rank"))
    )
    return TableView(frame, COLLECTIVE_COLUMNS, caption=report.analysis.verdict)


KERNEL_COLUMNS = (
    Column("name", "kernel", "text"),
    Column("ranks", "ranks", "count"),
    Column("calls_min", "calls min", "count"),
    Column("calls_max", "calls max", "count"),
    Column("time_min_us", "min", "us"),
    Column("time_median_us", "median", "us"),
    Column("time_max_us", "max", "us", worse_high=True),
    Column("max_rank", "max on", "rank"),
)


def kernels_table(report: RunReport) -> TableView:
    """GPU work across ranks; a row leads to the rank that spent the most time in it."""
    frame = report.analysis.kernels.select([c.key for c in KERNEL_COLUMNS]).with_columns(
        rank=pl.col("max_rank")
    )
    return TableView(frame, KERNEL_COLUMNS)


@dataclass(frozen=True)
class Arrival:
    """A rank reaching a collective, measured from the start of its step window."""

    at_ns: int
    name: str
    last: bool


@dataclass(frozen=True)
class StepLane:
    """One rank's lane for one step, aligned at the step's start (0 = this rank's step start)."""

    rank: int
    step: int | None
    start_ns: int  # the step window's start on this rank's clock (the alignment origin)
    length_ns: int
    compute_us: float
    comm_us: float
    memory_us: float
    idle_us: float
    arrivals: tuple[Arrival, ...]


def lane_steps(report: RunReport) -> list[int]:
    """The step numbers the lanes can show (those of two or more ranks)."""
    return report.analysis.steps["step"].to_list()


def step_lanes(report: RunReport, step: int) -> list[StepLane]:
    """For ``step``: one lane per rank that has it, in rank order."""
    analysis = report.analysis
    windows = analysis.rank_steps.filter(pl.col("step") == step)
    arrivals = analysis.arrivals.filter(pl.col("step") == step).join(
        analysis.collectives.select("group", "seq", "last_rank"), on=["group", "seq"], how="left"
    )
    lanes = []
    for row in windows.sort("rank").iter_rows(named=True):
        start = row["window_start_ns"]
        mine = arrivals.filter(pl.col("rank") == row["rank"]).sort("arrival_ns")
        marks = tuple(
            Arrival(a["arrival_ns"] - start, a["name"], a["last_rank"] == row["rank"])
            for a in mine.iter_rows(named=True)
        )
        lanes.append(
            StepLane(
                rank=row["rank"],
                step=row["step"],
                start_ns=start,
                length_ns=row["window_end_ns"] - start,
                compute_us=row["compute_us"],
                comm_us=row["comm_us"],
                memory_us=row["memory_us"],
                idle_us=row["idle_us"],
                arrivals=marks,
            )
        )
    return lanes
