"""Across ranks: the Ranks table, collectives aligned, stragglers and the kernel breakdown.

Reads only the small per-rank tables (:mod:`tracetui.ranks.tables`), as polars lazy frames, so the
same code serves a directory of traces and a Parquet dataset of any number of ranks.

**Alignment.** The n-th collective of a process group is the same collective on every rank: the key
is (group, step, n-th in the step) — steps are the profiler's iteration numbers, the same on every
rank, so a rank whose profile holds one more step, or one collective more in a step, misaligns
nothing else — or (group, ``Seq``) where the trace writes the collective's sequence number. A
collective whose name, element counts or dtype differ between ranks is flagged ``mismatch``.

**Arrival.** A rank arrives at a collective when it starts it: the NCCL kernel's start on its GPU,
the ``gloo:*`` span's start on its CPU. For each collective: arrival skew = last − first arrival,
``last_rank`` = who arrived last, ``wait_us`` = the time the others spent waiting for it (the sum
over ranks of last arrival − own arrival).

**Clocks.** Ranks on different hosts have different clocks. Collectives end together on every
rank, so each rank's offset is estimated from the ends of its collectives and applied where it
exceeds its spread (:mod:`tracetui.ranks.clocks`); arrivals are then on the reference ranks' clock.

**Straggler.** The rank whose late arrivals cost the others most, named only past the thresholds of
:mod:`tracetui.ranks.thresholds` (:mod:`tracetui.ranks.straggler`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tracetui.insight.kernel_names import kernel_name_columns
from tracetui.ranks import clocks as clock
from tracetui.ranks import straggler as lag
from tracetui.ranks.cause import Cause, straggler_cause
from tracetui.trace.stats import most_common

US = 1000.0
SIGNATURE = ("name", "in_nelems", "out_nelems", "dtype")


@dataclass
class Analysis:
    """Everything shown about a rank set, as tables (and the verdict line)."""

    ranks: pl.DataFrame  # one row per rank: the Ranks table
    steps: pl.DataFrame  # per step number: the slowest and fastest rank
    rank_steps: pl.DataFrame  # per rank and step: its window and GPU-time breakdown
    collectives: pl.DataFrame  # one row per aligned collective
    arrivals: pl.DataFrame  # one row per (collective, rank): arrival and wait
    stragglers: pl.DataFrame  # ranks that arrived last, most often first
    kernels: pl.DataFrame  # per kernel name: calls and time across ranks (spread)
    rank_kernels: pl.DataFrame  # per rank and kernel name: calls and time
    clock_offsets: pl.DataFrame  # rank, offset_us, spread_us, collectives, applied (tracetui.ranks.clocks)
    clocks_corrected: bool = False
    clock_reference: list[int] = field(default_factory=list)  # the ranks whose clock the others are put on
    straggler: lag.Straggler | None = None  # the rank named, past every threshold
    largest_lag: lag.Straggler | None = None  # the rank that cost the others most (straggler or not)
    cause: Cause | None = None  # why the straggler is late (None: no straggler, or nothing to compare)
    verdict: str = ""
    notes: list[str] = field(default_factory=list)


def analyse(
    ranks: pl.LazyFrame,
    steps: pl.LazyFrame,
    collectives: pl.LazyFrame,
    kernels: pl.LazyFrame,
    lead: pl.LazyFrame | None = None,
) -> Analysis:
    """The cross-rank analysis of the per-rank tables (each with a ``rank`` column)."""
    rank_rows = ranks.sort("rank").collect()
    rank_steps = steps.sort("rank", "window").collect()
    step_table = slowest_by_step(rank_steps.lazy())
    instances = collectives.filter(pl.col("aligned")).collect()
    keyed = _keyed(instances)
    clocks = clock.align(keyed)
    arrivals = _arrivals(keyed, clock.applied_ns(clocks.offsets))
    aligned = aligned_collectives(arrivals)
    arrivals = arrivals.join(aligned.select("key", "seq", "last_ns"), on="key", how="left").with_columns(
        wait_us=(pl.col("last_ns") - pl.col("arrival_ns")) / US
    )
    n_steps = _steps_with_collectives(aligned)
    stragglers = straggler_table(aligned, n_steps=n_steps)
    largest = lag.largest_lag(aligned, arrivals, lag.median_step_us(rank_steps), n_steps)
    named = largest if largest is not None and not largest.misses else None
    notes = _notes(rank_rows, aligned, clocks)
    why = None
    if named is not None and lead is not None:
        why = straggler_cause(named.rank, keyed, arrivals, aligned, lead.collect())
    table = rank_rows.join(
        step_table.group_by(pl.col("slowest_rank").alias("rank")).agg(pl.len().alias("slowest_steps")),
        on="rank",
        how="left",
    ).join(stragglers.select("rank", pl.col("last_count").alias("last_arrivals")), on="rank", how="left")
    table = table.with_columns(pl.col("slowest_steps", "last_arrivals").fill_null(0)).sort("rank")
    return Analysis(
        ranks=table,
        steps=step_table,
        rank_steps=rank_steps,
        collectives=aligned.drop("key"),
        arrivals=arrivals.select(
            "group", "seq", "rank", pl.exclude("group", "seq", "rank", "key", "last_ns")
        ).sort("group", "seq", "rank"),
        stragglers=stragglers,
        kernels=kernel_spread(kernels, rank_rows["rank"]),
        rank_kernels=kernels.sort("rank", "total_us", "name", descending=[False, True, False]).collect(),
        clock_offsets=clocks.offsets,
        clocks_corrected=clocks.corrected,
        clock_reference=clocks.reference,
        straggler=named,
        largest_lag=largest,
        cause=why,
        verdict=lag.verdict(aligned, largest),
        notes=notes,
    )


def slowest_by_step(steps: pl.LazyFrame) -> pl.DataFrame:
    """Per step number found on two or more ranks: the slowest and fastest rank, by step time."""
    return (
        steps.filter(pl.col("step").is_not_null() & pl.col("cpu_us").is_not_null())
        .filter(pl.len().over("step") >= 2)
        .sort("step", "cpu_us", "rank", descending=[False, True, False])
        .group_by("step", maintain_order=True)
        .agg(
            pl.len().alias("ranks"),
            pl.col("rank").first().alias("slowest_rank"),
            pl.col("cpu_us").first().alias("slowest_us"),
            pl.col("rank").last().alias("fastest_rank"),
            pl.col("cpu_us").last().alias("fastest_us"),
            pl.col("cpu_us").median().alias("median_us"),
        )
        .collect()
    )


def _keyed(instances: pl.DataFrame) -> pl.DataFrame:
    """Each aligned instance with its alignment key (see the module doc)."""
    by_seq_arg = instances.height > 0 and instances["seq_arg"].null_count() == 0
    parts = ["group", "seq_arg"] if by_seq_arg else ["group", "step", "seq"]
    key = pl.concat_str([pl.col(c).cast(pl.String).fill_null("-") for c in parts], separator="\x1f")
    return instances.with_columns(key=key)


def _arrivals(keyed: pl.DataFrame, offsets: pl.DataFrame) -> pl.DataFrame:
    """Each instance's arrival on the reference clock: its start less its rank's applied offset."""
    keyed = keyed.join(offsets, on="rank", how="left")
    arrival = pl.col("start_ns") - pl.col("offset_ns").fill_null(0)
    return keyed.select(
        "key",
        "rank",
        "step",
        *SIGNATURE,
        "bytes",
        "group",
        "group_size",
        arrival.alias("arrival_ns"),
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
    )


def aligned_collectives(arrivals: pl.DataFrame) -> pl.DataFrame:
    """One row per collective: who took part, arrival skew, who came last and the wait for it."""
    if arrivals.is_empty():
        return pl.DataFrame(
            schema={
                "key": pl.String,
                "group": pl.String,
                "seq": pl.UInt32,
                "step": pl.Int64,
                "name": pl.String,
                "bytes": pl.Int64,
                "ranks": pl.UInt32,
                "group_size": pl.Int64,
                "first_ns": pl.Int64,
                "last_ns": pl.Int64,
                "arrival_skew_us": pl.Float64,
                "last_rank": pl.Int64,
                "wait_us": pl.Float64,
                "mismatch": pl.Boolean,
            }
        )
    signature = pl.concat_str([pl.col(c).cast(pl.String).fill_null("") for c in SIGNATURE], separator="|")
    per = (
        arrivals.sort("arrival_ns", "rank", descending=[True, False])
        .group_by("key", maintain_order=True)
        .agg(
            pl.col("group").first(),
            pl.col("step").min(),
            most_common(pl.col("name")),
            pl.col("bytes").max(),
            pl.col("rank").n_unique().cast(pl.UInt32).alias("ranks"),
            pl.col("group_size").max(),
            pl.col("arrival_ns").min().alias("first_ns"),
            pl.col("arrival_ns").max().alias("last_ns"),
            pl.col("rank").first().alias("last_rank"),
            (pl.col("arrival_ns").max() - pl.col("arrival_ns")).sum().alias("wait_ns"),
            (signature.n_unique() > 1).alias("mismatch"),
            pl.col("arrival_ns").min().alias("order"),
        )
    )
    return (
        per.sort("group", "step", "order", nulls_last=True)
        .with_columns(seq=pl.int_range(pl.len(), dtype=pl.UInt32).over("group"))
        .select(
            "key",
            "group",
            "seq",
            "step",
            "name",
            "bytes",
            "ranks",
            "group_size",
            "first_ns",
            "last_ns",
            ((pl.col("last_ns") - pl.col("first_ns")) / US).alias("arrival_skew_us"),
            "last_rank",
            (pl.col("wait_ns") / US).alias("wait_us"),
            "mismatch",
        )
    )


def _steps_with_collectives(aligned: pl.DataFrame) -> int:
    steps = aligned.filter(pl.col("ranks") >= 2)["step"]
    return max(1, steps.drop_nulls().n_unique()) if len(steps) else 1


def straggler_table(aligned: pl.DataFrame, n_steps: int) -> pl.DataFrame:
    """Ranks that arrived last at a collective two or more ranks took part in: how often, the time
    the others spent waiting for them (in total and per step) and its share of all the waiting; the
    rank that cost the others most time first."""
    shared = aligned.filter(pl.col("ranks") >= 2)
    return (
        shared.group_by(pl.col("last_rank").alias("rank"))
        .agg(
            pl.len().cast(pl.Int64).alias("last_count"),
            pl.col("wait_us").sum().alias("others_wait_us"),
            pl.col("name").unique().sort().alias("names"),
        )
        .with_columns(
            (pl.col("others_wait_us") / n_steps).alias("others_wait_us_per_step"),
            pl.lit(shared.height, pl.Int64).alias("collectives"),
            (pl.col("others_wait_us") / pl.col("others_wait_us").sum()).fill_nan(0.0).alias("wait_share"),
        )
        .sort(["others_wait_us", "last_count", "rank"], descending=[True, True, False])
    )


def kernel_spread(kernels: pl.LazyFrame, ranks: pl.Series) -> pl.DataFrame:
    """Per kernel name: its decoded short name (:mod:`tracetui.insight.kernel_names`, as every table
    writes it), calls and time on each rank (a rank without it counts 0), the min / median / max over
    ranks and which rank had the least and the most time."""
    every = pl.LazyFrame({"rank": ranks.unique().sort()})
    names = kernels.select("name", "category").unique(subset="name", keep="first")
    grid = names.join(every, how="cross").join(
        kernels.select("rank", "name", "calls", "total_us"), on=["name", "rank"], how="left"
    )
    spread = (
        grid.with_columns(pl.col("calls").fill_null(0), pl.col("total_us").fill_null(0.0))
        .sort("total_us", "rank")
        .group_by("name")
        .agg(
            pl.col("category").first(),
            (pl.col("calls") > 0).sum().cast(pl.Int64).alias("ranks"),
            pl.col("calls").min().alias("calls_min"),
            pl.col("calls").median().alias("calls_median"),
            pl.col("calls").max().alias("calls_max"),
            pl.col("total_us").min().alias("time_min_us"),
            pl.col("total_us").median().alias("time_median_us"),
            pl.col("total_us").max().alias("time_max_us"),
            pl.col("rank").first().alias("min_rank"),
            pl.col("rank").last().alias("max_rank"),
        )
        .sort(["time_median_us", "name"], descending=[True, False])
        .collect()
    )
    short = kernel_name_columns(spread["name"]).select("name", "short")
    return spread.join(short, on="name", how="left", maintain_order="left").select(
        "name", "short", pl.exclude("name", "short")
    )


def _notes(ranks: pl.DataFrame, aligned: pl.DataFrame, clocks: clock.Clocks) -> list[str]:
    """Plain sentences about what the alignment could not do cleanly."""
    notes: list[str] = []
    if (said := clocks.note()) is not None:
        notes.append(said)
    unaligned = int(ranks["unaligned_collectives"].sum() or 0)
    if unaligned:
        notes.append(
            f"{unaligned} collective kernel(s) launched before profiling started (no launch in the "
            "trace) are counted as communication time but not aligned"
        )
    n = ranks.height
    partial = aligned.filter(pl.col("ranks") < pl.col("group_size").fill_null(n))
    if n and partial.height:
        notes.append(
            f"{partial.height} collective(s) were found on fewer ranks than their process group has "
            "(a rank without the step, or missing)"
        )
    if aligned.height and (mismatched := int(aligned["mismatch"].sum())):
        notes.append(
            f"{mismatched} aligned collective(s) differ between ranks in name, size or dtype: "
            "the ranks may not run the same collectives in the same order"
        )
    return notes
