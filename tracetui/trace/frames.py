"""Turn scanned tables into the model's raw tables: events (``X``), instants, flows, metadata, and
the args of some groups of events (GPU work, runtime calls, ops, python frames, shapes).

Two readers feed the scan tables (:data:`fields.SCAN_TABLES`): the native scanner
(:mod:`tracetui.trace.native`, Arrow buffers) and, for what it cannot read, msgspec: its
decoded events become a :class:`Chunk` (:func:`transpose`, pure Python: each field transposed
with a C-level ``map(attrgetter)``, as plain lists), and :func:`chunk_tables` gives the same
tables, with the same types. :func:`build_tables` assembles either into :class:`Tables`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

import polars as pl

from tracetui.trace.categories import CATEGORY_NAMES, LEGACY_CATEGORIES
from tracetui.trace.fields import (
    DICT,
    FLOAT,
    GROUP_CODE,
    ID,
    INT,
    PH,
    RAW,
    SCAN_TABLES,
    STR,
    group_of,
)
from tracetui.trace.layout import schema
from tracetui.trace.limits import LONG_STRING, Cut, cut_values
from tracetui.trace.schema import Event
from tracetui.trace.text import clean_series, raw_json_series

DTYPES = {INT: pl.Int64, FLOAT: pl.Float64, STR: pl.String, PH: pl.String}
ARG_TABLES = ("gpu_args", "call_args", "op_args", "python_args", "shapes")


@dataclass
class Chunk:
    """The scan tables of a run of consecutive events, as plain Python lists: per table, the
    local indices (0..size-1) of its rows and its columns; per table with lanes, each row's lane
    (:func:`assign_lanes`); the text values cut (:mod:`limits`: local index, kind, length)."""

    size: int
    tables: dict[str, tuple[list[int], dict[str, list[Any]]]]
    lanes: dict[str, list[int]] = field(default_factory=dict)
    cuts: list[Cut] = field(default_factory=list)


LaneOf = Callable[[bytes | None, bytes | None], int]


def assign_lanes(chunks: Sequence[Chunk], lane_of: LaneOf) -> None:
    """Give each row of the tables with lanes the lane of its (pid, tid), from ``lane_of`` (which
    numbers the pairs, as text written the way the native scanner writes them)."""
    for chunk in chunks:
        rows = []  # (event, table, row): in event order, as the native scanner numbers them
        for table in SCAN_TABLES:
            if table.lanes:
                rows += [(i, table.name, k) for k, i in enumerate(chunk.tables[table.name][0])]
                chunk.lanes[table.name] = [0] * len(chunk.tables[table.name][0])
        for _, name, k in sorted(rows):
            columns = chunk.tables[name][1]
            chunk.lanes[name][k] = lane_of(_id_text(columns["pid"][k]), _id_text(columns["tid"][k]))


def _id_text(value: Any) -> bytes | None:
    if value is None:
        return None
    return str(value).encode("utf-8", "surrogatepass")


def lane_numbers() -> tuple[LaneOf, list[tuple[bytes | None, bytes | None]]]:
    """A :data:`LaneOf` numbering pairs in order of appearance, and the list of those pairs."""
    known: dict[tuple[bytes | None, bytes | None], int] = {}
    pairs: list[tuple[bytes | None, bytes | None]] = []

    def lane_of(pid: bytes | None, tid: bytes | None) -> int:
        lane = known.get((pid, tid))
        if lane is None:
            lane = known[(pid, tid)] = len(pairs)
            pairs.append((pid, tid))
        return lane

    return lane_of, pairs


def transpose(events: Sequence[Event]) -> Chunk:
    """Plain-list scan tables of ``events``. No polars work: runs in a worker too."""
    phases = list(map(attrgetter("ph"), events))
    cats = list(map(attrgetter("cat"), events))
    pairs = list(zip(phases, cats, strict=True))
    code_of = {pair: GROUP_CODE[group_of(*pair)] for pair in set(pairs)}
    codes = list(map(code_of.__getitem__, pairs))
    args = list(map(attrgetter("args"), events))
    tables: dict[str, tuple[list[int], dict[str, list[Any]]]] = {}
    cuts: list[Cut] = []
    for table in SCAN_TABLES:
        members = {GROUP_CODE[g] for g in table.groups}
        rows = [i for i, code in enumerate(codes) if code in members]
        columns: dict[str, list[Any]] = {}
        for spec in table.fields:
            owner = _pick(args if spec.in_args else events, rows)
            values = list(map(attrgetter(spec.name if spec.in_args else spec.key), owner))
            if spec.kind == RAW:
                values = list(map(bytes, values))
            if spec.groups:
                allowed = {GROUP_CODE[g] for g in spec.groups}
                values = [v if codes[i] in allowed else None for v, i in zip(values, rows, strict=True)]
            if spec.kind in (STR, PH, ID, RAW):  # over limits.MAX_TEXT: cut, as the native scanner does
                cuts += [(rows[at], LONG_STRING, length) for at, length in cut_values(values)]
            columns[spec.name] = values
        if table.sparse and rows:
            keep = [
                k
                for k in range(len(rows))
                if any(values[k] is not None and values[k] != b"" for values in columns.values())
            ]
            if len(keep) < len(rows):
                rows = [rows[k] for k in keep]
                columns = {name: [values[k] for k in keep] for name, values in columns.items()}
        tables[table.name] = (rows, columns)
    return Chunk(len(events), tables, cuts=sorted(cuts))


def _pick(items: Sequence[Any], indices: list[int]) -> Sequence[Any]:
    if not indices:
        return []
    if len(indices) == 1:
        return [items[indices[0]]]
    picked: tuple[Any, ...] = itemgetter(*indices)(items)
    return picked


def chunk_tables(chunks: Sequence[Chunk], offset: int = 0) -> dict[str, pl.DataFrame]:
    """The scan tables of consecutive chunks whose first event has id ``offset``, typed as the
    native scanner types them."""
    starts = [offset]
    for chunk in chunks[:-1]:
        starts.append(starts[-1] + chunk.size)
    chunks = chunks or [Chunk(0, {t.name: ([], {f.name: [] for f in t.fields}) for t in SCAN_TABLES}, {})]
    starts = starts[: len(chunks)]
    out = {}
    for table in SCAN_TABLES:
        ids: list[int] = []
        for chunk, start in zip(chunks, starts, strict=True):
            rows = chunk.tables[table.name][0]
            ids.extend([i + start for i in rows] if start else rows)
        columns = [pl.Series("id", ids, dtype=pl.UInt32)]
        if table.lanes:
            lanes = _concat([chunk.lanes.get(table.name, []) for chunk in chunks])
            columns.append(pl.Series("lane", lanes, dtype=pl.UInt32))
        for spec in table.fields:
            values = _concat([chunk.tables[table.name][1][spec.name] for chunk in chunks])
            series = _series(spec.name, values, spec.kind)
            columns.append(series.cast(pl.Categorical) if spec.store == DICT else series)
        out[table.name] = pl.DataFrame(columns)
    return out


def _concat(lists: list[list[Any]]) -> list[Any]:
    if len(lists) == 1:
        return lists[0]
    out: list[Any] = []
    for part in lists:
        out.extend(part)
    return out


def _series(name: str, values: list[Any], kind: str) -> pl.Series:
    """A typed column; the strict constructors are fast, odd values take the slow path."""
    if kind == RAW:  # raw JSON text as written (b"" = absent)
        return raw_json_series(name, values)
    if kind == ID:
        return _id_series(name, values)
    try:
        series = pl.Series(name, values, dtype=DTYPES[kind])
        return clean_series(series) if kind in (STR, PH) else series
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        pass
    if kind in (STR, PH):
        return clean_series(pl.Series(name, values, dtype=pl.String, strict=False))
    if kind == INT:  # floats or strings where ints are expected: their value, or null
        return pl.Series(name, values, dtype=pl.Float64, strict=False).cast(pl.Int64, strict=False)
    return pl.Series(name, values, dtype=DTYPES[kind], strict=False)


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _id_series(name: str, values: list[Any]) -> pl.Series:
    """pid/tid/flow ids as strings: mostly ints, a few strings ("Spans", "Traces", "") or ints
    too big for 64 bits (kept as their digits)."""
    try:
        ints = pl.Series(name, [v if type(v) is int else None for v in values], dtype=pl.Int64)
    except (TypeError, OverflowError):
        fits = [v if type(v) is int and _I64_MIN <= v <= _I64_MAX else None for v in values]
        ints = pl.Series(name, fits, dtype=pl.Int64)
    out = ints.cast(pl.String)
    odd = ints.is_null().arg_true()
    if len(odd):
        others = [values[i] for i in odd.to_list()]
        out = out.scatter(odd, pl.Series([None if v is None else str(v) for v in others], dtype=pl.String))
    return clean_series(out)


@dataclass
class Tables:
    """The raw tables, before nesting and linking."""

    events: pl.DataFrame  # complete events ("X"), every category
    instants: pl.DataFrame  # "i"/"I" events, e.g. [memory]
    flows: pl.DataFrame  # "s"/"t"/"f": ac2g and fwdbwd
    meta: pl.DataFrame  # "M": process/thread names and sort indices
    counters: pl.DataFrame  # "C": counter samples (their values are their raw args)
    args: dict[str, pl.DataFrame]  # per group of events, the args of its events that hold some
    other_phases: dict[str, int] = field(default_factory=dict)  # phases not modelled -> count
    legacy_categories: bool = False


def _model_columns(table: str) -> list[str]:
    """The columns of the model's table ``table`` in its order (:func:`layout.schema`)."""
    return list(schema(table))


TEXT_TABLES = ("x", "flows", "instants")  # the scan tables whose categories are renamed


def build_tables(scanned: dict[str, pl.DataFrame]) -> Tables:
    """The raw tables of the scan tables (native or from chunks)."""
    present = {name: bool(scanned[name]["cat"].is_in(list(CATEGORY_NAMES)).any()) for name in TEXT_TABLES}
    old = list(LEGACY_CATEGORIES)
    legacy = any(present[name] and bool(scanned[name]["cat"].is_in(old).any()) for name in TEXT_TABLES)

    def base(name: str) -> pl.DataFrame:
        frame = scanned[name]
        nulls = [c for c in ("cat", "name") if frame[c].null_count()]  # rare: no copy otherwise
        if nulls:
            frame = frame.with_columns(pl.col(nulls).fill_null(""))
        return frame.with_columns(pl.col("cat").replace(CATEGORY_NAMES)) if present[name] else frame

    events = base("x").select(
        "cat", "name", "pid", "tid", "ts", "dur", "id", "external_id", "correlation", "lane"
    )
    instants = base("instants").select(*_model_columns("instants"), "lane")
    flows = base("flows").select(*_model_columns("flows"), "lane")
    meta = (
        scanned["meta"]
        .with_columns(pl.col("name").fill_null(""))
        .select(*_model_columns("meta_events"), "lane")
    )
    counters = (
        scanned["counters"]
        .with_columns(pl.col("cat", "name").fill_null(""))
        .select(*_model_columns("counters"))
    )
    other = scanned["other"]["ph"].value_counts()
    return Tables(
        events=events,
        instants=instants,
        flows=flows,
        meta=meta,
        counters=counters,
        args={name: scanned[name] for name in ARG_TABLES},
        other_phases=dict(zip(other["ph"].to_list(), other["count"].to_list(), strict=True)),
        legacy_categories=legacy,
    )
