"""The GPU's idle time in each step's window, explained (HTA's breakdown), and the launch delay and
queue length of its work.

A step's *window* runs from its start to the later of its end and the end of the GPU work it
launched (:func:`tracetui.insight.spans.with_window_end`: the window its GPU busy share and critical
path cover). In it, per lane (device, stream) and per device (the union of its lanes), every instant
is busy (some GPU work runs, launched in any step) or idle, and each idle stretch is the gap before
the work that ends it, read as :mod:`tracetui.insight.launch_gaps` reads it:

- **host wait**: that work's launch call started after the gap began: the GPU waited for the CPU
  (and the gap after a lane's last work in the trace: nothing more was launched);
- **kernel wait**: it was queued before the gap began and the gap is shorter than
  :data:`~tracetui.insight.launch_gaps.KERNEL_WAIT_NS` (30 µs): back-to-back launch overhead;
- **other**: it was queued and still waited longer (an event on another stream, a sync, contention).

The three sum to the idle time. Per device the gap is the device's (no lane busy); its work is the
first to start after it. The statistics of the launch delay (launch call end → work start) and the
queue length (work launched and not started, per lane: HTA's) are taken over the step's own work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from tracetui.insight.distributions import percentile_columns
from tracetui.insight.launch_gaps import (
    HOST_WAIT,
    KERNEL_WAIT,
    KERNEL_WAIT_NS,
    OTHER,
    launch_gaps,
    queue_lengths,
)
from tracetui.insight.spans import span_windows
from tracetui.trace.memo import kept

if TYPE_CHECKING:
    from tracetui.trace import Trace

IDLE_PARTS = ("host_wait_us", "kernel_wait_us", "other_us")
_CATEGORY = {HOST_WAIT: 0, KERNEL_WAIT: 1, OTHER: 2}
NEVER = np.iinfo(np.int64).min // 4  # before any time: the gap before a lane's first work
FOREVER = np.iinfo(np.int64).max // 4  # after any time: the gap after a lane's last work


def step_idle(trace: Trace) -> pl.DataFrame:
    """Per step and device: ``span``, ``device``, ``window_us``, ``idle_us``, ``host_wait_us``,
    ``kernel_wait_us``, ``other_us`` (the device's gaps: no lane busy)."""
    return kept(trace, "step_idle", lambda: _idle(trace, by_stream=False))


def stream_idle(trace: Trace) -> pl.DataFrame:
    """Per step and lane: ``span``, ``device``, ``stream``, ``window_us``, ``idle_us`` and the parts."""
    return kept(trace, "stream_idle", lambda: _idle(trace, by_stream=True))


def _idle(trace: Trace, by_stream: bool) -> pl.DataFrame:
    keys = ["device", "stream"] if by_stream else ["device"]
    schema = {
        "span": pl.UInt32,
        **dict.fromkeys(keys, pl.Int64),
        "window_us": pl.Float64,
        "idle_us": pl.Float64,
        **dict.fromkeys(IDLE_PARTS, pl.Float64),
    }
    gaps = launch_gaps(trace)
    windows = span_windows(trace, "steps")
    if gaps.is_empty() or windows.is_empty():
        return pl.DataFrame(schema=schema)
    intervals = _lane_gaps(gaps) if by_stream else device_gaps(trace)
    # the groups (lanes or devices) each step's own work ran on
    placed = step_work(trace).select("span", *keys).unique()
    groups = intervals.select(*keys, "group").unique()
    wanted = (
        placed.join(groups, on=keys)
        .join(windows.select("span", "start_ns", "end_ns"), on="span")
        .sort("group", "start_ns")
    )
    parts = _clipped_sums(intervals, wanted)
    window_us = (pl.col("end_ns") - pl.col("start_ns")) / 1000.0
    return (
        wanted.join(parts, on=["span", "group"], how="left")
        .with_columns(pl.col(*IDLE_PARTS).fill_null(0.0))
        .select(
            "span",
            *keys,
            window_us.alias("window_us"),
            pl.sum_horizontal(*IDLE_PARTS).alias("idle_us"),
            *IDLE_PARTS,
        )
        .sort("span", *keys)
        .cast(schema)  # type: ignore[arg-type]
    )


def step_work(trace: Trace) -> pl.DataFrame:
    """The steps' own GPU work on its lanes: ``span``, ``device``, ``stream``, ``launch_delay_ns``
    (computed once per trace: the idle time per device and per lane and the launch delays read it)."""
    return kept(trace, "step_work", lambda: _step_work(trace))


def _step_work(trace: Trace) -> pl.DataFrame:
    windows = span_windows(trace, "steps")
    own = trace.span_work.join(windows.select("span"), on="span").select("span", "id")
    lanes = launch_gaps(trace).select("id", "device", "stream", "launch_delay_ns")
    return own.join(lanes, on="id").drop("id")


def _lane_gaps(gaps: pl.DataFrame) -> pl.DataFrame:
    """Each lane's gaps: before each work (from the furthest end before it; the first from
    :data:`NEVER`), and after its last (to :data:`FOREVER`, a host wait): ``group``, ``device``,
    ``stream``, ``gap_start``, ``gap_end``, ``category``."""
    before = gaps.select(
        pl.col("lane").alias("group"),
        "device",
        "stream",
        pl.col("reach_ns").fill_null(NEVER).alias("gap_start"),
        pl.col("start_ns").alias("gap_end"),
        pl.col("cause").replace({"none": OTHER}).alias("category"),
    ).filter(pl.col("gap_end") > pl.col("gap_start"))
    after = (
        gaps.group_by("lane")
        .agg(pl.col("device", "stream").first(), pl.col("end_ns").max())
        .select(
            pl.col("lane").alias("group"),
            "device",
            "stream",
            pl.col("end_ns").alias("gap_start"),
            pl.lit(FOREVER, pl.Int64).alias("gap_end"),
            pl.lit(HOST_WAIT).alias("category"),
        )
    )
    return pl.concat([before, after]).sort("group", "gap_start")


def device_gaps(trace: Trace) -> pl.DataFrame:
    """Each device's gaps (no lane busy), each read by the work that ends it: ``group``, ``device``,
    ``gap_start``, ``gap_end``, ``category`` (computed once per trace: the steps' idle time and the
    annotations' host wait read them)."""
    return kept(trace, "device_gaps", lambda: _device_gaps(launch_gaps(trace)))


def _device_gaps(gaps: pl.DataFrame) -> pl.DataFrame:
    # one pass over the work by (device, start): an item opens a busy interval where it starts after
    # the furthest end before it on its device (touching work merges); the gap before it runs from
    # that end, and the work that ends it is the first to start there (the earliest launch first,
    # an unlaunched one before any: as a sort puts nulls)
    ordered = gaps.select("device", "start_ns", "end_ns", "launch_start_ns", "row").sort(
        "device", "start_ns", "launch_start_ns", "row"
    )
    device = pl.col("device")
    reach = pl.col("end_ns").cum_max().over("device").shift(1)
    changed = device.ne_missing(device.shift(1))
    opens = changed | reach.is_null() | (pl.col("start_ns") > reach)
    read = ordered.select(
        "device",
        pl.when(changed).then(None).otherwise(reach).fill_null(NEVER).alias("gap_start"),
        pl.col("start_ns").alias("gap_end"),
        "launch_start_ns",
        opens.alias("opens"),
    ).filter(pl.col("opens"))
    gap = pl.col("gap_end") - pl.col("gap_start")
    category = (
        pl.when(pl.col("launch_start_ns").is_null())
        .then(pl.lit(OTHER))
        .when((pl.col("gap_start") == NEVER) | (pl.col("launch_start_ns") > pl.col("gap_start")))
        .then(pl.lit(HOST_WAIT))
        .when(gap < KERNEL_WAIT_NS)
        .then(pl.lit(KERNEL_WAIT))
        .otherwise(pl.lit(OTHER))
    )
    before = read.select("device", "gap_start", "gap_end", category.alias("category")).filter(
        pl.col("gap_end") > pl.col("gap_start")
    )
    after = (
        ordered.group_by("device")
        .agg(pl.col("end_ns").max())
        .select(
            "device",
            pl.col("end_ns").alias("gap_start"),
            pl.lit(FOREVER, pl.Int64).alias("gap_end"),
            pl.lit(HOST_WAIT).alias("category"),
        )
    )
    both = pl.concat([before, after]).sort("device", "gap_start")
    return both.with_columns(group=pl.col("device").rank("dense").cast(pl.UInt32) - 1)


def _clipped_sums(intervals: pl.DataFrame, wanted: pl.DataFrame) -> pl.DataFrame:
    """Per (span, group) of ``wanted`` (with the window ``start_ns``, ``end_ns``): the gaps of
    ``intervals`` (disjoint and sorted in each group) clipped to the window, summed by category.
    The gaps a window overlaps are a contiguous range of its group's rows: two binary searches."""
    groups = intervals["group"].to_numpy().astype(np.int64)
    starts = intervals["gap_start"].to_numpy()
    ends = intervals["gap_end"].to_numpy()
    codes = intervals["category"].replace_strict(_CATEGORY, return_dtype=pl.Int8).to_numpy()
    wanted_groups = wanted["group"].to_numpy().astype(np.int64)
    w_start, w_end = wanted["start_ns"].to_numpy(), wanted["end_ns"].to_numpy()
    # per window: gaps of its group ending after its start and starting before its end (one
    # binary search of all of a group's windows at once: a few groups)
    lo = np.zeros(len(wanted), dtype=np.int64)
    hi = np.zeros(len(wanted), dtype=np.int64)
    for group in np.unique(wanted_groups).tolist():
        mine = wanted_groups == group
        a, b = (int(i) for i in np.searchsorted(groups, [group, group + 1], side="left"))
        lo[mine] = a + np.searchsorted(ends[a:b], w_start[mine], side="right")
        hi[mine] = a + np.searchsorted(starts[a:b], w_end[mine], side="left")
    counts = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(len(wanted)), counts)
    rows = np.repeat(lo, counts) + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    clipped = np.minimum(ends[rows], w_end[owner]) - np.maximum(starts[rows], w_start[owner])
    sums = np.zeros((len(wanted), 3), dtype=np.int64)
    np.add.at(sums, (owner, codes[rows].astype(np.int64)), np.maximum(clipped, 0))
    return pl.DataFrame(
        {
            "span": wanted["span"],
            "group": wanted["group"],
            **{part: sums[:, i] / 1000.0 for i, part in enumerate(IDLE_PARTS)},
        }
    )


def step_launches(trace: Trace) -> pl.DataFrame:
    """Per step: its work's launch delay (``launch_delay_p50_us``, ``_p90_us``, ``_p99_us``,
    ``launch_delay_max_us``) and queue length over its window (``queue_max``, ``queue_mean``: the
    time-weighted mean, summed over its lanes)."""
    return kept(trace, "step_launches", lambda: _step_launches(trace))


def _step_launches(trace: Trace) -> pl.DataFrame:
    windows = span_windows(trace, "steps")
    gaps = launch_gaps(trace)
    schema = {
        "span": pl.UInt32,
        "launch_delay_p50_us": pl.Float64,
        "launch_delay_p90_us": pl.Float64,
        "launch_delay_p99_us": pl.Float64,
        "launch_delay_max_us": pl.Float64,
        "queue_max": pl.Int64,
        "queue_mean": pl.Float64,
    }
    if windows.is_empty() or gaps.is_empty():
        return pl.DataFrame(schema=schema)
    delays = (
        step_work(trace)
        .select("span", "launch_delay_ns")
        .drop_nulls("launch_delay_ns")
        .group_by("span")
        .agg(
            *(
                c.alias(f"launch_delay_{c.meta.output_name()}")
                for c in percentile_columns(pl.col("launch_delay_ns"))
            ),
            (pl.col("launch_delay_ns").max() / 1000.0).alias("launch_delay_max_us"),
        )
    )
    queues = _queue_in_windows(trace, windows)
    return (
        windows.select("span")
        .join(delays, on="span", how="left")
        .join(queues, on="span", how="left")
        .with_columns(pl.col("queue_max").fill_null(0), pl.col("queue_mean").fill_null(0.0))
        .cast(schema)  # type: ignore[arg-type]
    )


def _queue_in_windows(trace: Trace, windows: pl.DataFrame) -> pl.DataFrame:
    """Per step: the highest queue length of any lane in its window, and the mean over the window
    of the queue summed over lanes (each change's value held until the next, clipped to the window)."""
    queue = queue_lengths(trace)
    if queue.is_empty():
        return pl.DataFrame(schema={"span": pl.UInt32, "queue_max": pl.Int64, "queue_mean": pl.Float64})
    # the device-wide queue (all lanes) as one step function: each change applied in time order
    changes = queue.sort("at_ns").with_columns(
        delta=pl.col("queued") - pl.col("queued").shift(1).over("lane").fill_null(0)
    )
    total = changes.select("at_ns", pl.col("delta").cum_sum().alias("total"), "queued")
    at = total["at_ns"].to_numpy()
    value = total["total"].to_numpy()
    lane_value = total["queued"].to_numpy()
    rows = []
    for span, start, end in windows.select("span", "start_ns", "end_ns").iter_rows():  # one per step
        lo = int(np.searchsorted(at, start, side="right"))
        hi = int(np.searchsorted(at, end, side="left"))
        points = np.concatenate([[start], at[lo:hi], [end]])
        held = np.concatenate([[value[lo - 1] if lo > 0 else 0], value[lo:hi]])
        span_ns = end - start
        mean = float((held * np.diff(points)).sum() / span_ns) if span_ns > 0 else 0.0
        peak = int(max(lane_value[lo:hi].max(initial=0), lane_value[lo - 1] if lo > 0 else 0))
        rows.append((span, peak, mean))
    return pl.DataFrame(
        rows, schema={"span": pl.UInt32, "queue_max": pl.Int64, "queue_mean": pl.Float64}, orient="row"
    )


def annotation_host_wait(trace: Trace) -> pl.DataFrame:
    """Per annotation call and device: ``span``, ``name``, ``host_wait_us``: the device's host-wait
    gaps inside the call's window (what the data loader and optimizer advice read)."""
    return kept(trace, "annotation_host_wait", lambda: _annotation_host_wait(trace))


def _annotation_host_wait(trace: Trace) -> pl.DataFrame:
    schema = {"span": pl.UInt32, "name": pl.String, "host_wait_us": pl.Float64}
    gaps = launch_gaps(trace)
    windows = span_windows(trace, "annotations")
    if gaps.is_empty() or windows.is_empty():
        return pl.DataFrame(schema=schema)
    intervals = device_gaps(trace)
    groups = intervals.select("device", "group").unique()
    wanted = (
        windows.select("span", "name", "start_ns", "end_ns")
        .join(groups, how="cross")
        .sort("group", "start_ns")
    )
    parts = _clipped_sums(intervals, wanted)
    return (
        wanted.join(parts, on=["span", "group"])
        .group_by("span", "name", maintain_order=True)
        .agg(pl.col("host_wait_us").sum())
        .cast(schema)  # type: ignore[arg-type]
    )
