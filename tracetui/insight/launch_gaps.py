"""Each piece of GPU work on its stream: the work before it, its launch, and why it started when it
did: the one table the idle breakdown, the launch statistics and the critical path read.

Per GPU work item (kernel, memcpy, memset), on its *lane* (device, stream), in stream order (start,
then id):

- ``reach_ns``: the furthest end of the work before it on the lane (a running maximum: overlapping
  work, as Programmatic Dependent Launch makes, never opens a gap); ``reach_row``: the row that
  reached it (-1: the first work of the lane);
- ``gap_ns``: the idle time before it on the lane, ``start − reach`` (0 when it overlaps);
- ``cause``, HTA's reading of that gap (``get_idle_time_breakdown``): **host wait** when its launch
  call started after the work before it ended (the GPU waited for the CPU to launch it; the first
  work of a lane too); else **kernel wait** when the gap is shorter than :data:`KERNEL_WAIT_NS`
  (back-to-back work, the price of launching one more); else **other** (it was launched in time
  and still waited: another stream's event, a synchronisation, contention). Work with no launch
  call in the trace (an orphan) is ``other``, ``none`` when it is also the first of its lane;
- ``launch_delay_ns``: HTA's launch delay, from the end of the launch call to the work's start
  (clipped at 0: work may start before its call returns);
- ``head``: the first row of its *chain*, the run of work ending with it in which each item waited
  only for the one before it (cause kernel wait): the critical path crosses a chain in one step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.insight.gpu_work import gpu_work
from tracetui.trace.align import lookup
from tracetui.trace.memo import kept

if TYPE_CHECKING:
    from tracetui.trace import Trace

KERNEL_WAIT_NS = 30_000
"""A gap shorter than this between work already queued is a kernel wait (HTA's
``consecutive_kernel_delay`` default, 30: its frames hold µs, although its docstring says ns)."""
HOST_WAIT, KERNEL_WAIT, OTHER, NONE = "host_wait", "kernel_wait", "other", "none"
CAUSES = (HOST_WAIT, KERNEL_WAIT, OTHER, NONE)

GAP_SCHEMA = {
    "row": pl.UInt32,
    "id": pl.UInt32,
    "name": pl.Categorical,
    "cat": pl.Categorical,
    "lane": pl.UInt32,
    "device": pl.Int64,
    "stream": pl.Int64,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "launch_id": pl.UInt32,
    "launch_start_ns": pl.Int64,
    "launch_end_ns": pl.Int64,
    "launch_track": pl.Int32,
    "reach_ns": pl.Int64,
    "reach_row": pl.Int64,
    "gap_ns": pl.Int64,
    "cause": pl.String,
    "launch_delay_ns": pl.Int64,
    "head": pl.UInt32,
}


def launch_gaps(trace: Trace) -> pl.DataFrame:
    """The GPU work in lane order (``row`` = its position) with the columns of the module's
    docstring (work without a time left out); computed once per trace."""
    return kept(trace, "launch_gaps", lambda: _launch_gaps(trace))


def _launch_gaps(trace: Trace) -> pl.DataFrame:
    # work without a start has no place on its lane: left out (the anomalies list it, missing_timestamp)
    work = gpu_work(trace).filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    if work.is_empty():
        return pl.DataFrame(schema=GAP_SCHEMA)
    args = lookup(trace.gpu_args, work["id"], "stream")
    calls = trace.lookup(work["launch_id"], "start_ns", "end_ns", "track")
    table = pl.DataFrame(
        {
            "id": work["id"],
            "name": work["name"],
            "cat": work["cat"],
            "device": work["device"].cast(pl.Int64),
            "stream": args["stream"].cast(pl.Int64),
            "start_ns": work["start_ns"],
            "end_ns": work["end_ns"],
            "launch_id": work["launch_id"],
            "launch_start_ns": calls["start_ns"],
            "launch_end_ns": calls["end_ns"],
            "launch_track": calls["track"].cast(pl.Int32),
        }
    )
    table = (
        table.with_columns(pl.col("device", "stream").fill_null(-1))
        .sort("device", "stream", "start_ns", "id")
        .with_row_index("row")
        .with_columns(lane=pl.struct("device", "stream").rank("dense").cast(pl.UInt32) - 1)
    )
    lane = pl.col("lane")
    first = lane.ne_missing(lane.shift(1))
    reach = pl.col("end_ns").cum_max().over("lane")
    reached = pl.when(pl.col("end_ns") >= reach).then(pl.col("row").cast(pl.Int64))
    table = table.with_columns(
        reach_ns=pl.when(first).then(None).otherwise(reach.shift(1)),
        reach_row=pl.when(first).then(-1).otherwise(reached.forward_fill().over("lane").shift(1)),
    )
    launched = pl.col("launch_start_ns").is_not_null()
    gap = (pl.col("start_ns") - pl.col("reach_ns")).clip(0)
    cause = (
        pl.when(~launched)
        .then(pl.when(pl.col("reach_ns").is_null()).then(pl.lit(NONE)).otherwise(pl.lit(OTHER)))
        .when(pl.col("reach_ns").is_null() | (pl.col("launch_start_ns") > pl.col("reach_ns")))
        .then(pl.lit(HOST_WAIT))
        .when(gap < KERNEL_WAIT_NS)
        .then(pl.lit(KERNEL_WAIT))
        .otherwise(pl.lit(OTHER))
    )
    table = table.with_columns(
        gap_ns=gap.fill_null(0),
        cause=cause,
        launch_delay_ns=(pl.col("start_ns") - pl.col("launch_end_ns")).clip(0),
    )
    opens = first | (pl.col("cause") != KERNEL_WAIT)
    head = pl.when(opens).then(pl.col("row")).forward_fill()
    table = table.with_columns(head=head, reach_row=pl.col("reach_row").fill_null(-1)).select(
        list(GAP_SCHEMA)
    )
    return table.rechunk()  # one piece per column: the walk reads its columns as numpy views


def queue_lengths(trace: Trace) -> pl.DataFrame:
    """HTA's queue length per lane over time: ``(lane, device, stream, at_ns, queued)``, one row per
    change: +1 when a launch call starts, −1 when its work starts (work whose launch is in the trace
    only); ``queued`` is the number launched and not started after the change."""
    gaps = launch_gaps(trace).filter(pl.col("launch_start_ns").is_not_null())
    keys = ["lane", "device", "stream"]
    changes = pl.concat(
        [
            gaps.select(*keys, pl.col("launch_start_ns").alias("at_ns"), pl.lit(1, pl.Int32).alias("step")),
            gaps.select(*keys, pl.col("start_ns").alias("at_ns"), pl.lit(-1, pl.Int32).alias("step")),
        ]
    )
    # at equal times the start of work comes first (it was launched before): the queue never dips below 0
    return (
        changes.sort("lane", "at_ns", "step")
        .with_columns(queued=pl.col("step").cum_sum().over("lane"))
        .select(*keys, "at_ns", "queued")
    )
