"""What lies in a time range of the timeline, per name (Perfetto's area selection): the Range table.

The events counted are those the shown lanes draw (a thread's every event, a stream's work, syncs and
annotations) that overlap ``[lo, hi)`` (an instant: that lies in it). Per name and category: how
many, their time inside the range (``total``: each clipped to it), their self time inside it (a CPU
event's clipped time less its children's), and their GPU time: for CPU events the GPU time of the
work they launched (the ``gpu_us`` the tree and the ops table show), for GPU work (kernels, memcpys,
memsets) its time inside the range, for a stream's syncs and annotations none. One polars pass over
the events' columns; a row leads to the first such event in the range.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from tracetui import formatting as fmt
from tracetui.trace.categories import GPU_LANE, GPU_WORK
from tracetui.views.table_spec import Column, TableSpec
from tracetui.views.timeline.index import gpu_rows

if TYPE_CHECKING:
    from tracetui.trace import Trace

US = 1000
COLUMNS = ("id", "cat", "name", "pid", "tid", "track", "parent", "start_ns", "end_ns", "gpu_us")


@dataclass(frozen=True)
class Area:
    """A range and what is in it: the Range table and its totals."""

    lo: int
    hi: int
    events: int
    lanes: int
    table: TableSpec

    @property
    def title(self) -> str:
        """``(1.11 ms) · 123 events on 3 lanes``."""
        events, lanes = fmt.count(self.events), fmt.count(self.lanes)
        return f"({fmt.span_ns(self.hi - self.lo)}) · {events} events on {lanes} lanes"


def in_range(trace: Trace, lo: int, hi: int, tracks: Collection[int] | None = None) -> pl.DataFrame:
    """The events the lanes of ``tracks`` (None: every lane) draw that overlap ``[lo, hi)``, with
    ``track``, ``clipped_ns`` (their time inside the range), ``self_ns`` and ``gpu_ns``."""
    events = trace.columns_of("events", *COLUMNS)
    starts, ends = pl.col("start_ns"), pl.col("end_ns")
    overlap = (starts < hi) & (pl.max_horizontal(ends, starts + 1) > lo)
    frame = events.lazy().with_row_index("row").filter(overlap)
    cpu = frame.filter(pl.col("track").is_not_null())
    on_gpu = frame.filter(pl.col("track").is_null() & pl.col("cat").is_in(GPU_LANE))
    gpu_lanes = gpu_rows(trace, on_gpu).select("row", pl.col("track").alias("lane"))
    gpu = on_gpu.drop("track").join(gpu_lanes, on="row", how="inner").rename({"lane": "track"})
    lazy = pl.concat(
        [cpu.with_columns(pl.lit(False).alias("gpu")), gpu.with_columns(pl.lit(True).alias("gpu"))],
        how="diagonal_relaxed",
    )
    if tracks is not None:
        lazy = lazy.filter(pl.col("track").is_in(list(tracks)))
    found = lazy.with_columns(
        clipped_ns=(pl.min_horizontal(ends, pl.lit(hi)) - pl.max_horizontal(starts, pl.lit(lo))).clip(
            lower_bound=0
        )
    ).collect()
    children = (
        found.filter(~pl.col("gpu") & pl.col("parent").is_not_null())
        .group_by("parent")
        .agg(pl.col("clipped_ns").sum().alias("children_ns"))
    )
    return found.join(children, left_on="id", right_on="parent", how="left").with_columns(
        self_ns=pl.when(pl.col("gpu"))
        .then(pl.col("clipped_ns"))
        .otherwise((pl.col("clipped_ns") - pl.col("children_ns").fill_null(0)).clip(lower_bound=0)),
        gpu_ns=pl.when(pl.col("gpu"))
        .then(pl.when(pl.col("cat").is_in(GPU_WORK)).then(pl.col("clipped_ns")).otherwise(0))
        .otherwise(pl.col("gpu_us").fill_null(0) * US),
    )


def area(trace: Trace, lo: int, hi: int, tracks: Collection[int] | None = None) -> Area:
    """The Range table of ``[lo, hi)`` over the lanes of ``tracks`` (None: every lane)."""
    found = in_range(trace, lo, hi, tracks)
    first = pl.col("id").sort_by("start_ns", "id").first()
    frame = (
        found.group_by(pl.col("name").cast(pl.String), pl.col("cat").cast(pl.String).alias("category"))
        .agg(
            pl.len().alias("count"),
            (pl.col("clipped_ns").sum() / US).alias("total_us"),
            (pl.col("self_ns").sum() / US).alias("self_us"),
            (pl.col("gpu_ns").sum() / US).alias("gpu_us"),
            first.alias("first_id"),
        )
        .sort(["total_us", "count", "name", "category"], descending=[True, True, False, False])
    )
    table = TableSpec(
        key="range",
        title="Range",
        frame=frame,
        columns=[
            Column("name", "name", 0, "left", name=True),
            Column("category", "category", 14, "left"),
            Column("count", "count", 8, fmt=fmt.count),
            Column("total_us", "total", 10, fmt=fmt.duration),
            Column("self_us", "self", 10, fmt=fmt.duration),
            Column("gpu_us", "GPU", 10, fmt=fmt.duration),
        ],
        sort="total_us",
        id_column="first_id",
        empty="nothing on the shown lanes in this range",
    )
    return Area(lo, hi, found.height, found["track"].n_unique() if found.height else 0, table)
