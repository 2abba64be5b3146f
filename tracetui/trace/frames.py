"""Turn decoded events into polars tables: events (``X``), instants, flows, metadata.

Two phases:

* :func:`transpose` (pure Python, no polars) is the one place that touches every event: each
  field is transposed once with a C-level ``map(attrgetter)``, and args only for the events
  whose category carries them. It returns plain lists (a :class:`Chunk`).
* :func:`build_tables` (polars) turns one or more chunks into typed frames.
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
from tracetui.trace.categories import GPU_LANE, LAUNCH_CALLS, LEGACY_CATEGORIES
from tracetui.trace.schema import Event
from tracetui.trace.text import clean_series, raw_json_series

INT, FLOAT, STR, RAW, ID = pl.Int64, pl.Float64, pl.String, "raw", "id"

BASE_FIELDS = {"ph": STR, "cat": STR, "name": STR, "pid": ID, "tid": ID, "ts": FLOAT, "dur": FLOAT}
# Promoted args per group of events, with their column types.
GROUP_ARGS: dict[str, dict[str, Any]] = {
    "x": {"external_id": INT},
    "gpu": {
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
    },
    "call": {"correlation": INT, "cbid": INT},
    "op": {"seq": INT, "fwd_tid": INT},
    "python": {"py_id": INT, "py_parent_id": INT},
    "instant": {
        "total_reserved": INT,
        "total_allocated": INT,
        "alloc_bytes": INT,
        "device_id": INT,
        "device_type": INT,
        "addr": INT,
    },
    "meta": {"meta_name": STR, "labels": STR, "sort_index": INT},
}
# Fields of the event itself (not its args) kept for some groups.
GROUP_FIELDS: dict[str, dict[str, Any]] = {"instant": {"s": STR}, "flow": {"id": ID, "bp": STR}}
X_GROUPS = ("gpu", "call", "op", "python")
GPU_SET, CALL_SET = frozenset(GPU_LANE), frozenset(LAUNCH_CALLS)
MODELLED_PHASES = ("X", "i", "I", "s", "t", "f", "M")


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
    legacy = not LEGACY_CATEGORIES.keys().isdisjoint(set(base["cat"]))
    if legacy:
        base["cat"] = [LEGACY_CATEGORIES.get(cat, cat) for cat in base["cat"]]
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
    codes_of = {pair: _GROUP_CODE[_group_of(*pair)] for pair in set(zip(phases, cats, strict=True))}
    codes = list(map(codes_of.__getitem__, zip(phases, cats, strict=True)))
    order = sorted(range(len(codes)), key=codes.__getitem__)
    counts = Counter(codes)
    members: dict[str, list[int]] = {}
    start = 0
    for code, group in enumerate(_GROUPS):
        members[group] = order[start : start + counts.get(code, 0)]
        start += counts.get(code, 0)
    members["x"] = sorted(chain(members.pop("x_other"), *(members[g] for g in X_GROUPS)))
    return members


_GROUPS = ("x_other", *X_GROUPS, "flow", "instant", "meta", "other")
_GROUP_CODE = {group: code for code, group in enumerate(_GROUPS)}


def _group_of(phase: str, cat: Any) -> str:
    if phase == "X":
        if cat in GPU_SET:
            return "gpu"
        if cat in CALL_SET:
            return "call"
        return {"cpu_op": "op", "python_function": "python"}.get(cat, "x_other")
    if phase in ("s", "t", "f"):
        return "flow"
    if phase in ("i", "I"):
        return "instant"
    return "meta" if phase == "M" else "other"


def _pick(items: Sequence[Any], indices: list[int]) -> Sequence[Any]:
    if not indices:
        return []
    if len(indices) == 1:
        return [items[indices[0]]]
    return itemgetter(*indices)(items)


@dataclass
class Tables:
    """The raw tables, before nesting and linking."""

    events: pl.DataFrame  # complete events ("X"), every category
    instants: pl.DataFrame  # "i"/"I" events, e.g. [memory]
    flows: pl.DataFrame  # "s"/"t"/"f": ac2g and fwdbwd
    meta: pl.DataFrame  # "M": process/thread names and sort indices
    other_phases: dict[str, int] = field(default_factory=dict)  # phases not modelled -> count
    legacy_categories: bool = False


def build_tables(chunks: Sequence[Chunk]) -> Tables:
    """Typed frames from consecutive chunks (``id`` = index in ``traceEvents``)."""
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
    group = {name: _group_frame(chunks, offsets, name) for name in (*GROUP_ARGS, *GROUP_FIELDS)}
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
        legacy_categories=any(c.legacy_categories for c in chunks),
    )


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
        series = pl.Series(name, values, dtype=kind)
        return clean_series(series) if kind == STR else series
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        pass
    if kind == STR:
        return clean_series(pl.Series(name, values, dtype=STR, strict=False))
    if kind == INT:  # floats or strings where ints are expected: their value, or null
        return pl.Series(name, values, dtype=FLOAT, strict=False).cast(INT, strict=False)
    return pl.Series(name, values, dtype=kind, strict=False)


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _id_series(name: str, values: list[Any]) -> pl.Series:
    """pid/tid/flow ids as strings: mostly ints, a few strings ("Spans", "Traces", "") or ints
    too big for 64 bits (kept as their digits)."""
    try:
        ints = pl.Series(name, [v if type(v) is int else None for v in values], dtype=INT)
    except (TypeError, OverflowError):
        fits = [v if type(v) is int and _I64_MIN <= v <= _I64_MAX else None for v in values]
        ints = pl.Series(name, fits, dtype=INT)
    out = ints.cast(STR)
    odd = ints.is_null().arg_true()
    if len(odd):
        others = [values[i] for i in odd.to_list()]
        out = out.scatter(odd, pl.Series([None if v is None else str(v) for v in others], dtype=STR))
    return clean_series(out)
