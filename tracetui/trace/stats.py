"""Aggregates, like ``key_averages()`` but tree-aware.

Every number here is a polars expression over the linked events table: inclusive
values are prefix-sum differences over the preorder (a subtree is a contiguous range
of positions), so the counts in the tree, the per-node columns and the tables agree.
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from tracetui.trace import native
from tracetui.trace.align import lookup, rows_of
from tracetui.trace.categories import GPU_WORK, LAUNCH_CALLS
from tracetui.trace.links import is_annotation, is_step
from tracetui.trace.memo import kept

US = 1000.0  # ns per µs
DUR_NS = pl.col("end_ns") - pl.col("start_ns")


def sum_us(ns: pl.Expr = DUR_NS) -> pl.Expr:
    """A sum of durations in µs, computed on exact integer ns so it never depends on row order."""
    return ns.sum() / US


def mean_us(ns: pl.Expr = DUR_NS) -> pl.Expr:
    return ns.sum() / pl.len() / US


def most_common(values: pl.Expr) -> pl.Expr:
    """The most common of ``values`` in a group; of a tie, the first in order (by name for text):
    the same answer every run, whatever order the rows (or a hash) came in."""
    return values.mode().sort().first()


def node_stats(tree: pl.DataFrame, work: pl.DataFrame) -> Iterator[pl.Series]:
    """Per CPU event: self time and the GPU work launched by it and everything below it.

    ``tree``: the CPU events in preorder (``pos`` = row), with ``start_ns``, ``end_ns``, ``end_pos``
    and ``parent_pos`` (-1: a root), as :func:`tracetui.trace.nesting.nest` gives them. ``work``: the
    GPU work launched from the tree, with ``at`` (the tree row of its call), ``cat`` and ``dur``
    (ns). Yields the columns (cpu_self_us, gpu_us, gpu_events, kernels, memcpys, memsets) in the
    tree's order, one at a time, so that the caller can place each before the next is made (and
    it holds ``tree`` no longer than it needs it, if the caller does not keep it); the sums of
    time first, whose 64-bit prefix sums are the widest, while the fewest columns are placed.
    """
    count = len(tree)
    dur = tree["end_ns"] - tree["start_ns"]
    parents, end = tree["parent_pos"], tree["end_pos"]
    del tree  # the caller's last reference (it passes it on): the times go before the sums are made
    children = native.sum_at(parents, dur, count)  # each node's children's total
    del parents
    dur = dur - children  # each step frees the one before it: at most three columns of times live
    del children
    self_us = (dur.clip(0) / US).alias("cpu_self_us")
    del dur
    yield self_us
    del self_us
    at = work["at"]
    own = work.select(
        pl.col("dur").alias("gpu_us"),
        pl.lit(1, pl.Int64).alias("gpu_events"),
        (pl.col("cat") == "kernel").alias("kernels"),
        (pl.col("cat") == "gpu_memcpy").alias("memcpys"),
        (pl.col("cat") == "gpu_memset").alias("memsets"),
    )
    for name in own.columns:
        spread = native.sum_at(at, own[name], count + 1)
        if name != "gpu_us":
            spread = spread.cast(pl.UInt32)  # counts of events, as narrow as their ids (memory)
        before = spread.cum_sum() - spread  # exclusive prefix sums; the extra row is the total
        del spread
        inclusive = before.gather(end) - before.slice(0, count)  # prefix sums never decrease
        del before
        yield (inclusive / US if name == "gpu_us" else inclusive).alias(name)
        del inclusive


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
        .with_columns(pl.col("name").cast(pl.String), launches_kernels=pl.col("gpu_events") > 0)
        .sort(["gpu_us", "cpu_total_us", "name"], descending=[True, True, False])
        .collect()
    )


def kernel_table(events: pl.DataFrame) -> pl.DataFrame:
    """GPU work aggregated by name: calls, time, the ops that launched it (``launched_by``, most
    frequent first) and the runtime/driver calls that did (``launched_via``)."""
    work = (
        events.lazy()
        .filter(pl.col("cat").is_in(GPU_WORK))
        .select("name", "cat", "start_ns", "end_ns", "launch_id", "launch_op_id")
        .collect()
    )
    work = work.with_columns(
        lookup(events, work["launch_op_id"], "name")["name"].alias("launch_op"),
        lookup(events, work["launch_id"], "name")["name"].alias("launch_call"),
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
        .with_columns(  # the events' text is dictionary-encoded; a table's is text
            pl.col("name", "cat").cast(pl.String),
            pl.col("launched_by", "launched_via").cast(pl.List(pl.String)),
        )
        .sort(["total_us", "name"], descending=[True, False])
    )


def _most_frequent(work: pl.DataFrame, column: str, alias: str) -> pl.DataFrame:
    """Per name, the distinct values of ``column``, most frequent first."""
    return (
        work.group_by("name")  # counted per name: a key of two text columns costs more
        .agg(pl.col(column).value_counts(name="n"))
        .explode(column)
        .unnest(column)
        .sort(["n", column], descending=[True, False], nulls_last=True)
        .group_by("name", maintain_order=True)
        .agg(pl.col(column).drop_nulls().alias(alias))
    )


def runtime_table(events: pl.DataFrame) -> pl.DataFrame:
    """Runtime/driver calls by name: calls, CPU time, and the GPU work they launched."""
    return (
        events.lazy()  # lazy: only the aggregated columns are read
        .filter(pl.col("cat").is_in(LAUNCH_CALLS))
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
        .with_columns(pl.col("name").cast(pl.String))
        .sort(["cpu_us", "name"], descending=[True, False])
        .collect()
    )


# The events' columns the span functions read (with ``pid``): a trace from the cache reads no others.
SPAN_COLUMNS = (
    "id",
    "cat",
    "name",
    "track",
    "start_ns",
    "end_ns",
    "dur",
    "pos",
    "end_pos",
    "launch_id",
    "step_id",
)


def span_work(events: pl.DataFrame) -> pl.DataFrame:
    """The GPU work of every step and annotation instance: one row per (span, GPU work event).

    A span counts the GPU work launched from **any thread of its process** while it is open: the
    work whose runtime/driver call starts inside it. A step holds the calls whose ``step_id`` is
    that step (:func:`tracetui.trace.links.steps_by_time`: its time window, any thread); an
    annotation the calls of its process that start in ``[start_ns, end_ns]``. In training the
    backward runs on the autograd engine's thread (``pt_autograd_0``), outside the main thread's
    annotation span; Kineto's own ``gpu_user_annotation`` covers the annotating thread only.

    Columns: ``span`` (the step or annotation id), ``id``, ``cat``, ``start_ns``, ``end_ns`` of the
    work, and ``track`` of the call that launched it. Annotations are matched in one pass: the
    work sorted by (process, call start) makes the calls inside a span a contiguous range of rows,
    found with two as-of joins, so the cost is the number of rows produced.
    """
    work = (
        events.lazy()
        .filter(pl.col("cat").is_in(GPU_WORK) & pl.col("launch_id").is_not_null())
        .select("id", "cat", "start_ns", "end_ns", "launch_id", "step_id")
        .collect()
    )
    rows = rows_of(events, work["launch_id"])
    calls = events.select(  # gathered in the expressions: a select of the whole columns copies them
        pl.col("pid").gather(rows).alias("call_pid"),
        pl.col("track").gather(rows),
        pl.col("start_ns").gather(rows).alias("call_ns"),
    )
    work = work.hstack(calls)
    columns = ["span", "id", "cat", "start_ns", "end_ns", "track"]
    steps = work.filter(pl.col("step_id").is_not_null()).select(pl.col("step_id").alias("span"), *columns[1:])
    annotations = _annotation_work(events, work.select(*columns[1:], "call_pid", "call_ns")).select(columns)
    return pl.concat([steps, annotations]).sort("span", "start_ns", "id")


def annotation_windows(events: pl.DataFrame) -> pl.DataFrame:
    """``(span, pid, start_ns, end_ns)`` of every annotation instance (the windows of :func:`span_work`)."""
    return (
        _annotations(events)
        .filter(is_annotation() & pl.col("start_ns").is_not_null())
        .select(pl.col("id").alias("span"), "pid", "start_ns", "end_ns")
    )


def annotation_cpu_events(events: pl.DataFrame) -> pl.DataFrame:
    """``(span, id)``: the CPU events of any thread of each annotation's process that start while it
    is open (the annotation itself excepted): an annotation's members, as a step's are the events
    whose ``step_id`` it is."""
    cpu = (
        events.lazy()
        .select("id", "pid", "start_ns", "pos")
        .filter(pl.col("pos").is_not_null() & pl.col("start_ns").is_not_null())
        .drop("pos")
        .collect()
    )
    inside = within(annotation_windows(events), cpu, "pid", "start_ns")
    return inside.filter(pl.col("id") != pl.col("span")).select("span", "id").sort("span", "id")


def _annotation_work(events: pl.DataFrame, work: pl.DataFrame) -> pl.DataFrame:
    """Rows of ``work`` (with ``call_pid``, ``call_ns``) launched while each annotation is open."""
    return within(annotation_windows(events), work, "call_pid", "call_ns")


def within(spans: pl.DataFrame, rows: pl.DataFrame, pid: str, at: str) -> pl.DataFrame:
    """``rows`` whose process ``pid`` is a span's and whose time ``at`` is inside it (``[start_ns,
    end_ns]``), with a ``span`` column; a row inside several (nested) spans appears once per span.

    Rows sorted by (process, time) put those inside a span in one contiguous range, whose ends two
    as-of joins find: the cost is that of the rows produced, never spans × rows.
    """
    keyed = rows.filter(pl.col(at).is_not_null()).sort(pid, at).with_row_index("row")
    if spans.is_empty() or keyed.is_empty():
        return keyed.drop("row").clear().with_columns(pl.lit(None, pl.UInt32).alias("span"))
    # first and last row of each (process, time): ties never split a range; the rows are sorted by
    # both, so each run of equal keys starts where a key changes (no hash of every row)
    new = pl.col(pid).ne_missing(pl.col(pid).shift(1)) | pl.col(at).ne_missing(pl.col(at).shift(1))
    starts = keyed.select(new.alias("new"))["new"]
    first = keyed.filter(starts).select(pid, at, pl.col("row").alias("first"))
    last = keyed["row"].filter(starts.shift(-1, fill_value=True)).alias("last")
    bounds = first.with_columns(last).sort(at)

    def edge(side: str, strategy: str, row: str) -> pl.DataFrame:
        return (
            spans.sort(side)
            .join_asof(
                bounds.select(pid, at, row),
                left_on=side,
                right_on=at,
                by_left="pid",
                by_right=pid,
                strategy=strategy,  # type: ignore[arg-type]
                check_sortedness=False,
            )
            .select("span", row)
        )

    ranges = (
        edge("start_ns", "forward", "first")
        .join(edge("end_ns", "backward", "last"), on="span")
        .filter(pl.col("first") <= pl.col("last"))
    )
    picked = ranges.select("span", pl.int_ranges("first", pl.col("last") + 1, dtype=pl.UInt32).alias("row"))
    picked = picked.explode("row")
    return keyed.drop("row")[picked["row"]].with_columns(picked["span"])


def work_counts() -> list[pl.Expr]:
    """GPU time and counts of a group of GPU work rows (``gpu_us`` and the four counts)."""
    return [
        sum_us().alias("gpu_us"),
        pl.len().cast(pl.UInt32).alias("gpu_events"),
        (pl.col("cat") == "kernel").sum().cast(pl.UInt32).alias("kernels"),
        (pl.col("cat") == "gpu_memcpy").sum().cast(pl.UInt32).alias("memcpys"),
        (pl.col("cat") == "gpu_memset").sum().cast(pl.UInt32).alias("memsets"),
    ]


SPAN_COUNTS = ("gpu_events", "kernels", "memcpys", "memsets")


def span_threads(work: pl.DataFrame, events: pl.DataFrame, tracks: pl.DataFrame) -> pl.DataFrame:
    """Per span and launching thread (of :func:`span_work`): GPU time and counts, with ``here``
    (the span's own thread) and ``thread`` (its short name); per span, its own thread first, then
    by kernels."""
    spans = _annotations(events).select(pl.col("id").alias("span"), pl.col("track").alias("span_track"))
    return (
        work.group_by("span", "track")
        .agg(work_counts())
        .join(spans, on="span", how="left")
        .join(thread_names(tracks), on="track", how="left")
        .with_columns(here=pl.col("track") == pl.col("span_track"))
        .drop("span_track")
        .sort(["span", "here", "kernels", "gpu_events", "track"], descending=[False, True, True, True, False])
    )


THREAD_NAME = r"\(([^)]*)\)\s*$"  # Kineto's ``thread 475 (pt_autograd_0)``: the name in parentheses


def thread_names(tracks: pl.DataFrame) -> pl.DataFrame:
    """``(track, thread)``: each track's short thread name (:data:`THREAD_NAME`), else the whole
    thread name, else its tid."""
    name = pl.col("thread_name")
    return tracks.select(
        pl.col("track").cast(pl.Int32),
        pl.coalesce(name.str.extract(THREAD_NAME), name, pl.col("tid")).alias("thread"),
    )


def span_instances(events: pl.DataFrame, which: pl.Expr, work: pl.DataFrame) -> pl.DataFrame:
    """Per annotation/step instance: CPU time, the GPU work launched while it was open
    (:func:`span_work`), the part of it from its own thread, GPU busy time and idle gaps."""
    spans = _annotations(events).filter(which)
    spans = spans.select("id", "name", "start_ns", "end_ns", "dur", "pos", "end_pos", "track")
    mine = _own_work(spans, work)
    zero = [pl.col("idle_gaps").fill_null(0), pl.col("gpu_busy_us", "largest_gap_us").fill_null(0.0)]
    return (
        _with_counts(spans, mine)
        .join(idle_gaps(mine), left_on="id", right_on="span", how="left")
        .with_columns(*zero)
        .drop("track")
        .sort("start_ns", "id")
    )


def span_counts(events: pl.DataFrame, work: pl.DataFrame) -> pl.DataFrame:
    """Per step and annotation instance (``id``): the counts of :func:`span_instances` (GPU time,
    the four counts, ``kernels_here``) without the busy time and gaps: what the tree's rows show."""
    spans = _annotations(events).filter(is_step() | is_annotation()).select("id", "track")
    return _with_counts(spans, _own_work(spans, work)).drop("track")


def _own_work(spans: pl.DataFrame, work: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``work`` (:func:`span_work`) of ``spans`` (``id``, ``track``), with ``span_track``."""
    return work.join(spans.select(pl.col("id").alias("span"), pl.col("track").alias("span_track")), on="span")


def _with_counts(spans: pl.DataFrame, mine: pl.DataFrame) -> pl.DataFrame:
    """``spans`` with the counts of their work ``mine`` (:func:`_own_work`), zeros where none."""
    totals = mine.group_by("span").agg(
        *work_counts(),
        ((pl.col("cat") == "kernel") & (pl.col("track") == pl.col("span_track")))
        .sum()
        .cast(pl.UInt32)
        .alias("kernels_here"),
    )
    zero = [pl.col(c).fill_null(0) for c in (*SPAN_COUNTS, "kernels_here")]
    return spans.join(totals, left_on="id", right_on="span", how="left").with_columns(
        *zero, pl.col("gpu_us").fill_null(0.0)
    )


MIN_GAP_NS = 1000  # an idle gap between GPU work is counted from 1 µs


def idle_gaps(work: pl.DataFrame, by: str = "span") -> pl.DataFrame:
    """Per group ``by`` of GPU work rows: busy time (the union of their intervals, µs), the number
    of idle gaps of at least :data:`MIN_GAP_NS` between them and the largest gap (µs)."""
    busy = merged_intervals(work, by)
    gap = pl.when(pl.col(by) == pl.col(by).shift(1)).then(pl.col("start_ns") - pl.col("end_ns").shift(1))
    return (
        busy.with_columns(gap=gap)
        .group_by(by)
        .agg(
            (DUR_NS.sum() / US).alias("gpu_busy_us"),
            (pl.col("gap") >= MIN_GAP_NS).sum().cast(pl.UInt32).alias("idle_gaps"),
            (pl.col("gap").max().fill_null(0) / US).alias("largest_gap_us"),
        )
    )


def merged_intervals(intervals: pl.DataFrame, by: str | None = None) -> pl.DataFrame:
    """The union of ``[start_ns, end_ns)`` intervals (per group ``by``) as disjoint intervals, sorted
    (by group, then start). Overlapping and touching intervals merge; intervals without an end drop.

    One pass over the rows sorted by (group, start): an interval opens a new one where it starts
    after the furthest end before it (``reach``, the running maximum of the ends), and a merged
    interval ends at the reach of its last row (ends are never before starts: ``times.py`` clips).
    """
    keys = [by] if by is not None else []
    ordered = intervals.select(*keys, "start_ns", "end_ns").drop_nulls().sort(*keys, "start_ns")
    reach = pl.col("end_ns").cum_max()
    ordered = ordered.with_columns(reach=reach.over(by) if by is not None else reach)
    before = pl.col("reach").shift(1)
    opens = before.is_null() | (pl.col("start_ns") > before)
    if by is not None:
        opens = opens | pl.col(by).ne_missing(pl.col(by).shift(1))
    first = ordered.select(opens.alias("first"))["first"]
    ends = ordered["reach"].filter(first.shift(-1, fill_value=True)).alias("end_ns")
    return ordered.select(*keys, "start_ns").filter(first).with_columns(ends)


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
            pl.col("kernels_here").mean().alias("kernels_here_per_call"),
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


def _annotations(events: pl.DataFrame) -> pl.DataFrame:
    """The user annotations (few rows): name patterns are tested on these, not on every event.
    Found once per events frame (the span functions all read them)."""
    return kept(events, "annotations", lambda: _user_annotations(events))


def _user_annotations(events: pl.DataFrame) -> pl.DataFrame:
    found = events.lazy().filter(pl.col("cat") == "user_annotation").collect()
    return found.with_columns(pl.col("name").cast(pl.String))  # a cached trace's may be dictionary-encoded


def annotation_instances(events: pl.DataFrame, work: pl.DataFrame) -> pl.DataFrame:
    """Per annotation instance: the GPU work launched by any thread of its process while it was open."""
    return span_instances(events, is_annotation(), work)


def step_instances(events: pl.DataFrame, work: pl.DataFrame) -> pl.DataFrame:
    """Per ``ProfilerStep#N``: the GPU work launched during the step by any thread, and its number."""
    steps = span_instances(events, is_step(), work)
    return steps.with_columns(
        step=pl.col("name").cast(pl.String).str.extract(r"#([0-9]+)$").cast(pl.Int64, strict=False)
    )
