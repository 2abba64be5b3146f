"""Distributions of durations: percentiles, a histogram and the slowest calls, per GPU work name and
over the steps. The one home of every percentile tracetui shows (the details pane, the kernels table,
``summary --json``, the ranks' step times).

**Percentile definition.** Linear interpolation between the two nearest ranks, numpy's default
(``numpy.percentile(..., method="linear")``, Hyndman & Fan's type 7), as polars computes it with
``quantile(q, interpolation="linear")``: for n sorted durations x₀ … xₙ₋₁, the p-th percentile lies at
rank h = (n − 1)·p/100 and is x⌊h⌋ + (h − ⌊h⌋)·(x⌈h⌉ − x⌊h⌋). So p50 is the median, a single call's
percentiles all equal its duration, and p99 of fewer than 101 calls lies between the two slowest.
Durations are exact integer nanoseconds (``end_ns − start_ns``, as every sum in the model) and are
written in µs.

**Histogram.** ``BINS`` equal-width bins from the fastest to the slowest call (integer ns: bin k holds
the durations d with ⌊(d − min)·BINS / (max − min + 1)⌋ = k), so the slowest call is always in the
last bin and identical durations all fall in the first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from tracetui.insight.gpu_work import gpu_work
from tracetui.trace.stats import DUR_NS, US

if TYPE_CHECKING:
    from tracetui.trace import Trace

PERCENTILES = (50, 90, 99)
INTERPOLATION: Literal["linear"] = "linear"  # numpy.percentile's default method
BINS = 16
SLOWEST = 5  # the slowest calls listed (and walked by the explorer's `s`)

SCHEMA: dict[str, type[pl.DataType] | pl.DataType] = {
    "name": pl.String,
    "calls": pl.UInt32,
    "min_us": pl.Float64,
    **{f"p{p}_us": pl.Float64 for p in PERCENTILES},
    "max_us": pl.Float64,
    "histogram": pl.List(pl.UInt32),
    "slowest_ids": pl.List(pl.UInt32),
    "slowest_us": pl.List(pl.Float64),
}


def percentile_columns(ns: pl.Expr = DUR_NS) -> list[pl.Expr]:
    """``p50_us``, ``p90_us``, ``p99_us`` of durations in integer ns (an aggregation)."""
    return [(ns.quantile(p / 100, interpolation=INTERPOLATION) / US).alias(f"p{p}_us") for p in PERCENTILES]


def bin_index(ns: pl.Expr = DUR_NS, bins: int = BINS) -> pl.Expr:
    """The histogram bin (0 … ``bins`` − 1) of each duration in integer ns, over a group's range."""
    low = ns.min()
    return (ns - low) * bins // (ns.max() - low + 1)


def histogram_column(ns: pl.Expr = DUR_NS, bins: int = BINS) -> pl.Expr:
    """The counts of ``bins`` equal-width bins from the minimum to the maximum (an aggregation)."""
    return bin_counts(bin_index(ns, bins), bins)


def bin_counts(index: pl.Expr, bins: int = BINS) -> pl.Expr:
    """The counts of each bin of :func:`bin_index` values ``index`` (an aggregation): the histogram."""
    return pl.concat_list([(index == k).sum().cast(pl.UInt32) for k in range(bins)]).alias("histogram")


def distributions(rows: pl.DataFrame, by: str) -> pl.DataFrame:
    """Per value of ``by`` (text) over ``rows`` (``id``, ``start_ns``, ``end_ns``): calls, min, p50,
    p90, p99, max (µs), the histogram and the slowest calls (:data:`SCHEMA`, sorted by ``by``).

    Grouped on dictionary codes of ``by``, with each row's bin found once (a window per group) rather
    than once per bin."""
    ns, ids = pl.col("ns"), pl.col("id")
    slowest = [ns, ids]
    coded = rows.lazy().select(pl.col(by).cast(pl.Categorical), "id", DUR_NS.alias("ns"))
    return (
        coded.with_columns(bin=bin_index(ns).over(by))
        .group_by(by)
        .agg(
            pl.len().alias("calls"),
            (ns.min() / US).alias("min_us"),
            *percentile_columns(ns),
            (ns.max() / US).alias("max_us"),
            bin_counts(pl.col("bin")),
            ids.sort_by(slowest, descending=[True, False]).head(SLOWEST).cast(pl.UInt32).alias("slowest_ids"),
            (ns.sort_by(slowest, descending=[True, False]).head(SLOWEST) / US).alias("slowest_us"),
        )
        .with_columns(pl.col(by).cast(pl.String))
        .sort(by)
        .collect()
        .cast(SCHEMA)  # type: ignore[arg-type]
    )


def gpu_distributions(trace: Trace) -> pl.DataFrame:
    """Per name of GPU work (kernels, memcpys, memsets; the rows of the kernels table): calls,
    min, p50, p90, p99, max (µs), the histogram and the slowest calls (event ids and µs)."""

    work = gpu_work(trace).filter(pl.col("start_ns").is_not_null()).select("name", "id", "start_ns", "end_ns")
    if work.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    return distributions(work, "name")


def step_distribution(steps: pl.DataFrame) -> pl.DataFrame:
    """One row (``name`` "steps"): the distribution of the steps' CPU spans; empty without steps."""
    spans = steps.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    if spans.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    return distributions(spans.select(pl.lit("steps").alias("name"), "id", "start_ns", "end_ns"), "name")


def distribution_record(frame: pl.DataFrame, trace: Trace) -> dict[str, Any] | None:
    """The first row of a distribution frame as JSON (``summary --json``'s ``step_times``): calls,
    min/p50/p90/p99/max in µs, the histogram's counts and bin width, and the slowest calls with
    their ids and names; None for an empty frame."""
    if frame.is_empty():
        return None
    row = frame.row(0, named=True)
    width_us = (row["max_us"] - row["min_us"]) + 0.001  # the bins span max - min + 1 ns
    return {
        "count": row["calls"],
        **{key: row[key] for key in ("min_us", *(f"p{p}_us" for p in PERCENTILES), "max_us")},
        "histogram": {"bins": row["histogram"], "bin_us": width_us / BINS},
        "slowest": [
            {"id": event_id, "name": trace.event(event_id)["name"], "us": us}
            for event_id, us in zip(row["slowest_ids"], row["slowest_us"], strict=True)
        ],
    }


def rank_step_times(rank_steps: pl.DataFrame) -> dict[str, Any] | None:
    """The steps' CPU spans across the ranks of a run (the rows of every rank's steps table, with
    ``rank``, ``step``, ``start_ns``, ``end_ns``): over all of them (count, min/p50/p90/p99/max, the
    histogram, the slowest with rank and step), and per rank (``ranks``: the same percentiles)."""
    spans = rank_steps.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    if spans.is_empty():
        return None
    spread = [(DUR_NS.min() / US).alias("min_us"), *percentile_columns(), (DUR_NS.max() / US).alias("max_us")]
    overall = spans.select(pl.len().alias("count"), *spread, histogram_column()).row(0, named=True)
    width_us = (overall["max_us"] - overall["min_us"]) + 0.001
    order = [DUR_NS, pl.col("rank"), pl.col("step")]
    slowest = spans.sort(order, descending=[True, False, False]).head(SLOWEST)
    per_rank = spans.group_by("rank").agg(pl.len().alias("steps"), *spread).sort("rank")
    return {
        **{k: v for k, v in overall.items() if k != "histogram"},
        "histogram": {"bins": overall["histogram"], "bin_us": width_us / BINS},
        "slowest": slowest.select("rank", "step", "name", (DUR_NS / US).alias("us")).to_dicts(),
        "ranks": per_rank.to_dicts(),
    }
