"""What a rank did between its collectives: the ``lead`` table a straggler's cause is read from.

The rank's aligned collectives cut its timeline at every arrival and every end; each piece between
two consecutive cuts is a *segment*. Any stretch that starts at a collective's end and stops at a
later arrival is then a run of whole segments, whichever stretch the cross-rank analysis asks for
(:mod:`tracetui.ranks.cause`). Per segment, one row per (``kind``, ``name``) with its time ``ns``
inside the segment (clipped) and ``calls`` (those starting in it):

* ``span``: the segment itself (no name);
* ``host_gap``: time during which no CPU thread ran a traced op or runtime call (``cpu_op``,
  ``cuda_runtime``, ``cuda_driver``): untraced Python — a sleep, a data loader, the interpreter —
  named after the op that ends the gap (the work it held back);
* ``host_op``: the outermost CPU ops (no ``cpu_op`` ancestor), by name;
* ``gpu_work``: kernels, copies and memsets, by name;
* ``gpu_idle``: the segment less the union of its GPU work (no name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui.trace.categories import GPU_WORK
from tracetui.trace.stats import merged_intervals

if TYPE_CHECKING:
    from tracetui.trace import Trace

HOST_CALLS = ("cpu_op", "cuda_runtime", "cuda_driver")  # what covers a CPU thread's time
KINDS = ("span", "host_gap", "host_op", "gpu_work", "gpu_idle")
SCHEMA: dict[Any, Any] = {
    "start_ns": pl.Int64,  # the segment's
    "end_ns": pl.Int64,
    "kind": pl.String,
    "name": pl.String,
    "ns": pl.Int64,
    "calls": pl.Int64,
}


def lead_table(trace: Trace, collectives: pl.DataFrame) -> pl.DataFrame:
    """The rank's segments between its aligned ``collectives`` and what filled them (module doc)."""
    aligned = collectives.filter(pl.col("aligned") & pl.col("start_ns").is_not_null())
    cuts = pl.concat([aligned["start_ns"], aligned["end_ns"].drop_nulls()]).unique().sort()
    if cuts.len() < 2:
        return pl.DataFrame(schema=SCHEMA)
    segments = (
        pl.DataFrame({"seg_start": cuts}).with_columns(seg_end=pl.col("seg_start").shift(-1)).drop_nulls()
    )
    events = trace.events.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    host = events.filter(pl.col("cat").is_in(HOST_CALLS))
    ops = host.filter((pl.col("cat") == "cpu_op") & pl.col("op_id").is_null()).select(
        pl.lit("host_op").alias("kind"), pl.col("name").cast(pl.String), "start_ns", "end_ns"
    )
    gpu = trace.gpu.filter(
        pl.col("cat").is_in(GPU_WORK) & pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()
    ).select(pl.lit("gpu_work").alias("kind"), pl.col("name").cast(pl.String), "start_ns", "end_ns")
    spans = segments.select(
        pl.lit("span").alias("kind"),
        pl.lit("").alias("name"),
        pl.col("seg_start").alias("start_ns"),
        pl.col("seg_end").alias("end_ns"),
    )
    items = pl.concat([spans, _host_gaps(host), ops, gpu])
    clipped = _clipped(items, segments)
    busy = merged_intervals(
        _clip_rows(gpu, segments).select(pl.col("seg_start").alias("key"), "start_ns", "end_ns"), "key"
    )
    busy_ns = busy.group_by(pl.col("key").alias("seg_start")).agg(
        (pl.col("end_ns") - pl.col("start_ns")).sum()
    )
    idle = (
        segments.join(busy_ns, on="seg_start", how="left")
        .select(
            "seg_start",
            "seg_end",
            pl.lit("gpu_idle").alias("kind"),
            pl.lit("").alias("name"),
            (pl.col("seg_end") - pl.col("seg_start") - pl.col("end_ns").fill_null(0)).alias("ns"),
            pl.lit(0, pl.Int64).alias("calls"),
        )
        .filter(pl.col("ns") > 0)
    )
    table = pl.concat([clipped, idle], how="vertical_relaxed")
    return (
        table.select(
            pl.col("seg_start").alias("start_ns"),
            pl.col("seg_end").alias("end_ns"),
            "kind",
            "name",
            "ns",
            "calls",
        )
        .cast(SCHEMA)
        .sort("start_ns", "kind", "name")
    )


def _host_gaps(host: pl.DataFrame) -> pl.DataFrame:
    """The stretches between two traced CPU calls of any thread, named after the call that ends one."""
    covered = merged_intervals(host.select("start_ns", "end_ns"))
    gaps = covered.select(pl.col("end_ns").alias("start_ns"), pl.col("start_ns").shift(-1).alias("end_ns"))
    gaps = gaps.filter(pl.col("end_ns").is_not_null() & (pl.col("end_ns") > pl.col("start_ns")))
    first = (
        host.sort("start_ns", "depth", nulls_last=True)
        .unique("start_ns", keep="first")
        .select(pl.col("start_ns").alias("end_ns"), pl.col("name").cast(pl.String))
    )
    return gaps.join(first, on="end_ns", how="left").select(
        pl.lit("host_gap").alias("kind"), pl.col("name").fill_null(""), "start_ns", "end_ns"
    )


def _clip_rows(items: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """Each item cut to every segment it overlaps (``seg_start``, ``seg_end`` added). The segments
    tile the time from the first cut to the last: an item inside one finds it by its start (a sorted
    search); only those that cross a cut go through the range join."""
    first, last = segments["seg_start"][0], segments["seg_end"][-1]
    items = items.filter((pl.col("end_ns") > first) & (pl.col("start_ns") < last))
    found = items.sort("start_ns").join_asof(
        segments, left_on="start_ns", right_on="seg_start", strategy="backward"
    )
    inside = found.filter(pl.col("seg_start").is_not_null() & (pl.col("end_ns") <= pl.col("seg_end")))
    crossing = found.filter(pl.col("seg_start").is_null() | (pl.col("end_ns") > pl.col("seg_end")))
    split = crossing.select(items.columns).join_where(
        segments, pl.col("start_ns") < pl.col("seg_end"), pl.col("end_ns") > pl.col("seg_start")
    )
    return pl.concat([inside, split.select(inside.columns)]).with_columns(
        pl.max_horizontal("start_ns", "seg_start").alias("start_ns"),
        pl.min_horizontal("end_ns", "seg_end").alias("end_ns"),
        (pl.col("start_ns") >= pl.col("seg_start")).alias("starts_here"),
    )


def _clipped(items: pl.DataFrame, segments: pl.DataFrame) -> pl.DataFrame:
    """Per segment, kind and name: the items' time inside it and how many start in it."""
    return (
        _clip_rows(items, segments)
        .group_by("seg_start", "seg_end", "kind", "name")
        .agg(
            (pl.col("end_ns") - pl.col("start_ns")).sum().alias("ns"),
            pl.col("starts_here").sum().cast(pl.Int64).alias("calls"),
        )
    )
