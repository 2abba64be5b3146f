"""Aggregates, like ``key_averages()`` but tree-aware.

Every number here is a polars expression over the linked events table: inclusive
values are prefix-sum differences over the preorder (a subtree is a contiguous range
of positions), so the counts in the tree, the per-node columns and the tables agree.
"""

from __future__ import annotations

import polars as pl

from tracetui.trace.categories import GPU_WORK, LAUNCH_CALLS
from tracetui.trace.links import is_annotation, is_step

US = 1000.0  # ns per µs
DUR_NS = pl.col("end_ns") - pl.col("start_ns")


def sum_us(ns: pl.Expr = DUR_NS) -> pl.Expr:
    """A sum of durations in µs, computed on exact integer ns so it never depends on row order."""
    return ns.sum() / US


def mean_us(ns: pl.Expr = DUR_NS) -> pl.Expr:
    return ns.sum() / pl.len() / US


def node_stats(events: pl.DataFrame) -> pl.DataFrame:
    """Per CPU event: self time and the GPU work launched by it and everything below it."""
    work = events.filter(pl.col("cat").is_in(GPU_WORK) & pl.col("launch_id").is_not_null())
    own = work.group_by("launch_id").agg(
        DUR_NS.sum().alias("gpu_ns"),
        pl.len().alias("gpu_events"),
        (pl.col("cat") == "kernel").sum().alias("kernels"),
        (pl.col("cat") == "gpu_memcpy").sum().alias("memcpys"),
        (pl.col("cat") == "gpu_memset").sum().alias("memsets"),
    )
    tree = (
        events.select("id", "pos", "end_pos", "parent", DUR_NS.alias("dur_ns"))
        .filter(pl.col("pos").is_not_null())
        .sort("pos")
        .join(own, left_on="id", right_on="launch_id", how="left", maintain_order="left")
    )
    summed = ["gpu_ns", "gpu_events", "kernels", "memcpys", "memsets"]
    tree = tree.with_columns(pl.col(c).fill_null(0) for c in summed)
    # exclusive prefix sums, one extra row so that end_pos == n can be gathered
    prefix = tree.select(
        pl.concat([pl.col(c).cum_sum() - pl.col(c), pl.col(c).sum().implode().explode()]).alias(c)
        for c in summed
    )
    at_end, at_start = pl.lit(tree["end_pos"]), pl.lit(tree["pos"])
    inclusive = prefix.select(pl.col(c).gather(at_end) - pl.col(c).gather(at_start) for c in summed)
    children = tree.group_by("parent").agg(pl.col("dur_ns").sum().alias("children_ns"))
    own_ns = (pl.col("dur_ns") - pl.col("children_ns").fill_null(0)).clip(0)
    self_time = tree.join(
        children, left_on="id", right_on="parent", how="left", maintain_order="left"
    ).select("id", (own_ns / US).alias("cpu_self_us"))
    inclusive = inclusive.with_columns(gpu_us=pl.col("gpu_ns") / US).drop("gpu_ns")
    return self_time.hstack(inclusive)  # both in tree order


def op_table(events: pl.DataFrame) -> pl.DataFrame:
    """Ops aggregated by name: calls, CPU total/self, GPU time and events launched below."""
    return (
        events.lazy()  # lazy: only the aggregated columns are read
        .filter(pl.col("cat") == "cpu_op")
        .group_by("name")
        .agg(
            pl.len().alias("calls"),
            sum_us().alias("cpu_total_us"),
            sum_us(_ns("cpu_self_us")).alias("cpu_self_us"),
            sum_us(_ns("gpu_us")).alias("gpu_us"),
            pl.col("gpu_events").sum(),
            pl.col("kernels").sum(),
            pl.col("memcpys").sum(),
            pl.col("memsets").sum(),
        )
        .with_columns(launches_kernels=pl.col("gpu_events") > 0)
        .sort(["gpu_us", "cpu_total_us", "name"], descending=[True, True, False])
        .collect()
    )


def kernel_table(events: pl.DataFrame) -> pl.DataFrame:
    """GPU work aggregated by name: calls, time, the ops that launched it (``launched_by``, most
    frequent first) and the runtime/driver calls that did (``launched_via``)."""
    names = events.select("id", "name")
    work = (
        events.filter(pl.col("cat").is_in(GPU_WORK))
        .join(names.rename({"id": "launch_op_id", "name": "launch_op"}), on="launch_op_id", how="left")
        .join(names.rename({"id": "launch_id", "name": "launch_call"}), on="launch_id", how="left")
    )
    launched_by = pl.concat(
        [
            _most_frequent(work, column, alias)
            for column, alias in (("launch_op", "launched_by"), ("launch_call", "launched_via"))
        ],
        how="align",
    )
    return (
        work.group_by("name")
        .agg(
            pl.col("cat").first().alias("cat"),
            pl.len().alias("calls"),
            sum_us().alias("total_us"),
            mean_us().alias("avg_us"),
            (DUR_NS.min() / US).alias("min_us"),
            (DUR_NS.max() / US).alias("max_us"),
            pl.col("launch_id").is_null().sum().alias("orphans"),
        )
        .join(launched_by, on="name", how="left")
        .sort(["total_us", "name"], descending=[True, False])
    )


def _most_frequent(work: pl.DataFrame, column: str, alias: str) -> pl.DataFrame:
    """Per name, the distinct values of ``column``, most frequent first."""
    return (
        work.group_by("name", column)
        .agg(pl.len().alias("n"))
        .sort(["n", column], descending=[True, False], nulls_last=True)
        .group_by("name", maintain_order=True)
        .agg(pl.col(column).drop_nulls().alias(alias))
    )


def runtime_table(events: pl.DataFrame) -> pl.DataFrame:
    """Runtime/driver calls by name: calls, CPU time, and the GPU work they launched."""
    return (
        events.filter(pl.col("cat").is_in(LAUNCH_CALLS))
        .group_by("name")
        .agg(
            pl.len().alias("calls"),
            sum_us().alias("cpu_us"),
            pl.col("gpu_events").sum(),
            pl.col("kernels").sum(),
            pl.col("memcpys").sum(),
            pl.col("memsets").sum(),
            sum_us(_ns("gpu_us")).alias("gpu_us"),
        )
        .sort(["cpu_us", "name"], descending=[True, False])
    )


def span_instances(events: pl.DataFrame, which: pl.Expr) -> pl.DataFrame:
    """Per annotation/step instance: CPU time, GPU work launched below, GPU busy time."""
    spans = events.filter(which).select(
        "id",
        "name",
        "start_ns",
        "end_ns",
        "dur",
        "pos",
        "end_pos",
        "gpu_us",
        "gpu_events",
        "kernels",
        "memcpys",
        "memsets",
    )
    return (
        spans.join(_busy_time(events, spans), on="id", how="left")
        .with_columns(pl.col("gpu_busy_us").fill_null(0.0))
        .sort("start_ns")
    )


def _busy_time(events: pl.DataFrame, spans: pl.DataFrame) -> pl.DataFrame:
    """Union length (µs) of the GPU intervals launched below each span."""
    calls = events.select(pl.col("id").alias("launch_id"), pl.col("pos").alias("call_pos"))
    work = (
        events.filter(pl.col("cat").is_in(GPU_WORK) & pl.col("launch_id").is_not_null())
        .select("launch_id", "start_ns", "end_ns")
        .join(calls, on="launch_id")
    )
    if work.is_empty() or spans.is_empty():
        return pl.DataFrame(schema={"id": pl.UInt32, "gpu_busy_us": pl.Float64})
    inside = work.join_where(
        spans.select(pl.col("id").alias("span"), "pos", "end_pos"),
        pl.col("call_pos") >= pl.col("pos"),
        pl.col("call_pos") < pl.col("end_pos"),
    )
    return union_length(inside, "span").rename({"span": "id"})


def merged_intervals(intervals: pl.DataFrame, by: str | None = None) -> pl.DataFrame:
    """The union of ``[start_ns, end_ns)`` intervals (per group ``by``) as disjoint intervals, sorted
    (by group, then start). Overlapping and touching intervals merge; intervals without an end drop."""
    keys = [by] if by is not None else []
    ordered = intervals.select(*keys, "start_ns", "end_ns").drop_nulls().sort(*keys, "start_ns")
    reach = pl.col("end_ns").cum_max().shift(1)
    starts = reach.is_null() | (pl.col("start_ns") > reach)
    if by is not None:
        starts = starts.over(by)
    return (
        ordered.with_columns(segment=starts.cum_sum())
        .group_by(*keys, "segment")
        .agg(pl.col("start_ns").min(), pl.col("end_ns").max())
        .sort(*keys, "start_ns")
        .drop("segment")
    )


def union_length(intervals: pl.DataFrame, by: str) -> pl.DataFrame:
    """Per group ``by``: the length (µs) of the union of [start_ns, end_ns) intervals."""
    return (
        merged_intervals(intervals, by)
        .group_by(by)
        .agg(((pl.col("end_ns") - pl.col("start_ns")).sum() / US).alias("gpu_busy_us"))
    )


def _ns(column: str) -> pl.Expr:
    """A µs column back to integer ns (µs values here are exact ns / 1000)."""
    return (pl.col(column) * US).round().cast(pl.Int64)


def per_call_table(instances: pl.DataFrame) -> pl.DataFrame:
    """Instances of annotations (or steps) aggregated by name, per call."""
    return (
        instances.group_by("name")
        .agg(
            pl.len().alias("calls"),
            pl.col("kernels").mean().alias("kernels_per_call"),
            pl.col("memcpys").mean().alias("memcpys_per_call"),
            pl.col("memsets").mean().alias("memsets_per_call"),
            pl.col("gpu_events").mean().alias("gpu_events_per_call"),
            pl.col("kernels").min().alias("kernels_min"),
            pl.col("kernels").max().alias("kernels_max"),
            sum_us(_ns("gpu_us")).alias("gpu_us"),
            mean_us(_ns("gpu_us")).alias("gpu_us_per_call"),
            mean_us(_ns("gpu_busy_us")).alias("gpu_busy_us_per_call"),
            sum_us().alias("cpu_us"),
            mean_us().alias("cpu_us_per_call"),
            pl.col("start_ns").min().alias("first_ns"),
        )
        .sort("first_ns")
        .drop("first_ns")
    )


def annotation_instances(events: pl.DataFrame) -> pl.DataFrame:
    """Per annotation instance; GPU work launched below it on its thread."""
    return span_instances(events, is_annotation())


def step_instances(events: pl.DataFrame) -> pl.DataFrame:
    """Per ``ProfilerStep#N``: GPU work launched during the step by any thread."""
    work = events.filter(pl.col("cat").is_in(GPU_WORK) & pl.col("step_id").is_not_null())
    counts = work.group_by("step_id").agg(
        sum_us().alias("gpu_us"),
        pl.len().alias("gpu_events"),
        (pl.col("cat") == "kernel").sum().alias("kernels"),
        (pl.col("cat") == "gpu_memcpy").sum().alias("memcpys"),
        (pl.col("cat") == "gpu_memset").sum().alias("memsets"),
    )
    busy = union_length(work.select("step_id", "start_ns", "end_ns"), "step_id")
    steps = events.filter(is_step()).select("id", "name", "start_ns", "end_ns", "dur")
    return (
        steps.join(counts, left_on="id", right_on="step_id", how="left")
        .join(busy, left_on="id", right_on="step_id", how="left")
        .with_columns(
            pl.col("gpu_us", "gpu_busy_us").fill_null(0.0),
            pl.col("gpu_events", "kernels", "memcpys", "memsets").fill_null(0),
            step=pl.col("name").str.extract(r"#([0-9]+)$").cast(pl.Int64, strict=False),
        )
        .sort("start_ns")
    )
