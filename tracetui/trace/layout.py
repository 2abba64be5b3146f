"""The tables a loaded trace is made of, with their column types, in one place.

A :class:`~tracetui.trace.model.Trace` holds :data:`MODEL_TABLES` (its attributes of those names)
and its raw args provider's :data:`ARGS_TABLES` (:meth:`~tracetui.trace.args.ArgsBlocks.tables`)
with the file :data:`ARGS_FILE` (:meth:`~tracetui.trace.args.ArgsBlocks.files`); that is everything
a cache stores to rebuild it (``Trace.stored_tables``, ``Trace.stored_files``), with the facts of
:data:`FACTS` (``Trace.stored_facts``).
:func:`schema` gives each table's columns and types as the loader makes them (a test checks
that a load gives exactly these), so a cache can check an entry's tables before it trusts
them, and read only the columns it needs.

Sizes (the replicated 1 GB trace, 3.2M events, 2.3M complete ones): ``events`` is most of it; the
args tables hold only the events of their group that have some; ``recorded_shapes`` is four
dictionary codes per op; :data:`ARGS_FILE` is each event's args deflated (~5% of the JSON).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracetui.trace.fields import DICT, FLOAT, ID, INT, PH, RAW, SCAN_TABLES, STR

if TYPE_CHECKING:
    import polars as pl

MODEL_TABLES = (
    "events",
    "instants",
    "flows",
    "meta_events",
    "counters",
    "tracks",
    "anomalies",
    "gpu_args",
    "call_args",
    "op_args",
    "python_args",
    "recorded_shapes",
)
ARGS_TABLES = ("args_blocks", "args_lengths")
ARGS_FILE = "args_data"  # the deflated blocks end to end (``args_blocks`` says where each is)
FACTS = ("metadata", "format", "gzipped", "truncated", "repairs", "other_phases", "reader")
# scan tables kept as they are, under the model's name
_ARG_TABLES = {
    "gpu_args": "gpu_args",
    "call_args": "call_args",
    "op_args": "op_args",
    "python_args": "python_args",
    "recorded_shapes": "shapes",
}


def _kind_type(kind: str, store: str) -> pl.DataType:
    import polars as pl

    if store == DICT:
        return pl.Categorical()
    return (
        {INT: pl.Int64(), FLOAT: pl.Float64(), STR: pl.String(), ID: pl.String(), PH: pl.String()}.get(
            kind, pl.String()
        )
        if kind != RAW
        else pl.String()
    )


def _scan_schema(name: str) -> dict[str, pl.DataType]:
    import polars as pl

    table = next(t for t in SCAN_TABLES if t.name == name)
    return {"id": pl.UInt32(), **{f.name: _kind_type(f.kind, f.store) for f in table.fields}}


def schema(name: str) -> dict[str, pl.DataType]:
    """The columns of table ``name`` (of :data:`MODEL_TABLES` or :data:`ARGS_TABLES`) and their types."""
    import polars as pl

    if name in _ARG_TABLES:
        return _scan_schema(_ARG_TABLES[name])
    u32, i32, i64, f64, text = pl.UInt32(), pl.Int32(), pl.Int64(), pl.Float64(), pl.String()
    cat = pl.Categorical()
    tables: dict[str, dict[str, pl.DataType]] = {
        "events": {  # as many as the complete events: their text is dictionary-encoded
            "cat": cat,
            "name": cat,
            "pid": cat,
            "tid": cat,
            "ts": f64,
            "dur": f64,
            "id": u32,
            "external_id": i64,
            "correlation": i64,
            "start_ns": i64,
            "end_ns": i64,
            "track": i32,
            "pos": i32,
            "end_pos": i32,
            "parent": u32,
            "depth": i32,
            "op_id": u32,
            "annotation_id": u32,
            "step_id": u32,
            "launch_id": u32,
            "launch_op_id": u32,
            "fwd_id": u32,
            "cpu_self_us": f64,
            "gpu_events": u32,
            "kernels": u32,
            "memcpys": u32,
            "memsets": u32,
            "gpu_us": f64,
        },
        "instants": {
            "cat": text,
            "name": text,
            "pid": text,
            "tid": text,
            "ts": f64,
            "id": u32,
            "total_reserved": i64,
            "total_allocated": i64,
            "alloc_bytes": i64,
            "device_id": i64,
            "device_type": i64,
            "addr": i64,
            "scope": text,
        },
        "flows": {  # ac2g flows are as many as kernels: their text is dictionary-encoded
            "ph": cat,
            "cat": cat,
            "name": cat,
            "pid": cat,
            "tid": cat,
            "ts": f64,
            "id": u32,
            "flow_id": text,
            "bp": cat,
        },
        "meta_events": {
            "id": u32,
            "name": text,
            "pid": text,
            "tid": text,
            "meta_name": text,
            "labels": text,
            "sort_index": i64,
        },
        "counters": {  # "C" events: their values are their raw args ({series: value})
            "cat": text,
            "name": text,
            "pid": text,
            "tid": text,
            "ts": f64,
            "id": u32,
        },
        "tracks": {
            "track": i32,
            "pid": text,
            "tid": text,
            "events": u32,
            "thread_name": text,
            "kind": text,
        },
        "anomalies": {"kind": text, "event_id": u32, "other_id": u32},
        "args_blocks": {"first": u32, "size": u32, "stored": u32},
        "args_lengths": {"length": u32},
    }
    return tables[name]
