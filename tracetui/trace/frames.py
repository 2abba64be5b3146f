"""Turn decoded events into polars tables: events (``X``), instants, flows, metadata.

Two sources feed :func:`build_tables`:

* :class:`Columns`, from the native decoder (:mod:`tracetui.trace.native`): every field as a
  full-length typed series, straight from Arrow buffers; groups are picked with polars.
* :class:`Chunk`, from the msgspec path (broken or unusual files): :func:`transpose` (pure
  Python) touches every event once, each field transposed with a C-level ``map(attrgetter)``
  and args only for the events whose category carries them, as plain lists.

Both give the same raw frames (base columns, and per group its events' ids and columns), which
:func:`build_tables` assembles into typed tables the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any

import polars as pl

from tracetui.trace.align import attach
from tracetui.trace.categories import CATEGORY_NAMES, LEGACY_CATEGORIES
from tracetui.trace.fields import (
    BASE_FIELDS,
    FLOAT,
    GROUP_ARGS,
    GROUP_CODE,
    GROUP_FIELDS,
    GROUPS,
    ID,
    INT,
    MODELLED_PHASES,
    RAW,
    STR,
    X_GROUPS,
    group_of,
)
from tracetui.trace.schema import Event
from tracetui.trace.text import clean_series, raw_json_series

DTYPES = {INT: pl.Int64, FLOAT: pl.Float64, STR: pl.String}


@dataclass
class Chunk:
    """Columns of a run of consecutive events, as plain Python lists."""

    size: int
    base: dict[str, list[Any]]
    groups: dict[str, tuple[list[int], dict[str, list[Any]]]]  # group -> (local indices, columns)
    legacy_categories: bool = False


def transpose(events: Sequence[Event]) -> Chunk:
    """Plain-list columns of ``events`` (local indices 0..n-1). No polars: runs in a worker too."""
    base = {name: list(map(attrgetter(name), events)) for name in BASE_FIELDS}
    present = set(base["cat"])
    legacy = not LEGACY_CATEGORIES.keys().isdisjoint(present)
    if not CATEGORY_NAMES.keys().isdisjoint(present):
        base["cat"] = [CATEGORY_NAMES.get(cat, cat) for cat in base["cat"]]
    args = list(map(attrgetter("args"), events))
    members = _group_members(base["ph"], base["cat"])
    groups: dict[str, tuple[list[int], dict[str, list[Any]]]] = {}
    for group, indices in members.items():
        items = _pick(args, indices)
        columns = {name: list(map(attrgetter(name), items)) for name in GROUP_ARGS.get(group, {})}
        if group in GROUP_FIELDS:
            own = _pick(events, indices)
            columns |= {name: list(map(attrgetter(name), own)) for name in GROUP_FIELDS[group]}
        if group in ("gpu", "x"):  # raw JSON fields become bytes (picklable, cheap to convert)
            for name, kind in GROUP_ARGS[group].items():
                if kind == RAW:
                    columns[name] = list(map(bytes, columns[name]))
        groups[group] = (indices, columns)
    return Chunk(len(events), base, groups, legacy)


def _group_members(phases: list[str], cats: list[Any]) -> dict[str, list[int]]:
    """Local indices of the events in each group, ascending ("x" holds every X event).

    C-level throughout: each distinct (phase, category) pair gets its group's code, a stable
    sort of the indices by code makes every group a contiguous run.
    """
    codes_of = {pair: GROUP_CODE[group_of(*pair)] for pair in set(zip(phases, cats, strict=True))}
    codes = list(map(codes_of.__getitem__, zip(phases, cats, strict=True)))
    order = sorted(range(len(codes)), key=codes.__getitem__)
    counts = Counter(codes)
    members: dict[str, list[int]] = {}
    start = 0
    for code, group in enumerate(GROUPS):
        members[group] = order[start : start + counts.get(code, 0)]
        start += counts.get(code, 0)
    members["x"] = sorted(chain(members.pop("x_other"), *(members[g] for g in X_GROUPS)))
    return members


def _pick(items: Sequence[Any], indices: list[int]) -> Sequence[Any]:
    if not indices:
        return []
    if len(indices) == 1:
        return [items[indices[0]]]
    picked: tuple[Any, ...] = itemgetter(*indices)(items)
    return picked


@dataclass
class Tables:
    """The raw tables, before nesting and linking."""

    events: pl.DataFrame  # complete events ("X"), every category
    instants: pl.DataFrame  # "i"/"I" events, e.g. [memory]
    flows: pl.DataFrame  # "s"/"t"/"f": ac2g and fwdbwd
    meta: pl.DataFrame  # "M": process/thread names and sort indices
    other_phases: dict[str, int] = field(default_factory=dict)  # phases not modelled -> count
    legacy_categories: bool = False


@dataclass
class Columns:
    """Every field of every event as a typed series (``id`` = row = index in ``traceEvents``).

    Keys: the names of :data:`BASE_FIELDS`, of the group args and of the group fields (the
    event's own ``id`` as ``id_field``). String series are already cleaned.
    """

    series: dict[str, pl.Series]


def build_tables(source: Sequence[Chunk] | Columns) -> Tables:
    """Typed frames from the native decoder's columns or from consecutive chunks."""
    if isinstance(source, Columns):
        base, group, legacy = _native_frames(source)
    else:
        base, group = _chunk_frames(source)
        legacy = any(c.legacy_categories for c in source)
    events = _gathered(base, group["x"]).drop("ph")
    for name in X_GROUPS:
        events = attach(events, group[name])
    instants = _gathered(base, group["instant"]).drop("ph", "dur").rename({"s": "scope"})
    flows = _gathered(base, group["flow"]).drop("dur").rename({"id_field": "flow_id"})
    meta = _gathered(base, group["meta"]).select("id", "name", "pid", "tid", *GROUP_ARGS["meta"])
    other = base.filter(~pl.col("ph").is_in(MODELLED_PHASES))["ph"].value_counts()
    return Tables(
        events=events,
        instants=instants,
        flows=flows,
        meta=meta,
        other_phases=dict(zip(other["ph"].to_list(), other["count"].to_list(), strict=True)),
        legacy_categories=legacy,
    )


def _native_frames(source: Columns) -> tuple[pl.DataFrame, dict[str, pl.DataFrame], bool]:
    """Base frame and group frames of the native columns: groups are picked by the same
    :func:`~tracetui.trace.fields.group_of` as the chunk path, applied to the distinct
    (phase, category) pairs."""
    series = dict(source.series)
    cats = series["cat"]
    legacy = bool(cats.is_in(list(LEGACY_CATEGORIES)).any())
    if cats.is_in(list(CATEGORY_NAMES)).any():
        series["cat"] = cats.replace(CATEGORY_NAMES)
    full = pl.DataFrame(series).with_columns(id=pl.int_range(pl.len(), dtype=pl.UInt32))
    pairs = full.select("ph", "cat").unique()
    pairs = pairs.with_columns(
        group=pl.Series([group_of(ph, cat) for ph, cat in pairs.iter_rows()], dtype=pl.String)
    )
    full = full.join(pairs, on=["ph", "cat"], how="left", nulls_equal=True, maintain_order="left")
    base = full.select(*BASE_FIELDS, "id").with_columns(
        pl.col("cat").fill_null(""), pl.col("name").fill_null("")
    )
    members = {group: [group] for group in GROUPS} | {"x": ["x_other", *X_GROUPS]}
    group = {}
    for name in (*GROUP_ARGS, *GROUP_FIELDS):
        kinds = GROUP_ARGS.get(name, {}) | GROUP_FIELDS.get(name, {})
        columns = ["id_field" if column == "id" else column for column in kinds]
        rows = pl.col("group").is_in(members[name])
        group[name] = full.select("id", *columns, "group").filter(rows).drop("group")
    return base, group, legacy


def _chunk_frames(chunks: Sequence[Chunk]) -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    offsets = [0]
    for chunk in chunks[:-1]:
        offsets.append(offsets[-1] + chunk.size)
    base = pl.DataFrame(
        {
            name: _series(name, _concat([c.base[name] for c in chunks]), kind)
            for name, kind in BASE_FIELDS.items()
        }
    ).with_columns(pl.col("cat").fill_null(""), pl.col("name").fill_null(""))
    base = base.with_columns(id=pl.int_range(pl.len(), dtype=pl.UInt32))
    return base, {name: _group_frame(chunks, offsets, name) for name in (*GROUP_ARGS, *GROUP_FIELDS)}


def _concat(lists: list[list[Any]]) -> list[Any]:
    if len(lists) == 1:
        return lists[0]
    out: list[Any] = []
    for part in lists:
        out.extend(part)
    return out


def _group_frame(chunks: Sequence[Chunk], offsets: list[int], name: str) -> pl.DataFrame:
    """``id`` plus the group's columns, across chunks."""
    parts = [c.groups[name][0] for c in chunks]
    ids = _concat(
        [[i + off for i in part] if off else part for part, off in zip(parts, offsets, strict=True)]
    )
    kinds = GROUP_ARGS.get(name, {}) | GROUP_FIELDS.get(name, {})
    columns = {"id": pl.Series("id", ids, dtype=pl.UInt32)}
    for column, kind in kinds.items():
        key = "id_field" if column == "id" else column
        columns[key] = _series(key, _concat([c.groups[name][1][column] for c in chunks]), kind)
    return pl.DataFrame(columns)


def _gathered(base: pl.DataFrame, group: pl.DataFrame) -> pl.DataFrame:
    """The base columns of the group's rows, with the group's own columns."""
    return base[group["id"]].with_columns(group.drop("id"))


def _series(name: str, values: list[Any], kind: Any) -> pl.Series:
    """A typed column; the strict constructors are fast, odd values take the slow path."""
    if kind == RAW:  # raw JSON text as written (b"" = absent)
        return raw_json_series(name, values)
    if kind == ID:
        return _id_series(name, values)
    try:
        series = pl.Series(name, values, dtype=DTYPES[kind])
        return clean_series(series) if kind == STR else series
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        pass
    if kind == STR:
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
