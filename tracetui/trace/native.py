"""The decoder's native fast path: :mod:`tracetui.trace._scan` (C) reads strict JSON straight
into Arrow columns, one per promoted field, without a Python object per event.

It accepts only well-formed traces whose fields have their usual JSON types and says why for
anything else; :mod:`tracetui.trace.decode` then takes the msgspec path, which knows every
repair and coercion. Without a C compiler at install time the module is absent and every trace
takes that path. Importing this module does not import polars (see :mod:`prefetch`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from tracetui.trace.fields import RAW_CODE, column_kinds, scan_fields
from tracetui.trace.schema import RAW_EMPTY

if TYPE_CHECKING:
    import polars as pl

    from tracetui.trace.frames import Columns

try:
    import tracetui.trace._scan as _scan

    _MISSING = ""
except ImportError as exc:  # built without a compiler: the msgspec path does everything
    _scan = None  # type: ignore[assignment]
    _MISSING = str(exc)

AVAILABLE = _scan is not None
_NAMES = list(column_kinds())
_FIELDS = scan_fields()
RawScan = tuple[Any, ...] | str  # what _scan.scan returns: columns and spans, or why not


@dataclass
class Scanned:
    """A trace the native scanner read: every event's columns and the top-level spans."""

    form: str  # "object" (Kineto) or "array" (legacy exporter)
    top: list[tuple[str, int, int]]  # (key, start, end) byte spans in file order
    columns: Columns
    args_start: pl.Series  # per event, byte offsets of its args object in the data (null: none)
    args_end: pl.Series


def status() -> str:
    """Which decoder reads traces in this install, in one line (``tracetui --version``)."""
    if AVAILABLE:
        return "native (the C scanner is built)"
    return f"msgspec only: the native scanner is not built, loads take about twice as long ({_MISSING})"


def scan_raw(data: bytes) -> RawScan:
    """Run the C scanner (the GIL is released while it parses; no polars needed)."""
    if _scan is None:
        return "the native decoder is not built"
    return _scan.scan(data, _FIELDS)


def scan(data: bytes, raw: RawScan | None = None) -> Scanned | str:
    """Columns of every event of ``data`` (scanned now, or ``raw`` from an earlier
    :func:`scan_raw` of the same bytes), or why the fast path does not apply."""
    import polars as pl

    from tracetui.trace.frames import Columns

    result = scan_raw(data) if raw is None else raw
    if isinstance(result, str):
        return result
    form, top, _events_span, _rows, columns, maybe_unsafe = result
    series = _series(_NAMES, columns, maybe_unsafe)
    start, end = (pl.Series(column) for column in columns[len(_NAMES) :])
    return Scanned(form, top, Columns(series), start, end)


def _series(
    names: Sequence[str], columns: Sequence[Any], maybe_unsafe: Sequence[bool]
) -> dict[str, pl.Series]:
    """Named polars series of scanned columns (zero copy), cleaned where text may need it."""
    import polars as pl

    from tracetui.trace.text import clean_series

    series = {}
    for name, column, unsafe in zip(names, columns, maybe_unsafe, strict=False):
        values = pl.Series(column).alias(name)
        series[name] = clean_series(values) if unsafe else values
    return series


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


class ArgsSpans:
    """Each event's args as raw JSON, sliced from the data by the scanned byte offsets instead
    of decoding every event again (a :class:`~tracetui.trace.args.RawArgs` provider)."""

    def __init__(self, data: bytes, start: pl.Series, end: pl.Series) -> None:
        self._data = data
        self._view = memoryview(data)
        self._series = (start, end)
        self._lists: tuple[list[int | None], list[int | None]] | None = None
        self._lock = threading.Lock()

    def _spans(self) -> tuple[list[int | None], list[int | None]]:
        with self._lock:
            if self._lists is None:
                self._lists = (self._series[0].to_list(), self._series[1].to_list())
            return self._lists

    def raw(self, ids: Sequence[int]) -> list[msgspec.Raw]:
        starts, ends = self._spans()
        count = len(starts)
        out = []
        for i in ids:
            start, end = (starts[i], ends[i]) if 0 <= i < count else (None, None)
            out.append(RAW_EMPTY if start is None or end is None else msgspec.Raw(self._view[start:end]))
        return out

    def pick(self, ids: Sequence[int], keys: Mapping[str, str]) -> pl.DataFrame | None:
        """``id`` and, per ``keys`` (column -> args key), the raw JSON text of that arg of each
        event in ``ids`` (null: absent), in one C pass; None if the scanner cannot (the caller
        decodes)."""
        import polars as pl

        wanted = pl.Series("id", ids, dtype=pl.UInt32)
        rows = len(self._series[0])
        if _scan is None or not rows:
            return None
        absent = pl.repeat(None, len(wanted), dtype=pl.Int64, eager=True)
        starts, ends = (
            s.gather(wanted.clip(0, rows - 1)).zip_with(wanted < rows, absent).to_list() for s in self._series
        )
        fields = [(key.encode(), RAW_CODE, True) for key in keys.values()]
        result = _scan.pick(self._data, starts, ends, fields)
        if isinstance(result, str):
            return None
        return pl.DataFrame([wanted, *_series(list(keys), *result).values()])
