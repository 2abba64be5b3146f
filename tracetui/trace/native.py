"""The decoder's native fast path: :mod:`tracetui.trace._scan` (C) reads strict JSON, block by
block, straight into Arrow tables (one per group of events, :data:`fields.SCAN_TABLES`), without
a Python object per event.

It accepts only well-formed events whose fields have their usual JSON types and says why for
anything else; :mod:`tracetui.trace.stream` then reads that part with msgspec, which knows every
repair and coercion. Without a C compiler at install time the module is absent and every trace
takes the msgspec path. Importing this module does not import polars (see :mod:`prefetch`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tracetui.trace.fields import RAW_CODE, SCAN_TABLES, scan_spec

if TYPE_CHECKING:
    import polars as pl

try:
    import tracetui.trace._scan as _scan

    _MISSING = ""
except ImportError as exc:  # built without a compiler: the msgspec path does everything
    _scan = None  # type: ignore[assignment]
    _MISSING = str(exc)

AVAILABLE = _scan is not None
SPEC = scan_spec()
# What Scanner.flush returns: per table of SCAN_TABLES, (ids, lanes or None, columns, maybe_unsafe).
RawTables = list[tuple[Any, Any, list[Any], tuple[bool, ...]]]
# Scanner.feed's statuses
MORE, DONE, EVENT, DOCUMENT, TRUNCATED = range(5)
# Scanner.probe's answers
PROBE_OK, PROBE_SHORT, PROBE_FAIL = range(3)


def status() -> str:
    """Which decoder reads traces in this install, in one line (``tracetui --version``)."""
    if AVAILABLE:
        return "native (the C scanner is built)"
    return f"msgspec only: the native scanner is not built, loads take about twice as long ({_MISSING})"


def scanner() -> Any:
    """A new C scanner for one trace (see ``_scan.c``); None without the extension."""
    return None if _scan is None else _scan.Scanner(SPEC)


def tables_of(raw: RawTables) -> dict[str, pl.DataFrame]:
    """The scanned tables as polars frames (zero copy), text cleaned where it may need it."""
    import polars as pl

    out = {}
    for spec, (ids, lanes, columns, unsafe) in zip(SCAN_TABLES, raw, strict=True):
        names = [f.name for f in spec.fields]
        first = [pl.Series(ids).alias("id")] + ([] if lanes is None else [pl.Series(lanes).alias("lane")])
        out[spec.name] = pl.DataFrame([*first, *_series(names, columns, unsafe)])
    return out


def lanes_of(lanes: Sequence[tuple[bytes | None, bytes | None]]) -> pl.DataFrame:
    """The (pid, tid) of each lane, as the ID columns hold them (cleaned text)."""
    import polars as pl

    from tracetui.trace.text import clean_series

    def text(values: list[bytes | None]) -> pl.Series:
        return pl.Series(
            [None if v is None else v.decode("utf-8", "replace") for v in values], dtype=pl.String
        )

    return pl.DataFrame(
        {
            "lane": pl.Series(range(len(lanes)), dtype=pl.UInt32),
            "pid": clean_series(text([pid for pid, _ in lanes])),
            "tid": clean_series(text([tid for _, tid in lanes])),
        }
    )


def _series(names: Sequence[str], columns: Sequence[Any], maybe_unsafe: Sequence[bool]) -> list[pl.Series]:
    """Named polars series of scanned columns (zero copy), cleaned where text may need it."""
    import polars as pl

    from tracetui.trace.text import clean_series

    out = []
    for name, column, unsafe in zip(names, columns, maybe_unsafe, strict=True):
        values = pl.Series(column).alias(name)
        if unsafe:
            if values.dtype == pl.Categorical:
                values = clean_series(values.cast(pl.String)).cast(pl.Categorical)
            else:
                values = clean_series(values)
        out.append(values)
    return out


def pick(
    data: bytes, starts: Sequence[int | None], ends: Sequence[int | None], keys: Mapping[str, str]
) -> Any:
    """Per ``keys`` (column -> JSON key), the raw JSON text of that key of each object at the byte
    spans [start, end) of ``data`` (None: no object): a frame of the columns, or None if the
    scanner cannot (without the extension, or a span it refuses)."""
    import polars as pl

    if _scan is None:
        return None
    fields = [(key.encode(), RAW_CODE, True) for key in keys.values()]
    result = _scan.pick(data, starts, ends, fields)
    if isinstance(result, str):
        return None
    return pl.DataFrame(_series(list(keys), *result))


def nest(track: pl.Series, end: pl.Series) -> tuple[pl.Series, pl.Series, pl.Series, pl.Series] | None:
    """The C stack pass of :func:`tracetui.trace.nesting.nest` over rows sorted by (track,
    start, end descending, …): per row the positions of its parent, its subtree's end and its
    previous sibling (-1: none), and its depth. None without the extension or with nulls."""
    import polars as pl

    if _scan is None:
        return None
    result = _scan.nest(track.cast(pl.Int64), end.cast(pl.Int64))
    if result is None:
        return None
    parent, depth, stop, previous = (pl.Series(column) for column in result)
    return parent, depth, stop, previous


def marked_ancestor(parent: pl.Series, marked: pl.Series) -> pl.Series | None:
    """For rows in preorder, the position of each row's nearest proper ancestor with ``marked``
    (-1: none), in one C pass; None without the extension, with nulls, or out of order."""
    import polars as pl

    if _scan is None:
        return None
    result = _scan.marked_ancestor(parent.cast(pl.Int64), marked.cast(pl.Int64))
    return None if result is None else pl.Series(result)


def sum_at(index: pl.Series, values: pl.Series, size: int) -> pl.Series:
    """Per position 0..size-1, the sum of ``values`` whose ``index`` is it (a scatter-add): one
    C pass, or a polars group-by without the extension or with nulls."""
    import polars as pl

    if _scan is not None:
        result = _scan.sum_at(index.cast(pl.Int64), values.cast(pl.Int64), size)
        if result is not None:
            return pl.Series(result)
    sums = (
        pl.DataFrame({"at": index.cast(pl.Int64), "value": values.cast(pl.Int64)})
        .filter(pl.col("at").is_between(0, size - 1))
        .group_by("at")
        .agg(pl.col("value").sum())
    )
    return pl.zeros(size, pl.Int64, eager=True).scatter(sums["at"], sums["value"])
