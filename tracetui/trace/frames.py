"""Turn decoded events into polars tables: events (``X``), instants, flows, metadata.

This is the one place that touches every event in Python: each field is transposed
once with a C-level ``map(attrgetter)``; args are transposed only for the events whose
category carries them. Everything after this is polars expressions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any

import polars as pl

from tracetui.trace.categories import GPU_LANE, LAUNCH_CALLS, LEGACY_CATEGORIES
from tracetui.trace.schema import Args, Event
from tracetui.trace.text import clean_series

INT, FLOAT, STR, RAW, ID = pl.Int64, pl.Float64, pl.String, "raw", "id"

# Which promoted args each kind of event carries, and their column types.
GPU_ARGS = {
    "correlation": INT,
    "stream": INT,
    "device": INT,
    "grid": RAW,
    "block": RAW,
    "registers": INT,
    "shared_memory": INT,
    "blocks_per_sm": FLOAT,
    "warps_per_sm": FLOAT,
    "occupancy": FLOAT,
    "bytes": INT,
    "bandwidth": FLOAT,
}
CALL_ARGS = {"correlation": INT, "cbid": INT}
OP_ARGS = {
    "seq": INT,
    "fwd_tid": INT,
    "input_dims": RAW,
    "input_type": RAW,
    "input_strides": RAW,
    "concrete_inputs": RAW,
}
PYTHON_ARGS = {"py_id": INT, "py_parent_id": INT}
MEMORY_ARGS = {
    "total_reserved": INT,
    "total_allocated": INT,
    "alloc_bytes": INT,
    "device_id": INT,
    "device_type": INT,
    "addr": INT,
}
META_ARGS = {"meta_name": STR, "labels": STR, "sort_index": INT}

MODELLED_PHASES = ("X", "i", "I", "s", "t", "f", "M")


@dataclass
class Tables:
    """The raw tables, before nesting and linking."""

    events: pl.DataFrame  # complete events ("X"), every category
    instants: pl.DataFrame  # "i"/"I" events, e.g. [memory]
    flows: pl.DataFrame  # "s"/"t"/"f": ac2g and fwdbwd
    meta: pl.DataFrame  # "M": process/thread names and sort indices
    other_phases: dict[str, int]  # phases not modelled (B/E/C/…) -> count


def build_tables(events: list[Event]) -> Tables:
    """Build the tables from events in file order (``id`` = index in ``traceEvents``)."""
    base = _base_frame(events)
    args: list[Args] = list(map(attrgetter("args"), events))
    x = base.filter(pl.col("ph") == "X")
    by_cat = {
        "gpu": _ids(x, pl.col("cat").is_in(GPU_LANE)),
        "call": _ids(x, pl.col("cat").is_in(LAUNCH_CALLS)),
        "op": _ids(x, pl.col("cat") == "cpu_op"),
        "python": _ids(x, pl.col("cat") == "python_function"),
    }
    promoted = pl.concat(
        [
            _arg_frame(args, by_cat["gpu"], GPU_ARGS),
            _arg_frame(args, by_cat["call"], CALL_ARGS),
            _arg_frame(args, by_cat["op"], OP_ARGS),
            _arg_frame(args, by_cat["python"], PYTHON_ARGS),
        ],
        how="diagonal_relaxed",
    )
    event_frame = (
        x.drop("ph")
        .with_columns(_arg_frame(args, x["id"].to_list(), {"external_id": INT}).drop("id"))
        .join(promoted, on="id", how="left")
        .sort("id")
    )
    instants = base.filter(pl.col("ph").is_in(("i", "I"))).drop("ph", "dur")
    instant_ids = instants["id"].to_list()
    instants = instants.join(_field_frame(events, instant_ids, {"s": STR}), on="id").rename({"s": "scope"})
    instants = instants.join(_arg_frame(args, instant_ids, MEMORY_ARGS), on="id", how="left")
    flows = base.filter(pl.col("ph").is_in(("s", "t", "f"))).drop("dur")
    flow_fields = _field_frame(events, flows["id"].to_list(), {"id": ID, "bp": STR})
    flows = flows.join(flow_fields.rename({"id_right": "flow_id"}), on="id")
    meta = base.filter(pl.col("ph") == "M")
    meta = meta.select("id", "name", "pid", "tid").join(
        _arg_frame(args, meta["id"].to_list(), META_ARGS), on="id", how="left"
    )
    other = base.filter(~pl.col("ph").is_in(MODELLED_PHASES))["ph"].value_counts()
    return Tables(
        events=event_frame,
        instants=instants,
        flows=flows,
        meta=meta,
        other_phases=dict(zip(other["ph"].to_list(), other["count"].to_list(), strict=True)),
    )


def _base_frame(events: Sequence[Event]) -> pl.DataFrame:
    def col(field: str) -> list[Any]:
        return list(map(attrgetter(field), events))

    frame = pl.DataFrame(
        {
            "id": pl.Series(range(len(events)), dtype=pl.UInt32),
            "ph": pl.Series(col("ph"), dtype=STR),
            "cat": _series("cat", col("cat"), STR),
            "name": _series("name", col("name"), STR),
            "pid": _series("pid", col("pid"), ID),
            "tid": _series("tid", col("tid"), ID),
            "ts": _series("ts", col("ts"), FLOAT),
            "dur": _series("dur", col("dur"), FLOAT),
        }
    )
    return frame.with_columns(
        pl.col("cat").replace(LEGACY_CATEGORIES).fill_null(""),
        pl.col("name").fill_null(""),
    )


def _ids(frame: pl.DataFrame, predicate: pl.Expr) -> list[int]:
    return frame.filter(predicate)["id"].to_list()


def _arg_frame(args: list[Args], ids: list[int], fields: dict[str, Any]) -> pl.DataFrame:
    """One row per id with the given promoted args as typed columns."""
    return _field_frame(args, ids, fields)


def _field_frame(items: Sequence[Any], ids: list[int], fields: dict[str, Any]) -> pl.DataFrame:
    """One row per id (an index into ``items``) with the given attributes as typed columns."""
    subset: Sequence[Any]
    if not ids:
        subset = []
    elif len(ids) == 1:
        subset = [items[ids[0]]]
    else:
        subset = itemgetter(*ids)(items)
    columns: dict[str, pl.Series] = {"id": pl.Series("id", ids, dtype=pl.UInt32)}
    for field, kind in fields.items():
        key = f"{field}_right" if field == "id" else field
        columns[key] = _series(key, list(map(attrgetter(field), subset)), kind)
    return pl.DataFrame(columns)


def _id_series(name: str, values: list[Any]) -> pl.Series:
    """pid/tid/flow ids as strings: mostly ints, a few strings ("Spans", "Traces", "")."""
    ints = pl.Series(name, [v if type(v) is int else None for v in values], dtype=INT)
    out = ints.cast(STR)
    odd = ints.is_null().arg_true()
    if len(odd):
        others = [values[i] for i in odd.to_list()]
        out = out.scatter(odd, pl.Series([None if v is None else str(v) for v in others], dtype=STR))
    return clean_series(out)


def _series(name: str, values: list[Any], kind: Any) -> pl.Series:
    """A typed column; the strict constructors are fast, odd values take the slow path."""
    if kind == RAW:  # raw JSON text as written ("" = absent); valid JSON holds no raw controls
        series = pl.Series(name, list(map(bytes, values)), dtype=pl.Binary).cast(STR)
        return series.replace("", None)
    if kind == ID:
        return _id_series(name, values)
    try:
        series = pl.Series(name, values, dtype=kind)
        return clean_series(series) if kind == STR else series
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        pass
    if kind == INT:  # floats or strings where ints are expected: their value, or null
        return pl.Series(name, values, dtype=FLOAT, strict=False).cast(INT, strict=False)
    return pl.Series(name, values, dtype=kind, strict=False)
