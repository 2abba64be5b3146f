"""A trace's GPU work (kernels, memcpys, memsets) as the insight readings take it, and the trace's
time: its span and the GPU's busy time."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.trace.align import lookup
from tracetui.trace.categories import GPU_WORK
from tracetui.trace.memo import kept
from tracetui.trace.stats import merged_intervals

if TYPE_CHECKING:
    from tracetui.trace import Trace

WORK_COLUMNS = ("id", "name", "cat", "dur", "start_ns", "end_ns", "launch_id", "launch_op_id")

WORK_ARGS = ("device", "bytes", "grid")


def gpu_work(trace: Trace) -> pl.DataFrame:
    """The GPU work (kernels, memcpys, memsets) in event order, with the columns the insight
    aggregates read (:data:`WORK_COLUMNS`, and :data:`WORK_ARGS` of its args): found once per
    trace, without building :attr:`Trace.gpu` (every column of every GPU event)."""
    return kept(trace, "gpu_work", lambda: _gpu_work(trace))


def _gpu_work(trace: Trace) -> pl.DataFrame:
    rows = trace.events.lazy().filter(pl.col("cat").is_in(GPU_WORK)).select(WORK_COLUMNS).collect()
    # one piece per column (the query's output comes in morsels): its readers gather from it
    return pl.concat([rows, lookup(trace.gpu_args, rows["id"], *WORK_ARGS)], how="horizontal").rechunk()


def is_gpu_work(trace: Trace, event_id: int) -> bool:
    """Whether ``event_id`` is one of the GPU work events (a sorted search of their ids)."""
    ids = gpu_work(trace)["id"]
    at = ids.search_sorted(event_id)
    return bool(at < len(ids) and ids[at] == event_id)


def span_us(trace: Trace) -> float:
    """The trace's span (µs): from its first event's start to its last event's end."""
    bounds = trace.events.select(pl.col("end_ns").max().fill_null(0) - pl.col("start_ns").min().fill_null(0))
    return float(bounds.item()) / 1000.0


def gpu_work_union_us(trace: Trace) -> float:
    """GPU busy time over the whole trace (µs): the union of all GPU work intervals."""
    busy = merged_intervals(gpu_work(trace))
    return float((busy["end_ns"] - busy["start_ns"]).sum()) / 1000.0
