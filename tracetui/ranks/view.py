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

Numbers stay numbers (µs, %, counts, bytes: each column says which); :func:`display_columns`
says how each unit is written (:mod:`tracetui.formatting`, as every other surface writes it), and
:func:`run_facts` / :func:`run_notes` what the Ranks screen says about the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui import formatting as fmt
from tracetui.ranks.clocks import applied_ns
from tracetui.ranks.collectives import pretty
from tracetui.safetext import clean
from tracetui.views import table_spec as table_views

if TYPE_CHECKING:
    from tracetui.ranks.run import RunReport


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
    width: int = 0  # cells; 0: as wide as the unit needs (text: share the rest)


@dataclass(frozen=True)
class TableView:
    """A table as data: ``frame`` (one row per item, ``rank`` column = the rank a row leads to),
    ``columns`` in display order, the ranks to highlight, a line to show above it and one saying
    what the columns mean."""

    frame: pl.DataFrame
    columns: tuple[Column, ...]
    highlight: tuple[int, ...] = ()
    caption: str = ""
    legend: str = ""


RANK_COLUMNS = (  # the figures first, so that 80 columns show them; file and device at the end
    Column("rank", "rank", "rank"),
    Column("step_us_median", "step", "us", worse_high=True),
    Column("gpu_busy_us", "GPU busy", "us"),
    Column("compute_pct", "comp", "pct"),
    Column("comm_pct", "comm", "pct", worse_high=True),
    Column("memory_pct", "mem", "pct"),
    Column("idle_pct", "idle", "pct", worse_high=True),
    Column("overlap_pct", "overlap", "pct"),
    Column("host_comm_us", "host", "us"),
    Column("last_arrivals", "last", "count", worse_high=True),
    Column("slowest_steps", "slowest", "count", worse_high=True),
    Column("steps", "steps", "count"),
    Column("device", "device", "text", width=24),
    Column("file", "file", "text"),
)
PARTS = ("compute", "comm", "memory", "idle")
RANK_LEGEND = (
    "step: median step time · GPU busy: whole trace · comp / comm / mem / idle: compute, communication, "
    "memcpy/memset and idle share of the steps' GPU time · overlap: collective time spent computing too · "
    "host: CPU time in collectives · last: collectives it arrived at last · slowest: steps it was the "
    "slowest in"
)
COLLECTIVE_LEGEND = (
    "seq: n-th collective of its group · skew: last arrival − first · last: the rank that arrived last · "
    "wait: the time the other ranks waited for it, summed"
)


def ranks_table(report: RunReport) -> TableView:
    """The Ranks table: per rank the figures of ``summary`` (shares of the steps' GPU time), the
    straggler highlighted, the verdict (and why the straggler is late) as caption."""
    analysis = report.analysis
    window = pl.sum_horizontal(f"{part}_us" for part in PARTS)  # as the summary's shares
    share = [
        pl.when(window > 0).then(100.0 * pl.col(f"{part}_us") / window).alias(f"{part}_pct") for part in PARTS
    ]
    frame = analysis.ranks.with_columns(share).select([c.key for c in RANK_COLUMNS])
    highlight = () if analysis.straggler is None else (analysis.straggler.rank,)
    caption = analysis.verdict
    if analysis.cause is not None:  # why the straggler is late: the summary's "Why:" line
        caption += f"\nwhy: {analysis.cause.sentence}"
    return TableView(frame, RANK_COLUMNS, highlight, caption, RANK_LEGEND)


COLLECTIVE_COLUMNS = (
    Column("group", "group", "text", width=12),
    Column("seq", "seq", "count"),
    Column("step", "step", "count"),
    Column("collective", "collective", "text", width=16),
    Column("bytes", "size", "bytes"),
    Column("ranks", "ranks", "count"),
    Column("arrival_skew_us", "skew", "us", worse_high=True),
    Column("last_rank", "last", "rank"),
    Column("wait_us", "wait", "us", worse_high=True),
)


def collectives_table(report: RunReport) -> TableView:
    """Aligned collectives, the costliest waits first; a row leads to the rank that came last."""
    collectives = report.analysis.collectives
    names = collectives["name"].unique().to_list()
    frame = (
        collectives.sort(["wait_us", "group", "seq"], descending=[True, False, False])
        .with_columns(collective=pl.col("name").replace_strict({n: pretty(n) for n in names}, default=None))
        .select([c.key for c in COLLECTIVE_COLUMNS])
        .with_columns(rank=pl.col("last_rank"))
    )
    return TableView(frame, COLLECTIVE_COLUMNS, caption=report.analysis.verdict, legend=COLLECTIVE_LEGEND)


KERNEL_COLUMNS = (
    Column("short", "kernel", "text", width=36),
    Column("ranks", "ranks", "count"),
    Column("calls_min", "calls min", "count"),
    Column("calls_max", "calls max", "count"),
    Column("time_min_us", "min", "us"),
    Column("time_median_us", "median", "us"),
    Column("time_max_us", "max", "us", worse_high=True),
    Column("min_rank", "min on", "rank"),
    Column("max_rank", "max on", "rank"),
)
MAX_RANK_COLUMNS = 16  # the kernel table's per-rank time columns; beyond, the spread only


def kernels_table(report: RunReport) -> TableView:
    """GPU work across ranks: per name the spread over ranks, then its time on each rank (up to
    :data:`MAX_RANK_COLUMNS` ranks), then the full name; a row leads to the rank that spent the
    most time in it."""
    analysis = report.analysis
    spread = analysis.kernels
    ranks = analysis.ranks["rank"].to_list()
    shown = ranks[:MAX_RANK_COLUMNS]
    per_rank = [Column(f"rank_{r}_us", f"rank {r}", "us") for r in shown]
    if shown and spread.height:
        wide = (
            analysis.rank_kernels.filter(pl.col("rank").is_in(shown))
            .with_columns(column=pl.format("rank_{}_us", "rank"))
            .pivot("column", index="name", values="total_us")
        )
        spread = spread.join(wide, on="name", how="left", maintain_order="left").with_columns(
            pl.col(c.key).fill_null(0.0) if c.key in wide.columns else pl.lit(0.0).alias(c.key)
            for c in per_rank
        )
    else:
        spread = spread.with_columns(pl.lit(None, pl.Float64).alias(c.key) for c in per_rank)
    columns = (*KERNEL_COLUMNS, *per_rank, Column("name", "name", "text"))
    frame = spread.select([c.key for c in columns]).with_columns(rank=pl.col("max_rank"))
    legend = (
        "GPU work by name: its time on each rank and the spread, min / median / max over the ranks "
        "(a rank without it counts 0) · min on / max on: the rank with the least / most"
    )
    if len(ranks) > len(shown):
        legend += f" · the first {len(shown)} of {len(ranks)} ranks have a column"
    return TableView(frame, columns, caption=report.analysis.verdict, legend=legend)


# ---- how a unit is written ------------------------------------------------------------------------

UNIT_WIDTHS = {"rank": 4, "us": 9, "pct": 4, "count": 5, "bytes": 9, "text": 0}


def _rank_text(value: Any) -> str:
    return str(value)


UNIT_FORMATS: dict[str, Callable[[Any], str]] = {
    "rank": _rank_text,
    "us": fmt.duration,
    "pct": fmt.percent,
    "count": fmt.count,
    "bytes": fmt.size,
    "text": str,  # outside text: the table widget shows it as terminals may (safetext.shown)
}


def display_columns(table: TableView) -> list[table_views.Column]:
    """The table's columns as the explorer's tables draw them: width, alignment and the formatter
    of each unit (numbers right-aligned, text left)."""
    return [
        table_views.Column(
            column.key,
            column.header,
            column.width
            or (max(len(column.header), UNIT_WIDTHS[column.unit]) if column.unit != "text" else 0),
            "left" if column.unit == "text" else "right",
            UNIT_FORMATS[column.unit],
        )
        for column in table.columns
    ]


# ---- what the Ranks screen says about the run -------------------------------------------------------


def run_facts(report: RunReport, name: str) -> str:
    """``4 ranks of gloo_4rank_mlp · rank from distributedInfo · world size 4 · backend gloo``."""
    facts = report.facts
    parts = [f"{len(facts['ranks'])} ranks of {clean(name)}"]
    sources = sorted({r["source"] for r in facts["ranks"]})
    parts.append(f"rank from {' and '.join(sources)}")
    if facts["world_size"] is not None:
        parts.append(f"world size {facts['world_size']}")
    if facts["backend"]:
        parts.append(f"backend {clean(str(facts['backend']))}")
    return " · ".join(parts)


def run_notes(report: RunReport) -> list[str]:
    """What the user should know about the run: missing, failed, duplicated, skipped files, and
    the alignment's notes (as the summary lists them)."""
    facts = report.facts
    notes = []
    if facts["missing"]:
        notes.append(f"missing: rank {', '.join(map(str, facts['missing']))} (no trace)")
    notes += [f"rank {f['rank']} not loaded: {clean(f['error'])}" for f in facts["failed"]]
    notes += [
        f"another run of rank {d['rank']} not used (the newest is): {clean(Path(d['file']).name)}"
        for d in facts["duplicates"]
    ]
    notes += [f"skipped {clean(Path(s['file']).name)}: {clean(s['why'])}" for s in facts["skipped"]]
    return notes + [clean(n) for n in (*facts["notes"], *report.analysis.notes)]


@dataclass(frozen=True)
class Arrival:
    """A rank reaching a collective, measured from the start of its step window."""

    at_ns: int
    dur_ns: int  # how long the collective took on this rank (its wait for the others included)
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


def step_lanes(report: RunReport, step: int) -> list[StepLane]:
    """For ``step``: one lane per rank that has it, in rank order. Arrivals are measured on the
    rank's own clock (a corrected clock's offset is taken back out), like its step window."""
    analysis = report.analysis
    windows = analysis.rank_steps.filter(pl.col("step") == step)
    arrivals = analysis.arrivals.filter(pl.col("step") == step).join(
        analysis.collectives.select("group", "seq", "last_rank"), on=["group", "seq"], how="left"
    )
    if analysis.clocks_corrected:
        arrivals = arrivals.join(applied_ns(analysis.clock_offsets), on="rank", how="left").with_columns(
            pl.col("arrival_ns") + pl.col("offset_ns").fill_null(0)
        )
    by_rank = arrivals.sort("arrival_ns").partition_by("rank", as_dict=True)
    lanes = []
    for row in windows.sort("rank").iter_rows(named=True):
        start = row["window_start_ns"]
        mine = by_rank.get((row["rank"],))
        marks = tuple(
            Arrival(a["arrival_ns"] - start, a["dur_ns"], a["name"], a["last_rank"] == row["rank"])
            for a in ([] if mine is None else mine.iter_rows(named=True))
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


def pick_lanes(lanes: list[StepLane], current: int | None, limit: int) -> list[StepLane]:
    """At most ``limit`` lanes, in rank order: the current rank's, those that arrived last at a
    collective of the step, the longest steps, then the lowest ranks."""
    if len(lanes) <= limit:
        return lanes
    order = sorted(
        lanes,
        key=lambda lane: (
            lane.rank != current,
            not any(a.last for a in lane.arrivals),
            -lane.length_ns,
            lane.rank,
        ),
    )
    return sorted(order[:limit], key=lambda lane: lane.rank)


RUN_TABLES = ("ranks", "collectives", "kernels")
RUN_TABLE_TITLES = {"ranks": "Ranks", "collectives": "Collectives", "kernels": "Kernels across ranks"}


def run_tables(report: RunReport) -> dict[str, TableView]:
    """The Ranks screen's three tables, keyed as :data:`RUN_TABLES`."""
    return {
        "ranks": ranks_table(report),
        "collectives": collectives_table(report),
        "kernels": kernels_table(report),
    }
