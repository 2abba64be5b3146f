"""The units that ``diff`` and ``check`` count in: calls of an annotation, profiler steps, the trace.

A *units* frame has one row per unit: ``scope`` (the annotation name, ``"steps"`` or ``"trace"``),
``unit`` (a row index, unique in the frame), ``event_id`` (the annotation or step event; null for
the trace), ``pos``/``end_pos`` (the unit's CPU subtree; annotations only), ``cpu_us`` (the
unit's duration; the trace's span), ``gpu_us`` (GPU work time, summed), ``gpu_busy_us`` (their
union), ``gpu_events``, ``kernels``, ``memcpys`` and ``memsets``.

Membership follows the model's own counts: an annotation call holds the CPU events of its process
that start while it is open and the GPU work launched meanwhile, from any thread
(:func:`tracetui.trace.stats.span_work`: the backward on the autograd thread counts); a step holds
the events whose ``step_id`` is that step (any thread); the trace holds everything, orphans
included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import polars as pl

from tracetui.insight.gpu_work import gpu_work_union_us, span_us
from tracetui.trace.categories import GPU_WORK
from tracetui.trace.stats import annotation_cpu_events

if TYPE_CHECKING:
    from collections.abc import Collection

    from tracetui.trace import Trace

Kind = Literal["annotation", "steps", "trace"]
COUNT_COLUMNS = ("gpu_events", "kernels", "memcpys", "memsets")
STEPS: Kind = "steps"
TRACE: Kind = "trace"

_UNIT_SCHEMA = pl.Schema(
    {
        "scope": pl.String(),
        "unit": pl.UInt32(),
        "event_id": pl.UInt32(),
        "pos": pl.Int64(),
        "end_pos": pl.Int64(),
        "cpu_us": pl.Float64(),
        "gpu_us": pl.Float64(),
        "gpu_busy_us": pl.Float64(),
        **{c: pl.UInt32() for c in COUNT_COLUMNS},
    }
)


def units(trace: Trace, kind: Kind, names: Collection[str] | None = None) -> pl.DataFrame:
    """The units of one kind, in time order; ``names`` limits annotations to those names."""
    if kind == "annotation":
        spans = trace.annotation_instances
        if names is not None:
            spans = spans.filter(pl.col("name").is_in(list(names)))
        frame = spans.select(
            pl.col("name").alias("scope"), pl.col("id").alias("event_id"), "pos", "end_pos", *_numbers()
        )
    elif kind == STEPS:
        frame = trace.steps.select(
            pl.lit(STEPS).alias("scope"),
            pl.col("id").alias("event_id"),
            pl.lit(None, pl.Int64).alias("pos"),
            pl.lit(None, pl.Int64).alias("end_pos"),
            *_numbers(),
        )
    else:
        frame = _trace_unit(trace)
    return frame.with_row_index("unit").cast(_UNIT_SCHEMA).select(list(_UNIT_SCHEMA))


def _numbers() -> list[pl.Expr]:
    return [pl.col("dur").alias("cpu_us"), *(pl.col(c) for c in ("gpu_us", "gpu_busy_us", *COUNT_COLUMNS))]


def _trace_unit(trace: Trace) -> pl.DataFrame:
    work = trace.gpu.filter(pl.col("cat").is_in(GPU_WORK))
    return pl.DataFrame(
        {
            "scope": [TRACE],
            "event_id": [None],
            "pos": [None],
            "end_pos": [None],
            "cpu_us": [span_us(trace)],
            "gpu_us": [float(work["dur"].sum())],
            "gpu_busy_us": [gpu_work_union_us(trace)],
            "gpu_events": [len(work)],
            "kernels": [int((work["cat"] == "kernel").sum())],
            "memcpys": [int((work["cat"] == "gpu_memcpy").sum())],
            "memsets": [int((work["cat"] == "gpu_memset").sum())],
        },
        schema_overrides={"event_id": pl.UInt32, "pos": pl.Int64, "end_pos": pl.Int64},
    )


def cpu_members(trace: Trace, kind: Kind, unit_frame: pl.DataFrame) -> pl.DataFrame:
    """``(unit, id)`` for every CPU-tree event in each unit (not the annotation event itself)."""
    tree = trace.events.filter(pl.col("pos").is_not_null()).select("id", "pos", "step_id")
    if kind == "annotation":
        spans = unit_frame.select("unit", pl.col("event_id").alias("span"))
        members = annotation_cpu_events(trace.events).join(spans, on="span")
        return members.select("unit", "id").sort("unit", "id")
    if kind == STEPS:
        steps = unit_frame.select("unit", pl.col("event_id").alias("step_id"))
        return tree.join(steps, on="step_id").select("unit", "id").sort("unit", "id")
    return tree.select(pl.lit(0, pl.UInt32).alias("unit"), "id")


def gpu_members(trace: Trace, kind: Kind, unit_frame: pl.DataFrame, cpu: pl.DataFrame) -> pl.DataFrame:
    """GPU work rows (kernels, memcpys, memsets) of each unit, with a ``unit`` column.

    ``cpu`` is :func:`cpu_members` of the same units, whose calls launched the work.
    """
    del cpu  # the work of annotations and steps is the model's (``Trace.span_work``): their calls
    work = trace.gpu.filter(pl.col("cat").is_in(GPU_WORK))
    if kind in ("annotation", STEPS):
        spans = unit_frame.select("unit", pl.col("event_id").alias("span"))
        members = trace.span_work.join(spans, on="span").select("unit", "id")
        return work.join(members, on="id").sort("unit", "start_ns")
    return work.with_columns(pl.lit(0, pl.UInt32).alias("unit"))


def cpu_tree(trace: Trace) -> pl.DataFrame:
    """CPU-tree events in preorder with ``parent_pos``, the row of the parent (-1 for roots), as
    :func:`tracetui.trace.nesting.ancestor_ids` expects."""
    tree = (
        trace.events.filter(pl.col("pos").is_not_null())
        .sort("pos")
        .select("id", "cat", "name", "parent", "pos", "dur", "gpu_events")
    )
    rows = tree.select(
        pl.col("id").alias("parent"), pl.int_range(pl.len(), dtype=pl.Int64).alias("parent_pos")
    )
    return tree.join(rows, on="parent", how="left", maintain_order="left").with_columns(
        pl.col("parent_pos").fill_null(-1)
    )
