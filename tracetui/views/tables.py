"""The tables (ops, kernels, annotations, steps, anomalies, orphans, memory): frames, columns, and
how a row leads back into the tree. Pure; built once per trace in a worker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import polars as pl

from tracetui import formatting as fmt
from tracetui.insight.distributions import BINS, PERCENTILES
from tracetui.insight.kernel_names import kernel_name_columns
from tracetui.insight.memory import memory_of
from tracetui.trace.categories import GPU_WORK
from tracetui.views.distribution import sparkline
from tracetui.views.insight import Insight
from tracetui.views.memory import memory_table
from tracetui.views.table_spec import Column, TableSpec

if TYPE_CHECKING:
    from tracetui.insight.memory import Memory
    from tracetui.trace import Trace


def filter_rows(frame: pl.DataFrame, columns: list[Column], text: str) -> pl.DataFrame:
    """The rows of ``frame`` where any shown text column contains ``text`` (case-insensitive, literal;
    a list column by any of its items); ``frame`` itself when ``text`` is empty. Order kept."""
    needle = text.strip().lower()
    if not needle:
        return frame
    matches = []
    for column in columns:
        dtype = frame.schema.get(column.key)
        if dtype in (pl.String, pl.Categorical):  # Categorical: the events' text, dictionary-encoded
            value = pl.col(column.key).cast(pl.String)
        elif isinstance(dtype, pl.List) and dtype.inner in (pl.String, pl.Categorical):
            value = pl.col(column.key).cast(pl.List(pl.String)).list.join(", ")
        else:
            continue
        matches.append(value.str.to_lowercase().str.contains(needle, literal=True).fill_null(False))
    if not matches:
        return frame.clear()
    return frame.filter(pl.any_horizontal(matches))


def _join_optional(
    frame: pl.DataFrame,
    extra: pl.DataFrame | None,
    on: str,
    columns: Mapping[str, type[pl.DataType] | pl.DataType],
) -> pl.DataFrame:
    """``frame`` with ``columns`` from ``extra`` (joined on ``on``), null where ``extra`` lacks them."""
    present = [c for c in columns if extra is not None and c in extra.columns and on in extra.columns]
    if extra is not None and present:
        frame = frame.join(extra.select(on, *present), on=on, how="left", maintain_order="left")
    missing = [pl.lit(None, dtype).alias(c) for c, dtype in columns.items() if c not in present]
    return frame.with_columns(missing) if missing else frame


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def build_tables(
    trace: Trace, insight: Insight | None = None, memory: Memory | None = None
) -> dict[str, TableSpec]:
    """Every table, keyed ``ops``, ``kernels``, ``annotations``, ``steps``, ``anomalies``, ``orphans``,
    ``memory``; with ``insight``, kernels gain their achieved rates and steps their verdict;
    ``memory``: the trace's memory reading when the caller has it (else it is computed)."""

    insight = insight or Insight()
    memory = memory if memory is not None else memory_of(trace)
    return {
        spec.key: spec
        for spec in (
            _ops(trace),
            _kernels(trace, insight),
            _annotations(trace),
            _steps(trace, insight),
            _anomalies(trace),
            _orphans(trace),
            memory_table(memory, trace.t0_ns),
        )
    }


def _ops(trace: Trace) -> TableSpec:
    return TableSpec(
        key="ops",
        title="Ops",
        frame=trace.ops,
        columns=[
            Column("name", "op", 0, "left", name=True),
            Column("calls", "calls", 8, fmt=fmt.count),
            Column("cpu_total_us", "CPU total", 10, fmt=fmt.duration),
            Column("cpu_self_us", "CPU self", 10, fmt=fmt.duration),
            Column("gpu_us", "GPU", 10, fmt=fmt.duration),
            Column("kernels", "kernels", 8, fmt=fmt.count),
            Column("memsets", "memsets", 8, fmt=fmt.count),
            Column("memcpys", "memcpys", 8, fmt=fmt.count),
            Column("launches_kernels", "launches", 9, "center", _yes),
        ],
        sort="gpu_us",
        cats=("cpu_op",),
        empty="no ops in this trace",
    )


def _kernels(trace: Trace, insight: Insight) -> TableSpec:

    frame = trace.kernels
    if frame.height:
        decoded = kernel_name_columns(frame["name"]).select("name", "short", "family")
        frame = frame.join(decoded, on="name", how="left", maintain_order="left")
    else:
        frame = frame.with_columns(
            pl.lit(None, pl.String).alias("short"), pl.lit(None, pl.String).alias("family")
        )
    rates: dict[str, type[pl.DataType] | pl.DataType]
    rates = {"tflops": pl.Float64, "gbs": pl.Float64, "roof_fraction": pl.Float64, "bound": pl.String}
    frame = _join_optional(frame, insight.kernel_names, "name", rates)
    spread: dict[str, type[pl.DataType] | pl.DataType] = {f"p{p}_us": pl.Float64 for p in PERCENTILES}
    spread["histogram"] = pl.List(pl.UInt32)
    frame = _join_optional(frame, insight.distributions, "name", spread)
    return TableSpec(
        key="kernels",
        title="Kernels",
        frame=frame,
        columns=[
            Column("short", "kernel", 36, "left", name=True),
            Column("calls", "calls", 7, fmt=fmt.count),
            Column("total_us", "total", 10, fmt=fmt.duration),
            Column("avg_us", "avg", 9, fmt=fmt.duration),
            Column("min_us", "min", 9, fmt=fmt.duration),
            Column("p50_us", "p50", 9, fmt=fmt.duration),
            Column("p90_us", "p90", 9, fmt=fmt.duration),
            Column("p99_us", "p99", 9, fmt=fmt.duration),
            Column("max_us", "max", 9, fmt=fmt.duration),
            Column("histogram", "min … max", BINS, "left", sparkline),
            Column("tflops", "TFLOP/s", 8, fmt=fmt.number),
            Column("gbs", "GB/s", 7, fmt=fmt.number),
            Column("roof_fraction", "of roof", 8, fmt=lambda v: fmt.percent(v * 100)),
            Column("bound", "bound", 13, "left"),
            Column("launched_by", "launched by", 22, "left", lambda ops: ", ".join(ops)),
            Column("family", "family", 14, "left"),
            Column("name", "name", 0, "left"),
        ],
        sort="total_us",
        cats=GPU_WORK,
        empty="no GPU work in this trace",
    )


def _annotations(trace: Trace) -> TableSpec:
    return TableSpec(
        key="annotations",
        title="Annotations",
        frame=trace.annotations,
        columns=[
            Column("name", "annotation", 0, "left", name=True),
            Column("calls", "calls", 7, fmt=fmt.count),
            Column("kernels_per_call", "kernels/call", 12, fmt=fmt.count),
            Column("kernels_here_per_call", "own thread", 10, fmt=fmt.count),
            Column("gpu_events_per_call", "GPU ev/call", 11, fmt=fmt.count),
            Column("cpu_us_per_call", "CPU/call", 10, fmt=fmt.duration),
            Column("gpu_us_per_call", "GPU/call", 10, fmt=fmt.duration),
            Column("gpu_busy_us_per_call", "busy/call", 10, fmt=fmt.duration),
            Column("gpu_us", "GPU total", 10, fmt=fmt.duration),
        ],
        cats=("user_annotation",),
        empty="no record_function annotations in this trace",
    )


def _steps(trace: Trace, insight: Insight) -> TableSpec:
    frame = trace.steps.with_columns(
        busy_pct=pl.when(pl.col("dur") > 0).then(pl.col("gpu_busy_us") / pl.col("dur") * 100).otherwise(0.0)
    )
    frame = _join_optional(frame, insight.steps, "id", {"bound": pl.String})
    return TableSpec(
        key="steps",
        title="Steps",
        frame=frame,
        columns=[
            Column("name", "step", 0, "left", name=True),
            Column("dur", "CPU span", 10, fmt=fmt.duration),
            Column("gpu_us", "GPU", 10, fmt=fmt.duration),
            Column("gpu_busy_us", "GPU busy", 10, fmt=fmt.duration),
            Column("busy_pct", "busy", 8, fmt=fmt.percent),
            Column("kernels", "kernels", 8, fmt=fmt.count),
            Column("kernels_here", "own thread", 10, fmt=fmt.count),
            Column("memcpys", "memcpys", 8, fmt=fmt.count),
            Column("memsets", "memsets", 8, fmt=fmt.count),
            Column("idle_gaps", "gaps", 6, fmt=fmt.count),
            Column("largest_gap_us", "largest gap", 11, fmt=fmt.duration),
            Column("bound", "bound", 13, "left"),
        ],
        id_column="id",
        empty="no ProfilerStep#N spans in this trace",
    )


def _anomalies(trace: Trace) -> TableSpec:
    anomalies = trace.anomalies  # the names of its events looked up, not a join on every event's
    frame = anomalies.with_columns(
        trace.lookup(anomalies["event_id"], "name")["name"].alias("event"),
        trace.lookup(anomalies["other_id"], "name")["name"].alias("other"),
    ).with_row_index("n")
    return TableSpec(
        key="anomalies",
        title="Anomalies",
        frame=frame,
        columns=[
            Column("kind", "kind", 22, "left"),
            Column("event_id", "event id", 9, fmt=str),
            Column("event", "event", 0, "left", name=True),
            Column("other_id", "other id", 9, fmt=str),
            Column("other", "other", 0, "left"),
        ],
        id_column="event_id",
        empty="no anomalies: every event nested and linked cleanly",
    )


def _orphans(trace: Trace) -> TableSpec:
    t0 = trace.t0_ns
    frame = trace.orphans.with_columns(start_ms=(pl.col("start_ns") - t0) / 1_000_000).select(
        "id", "name", "cat", "start_ms", "dur", "device", "stream", "correlation"
    )
    return TableSpec(
        key="orphans",
        title="Orphans",
        frame=frame,
        columns=[
            Column("name", "GPU work", 0, "left", name=True),
            Column("cat", "cat", 11, "left"),
            Column("start_ms", "start (ms)", 11, fmt=lambda v: fmt.fixed(v, 3)),
            Column("dur", "duration", 10, fmt=fmt.duration),
            Column("device", "device", 7, fmt=str),
            Column("stream", "stream", 7, fmt=str),
            Column("correlation", "correlation", 12, fmt=str),
        ],
        id_column="id",
        empty="no orphans: every GPU event has its launch call",
    )
