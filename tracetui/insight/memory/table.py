"""The memory table: one row per ``[memory]`` instant (an allocation or a free), in time order.

Columns: ``order`` (position in time), ``id`` (the instant's index in ``traceEvents``), ``ts``
(µs as written), ``ts_ns``, ``device`` (``cuda:0``, ``cpu``, …), ``addr``, ``bytes`` (+ allocated,
− freed), ``kind`` (``alloc``/``free``), ``allocated`` and ``reserved`` (the allocator's totals
after the event), ``pid``, ``tid``, the op (innermost ``cpu_op`` holding the instant on its
thread; null when none does, e.g. on the caching allocator's own threads), ``annotation``,
``step``, the python ``frame`` (``with_stack``), each with its event id, and the pairing:
``pair_id`` (an allocation's free, a free's allocation), ``lifetime_us`` and
``alive_at_end`` (an allocation never freed inside the trace). ``track``/``enclosing_id``/
``enclosing_pos`` place the instant in the CPU tree (the details pane's subtree filter).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.insight.memory.enclosing import enclosing
from tracetui.insight.memory.pairing import pair_events
from tracetui.trace.align import lookup
from tracetui.trace.links import steps_at
from tracetui.trace.times import exact_ns

if TYPE_CHECKING:
    from tracetui.trace import Trace

MEMORY_EVENT = "[memory]"
# c10::DeviceType: the names torch prints (ROCm reports its GPUs as cuda).
DEVICE_TYPES = {
    0: "cpu",
    1: "cuda",
    2: "mkldnn",
    3: "opengl",
    4: "opencl",
    5: "ideep",
    6: "hip",
    7: "fpga",
    8: "maia",
    9: "xla",
    10: "vulkan",
    11: "metal",
    12: "xpu",
    13: "mps",
    14: "meta",
    15: "hpu",
    16: "ve",
    17: "lazy",
    18: "ipu",
    19: "mtia",
    20: "privateuseone",
}
SCHEMA: dict[str, pl.DataType] = {
    "order": pl.UInt32(),
    "id": pl.UInt32(),
    "ts": pl.Float64(),
    "ts_ns": pl.Int64(),
    "device": pl.Categorical(),
    "device_type": pl.Int64(),
    "device_id": pl.Int64(),
    "addr": pl.Int64(),
    "bytes": pl.Int64(),
    "kind": pl.Categorical(),
    "allocated": pl.Int64(),
    "reserved": pl.Int64(),
    "pid": pl.String(),
    "tid": pl.String(),
    "op_id": pl.UInt32(),
    "op": pl.Categorical(),
    "annotation_id": pl.UInt32(),
    "annotation": pl.Categorical(),
    "step_id": pl.UInt32(),
    "step": pl.Categorical(),
    "frame_id": pl.UInt32(),
    "frame": pl.Categorical(),
    "pair_id": pl.UInt32(),
    "lifetime_us": pl.Float64(),
    "alive_at_end": pl.Boolean(),
    "pair_order": pl.UInt32(),
    "track": pl.Int32(),
    "enclosing_id": pl.UInt32(),
    "enclosing_pos": pl.Int64(),
}


def device_label() -> pl.Expr:
    """``cuda:0``, ``cpu`` (the CPU allocator writes device -1), ``mtia:1``; ``type 42:0`` for an
    unknown type."""
    kind = pl.col("device_type").replace_strict(DEVICE_TYPES, default=None, return_dtype=pl.String)
    kind = kind.fill_null(pl.concat_str(pl.lit("type "), pl.col("device_type").cast(pl.String)))
    index = pl.col("device_id").cast(pl.String)
    labelled = pl.when(pl.col("device_id").is_null() | (pl.col("device_id") < 0)).then(kind)
    return labelled.otherwise(pl.concat_str(kind, pl.lit(":"), index)).fill_null("unknown")


def memory_events(trace: Trace) -> pl.DataFrame:
    """The memory table of ``trace`` (empty, with every column, when it has no memory events).

    What is found for the rows (where they happened, their step, their pair) is placed beside
    them in their order: no join copies the table."""
    instants = trace.instants
    if "alloc_bytes" not in instants.columns:  # a trace with no instant carrying args
        instants = instants.with_columns(
            pl.lit(None, pl.Int64).alias(c)
            for c in ("alloc_bytes", "addr", "total_allocated", "total_reserved", "device_type", "device_id")
        )
    kind = SCHEMA["kind"]
    rows = (
        instants.filter(pl.col("name") == MEMORY_EVENT)
        .select(
            "id",
            "ts",
            exact_ns("ts").alias("ts_ns"),
            "device_type",
            "device_id",
            "addr",
            pl.col("alloc_bytes").alias("bytes"),
            pl.when(pl.col("alloc_bytes") > 0)
            .then(pl.lit("alloc", kind))
            .when(pl.col("alloc_bytes") < 0)
            .then(pl.lit("free", kind))
            .otherwise(pl.lit("none", kind))
            .alias("kind"),
            pl.col("total_allocated").alias("allocated"),
            pl.col("total_reserved").alias("reserved"),
            "pid",
            "tid",
        )
        .sort("ts_ns", "id", nulls_last=True)
        .with_row_index("order")
    )
    if rows.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    rows = rows.hstack([_devices(rows)])
    ids = rows.select("id")
    rows = rows.hstack(enclosing(trace, rows).drop("id"))  # one row each, in their order
    events = trace.columns_of("events", "id", "cat", "name", "pid", "start_ns", "end_ns")
    steps = steps_at(events, rows.select("id", "pid", pl.col("ts_ns").alias("start_ns")))
    rows = rows.hstack(ids.join(steps, on="id", how="left", maintain_order="left").drop("id"))
    names = events.select("id", "name")  # looked up by id: no hash table of every event's name
    rows = rows.with_columns(
        lookup(names, rows[f"{column}_id"], "name").to_series().alias(column)
        for column in ("op", "annotation", "step", "frame")
    )
    pairs = pair_events(rows)
    rows = rows.hstack(ids.join(pairs, on="id", how="left", maintain_order="left").drop("id"))
    rows = rows.with_columns(
        lifetime_us=pl.when(pl.col("kind") == "alloc").then((pl.col("pair_ns") - pl.col("ts_ns")) / 1000),
        alive_at_end=pl.when(pl.col("kind") == "alloc").then(pl.col("pair_id").is_null()),
    )
    return rows.select(pl.col(name).cast(dtype) for name, dtype in SCHEMA.items())


def _devices(rows: pl.DataFrame) -> pl.Series:
    """Each row's device label, made once per device (a trace has a few) and placed by a join."""
    key = ["device_type", "device_id"]
    labels = rows.select(key).unique().with_columns(device_label().cast(SCHEMA["device"]).alias("device"))
    placed = rows.select(key).join(labels, on=key, how="left", maintain_order="left", nulls_equal=True)
    return placed["device"]
