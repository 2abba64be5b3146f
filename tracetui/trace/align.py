"""Put columns computed for some events onto the events frame without a join.

A left join copies every column of a wide frame; here the frame keeps its columns and only
the new ones are built: one ``search_sorted`` to find the rows, one ``scatter`` per column.
"""

from __future__ import annotations

import polars as pl


def rows_of(frame: pl.DataFrame, ids: pl.Series, on: str = "id") -> pl.Series:
    """Row positions in ``frame`` (sorted by a unique ``on``) of ``ids``, which must be present.

    Event ids are dense small integers: an inverse table (id -> row) answers with one gather;
    other keys take a binary search.
    """
    keys = frame[on]
    if not len(ids):
        return pl.Series(on, [], dtype=pl.UInt32)
    if keys.dtype.is_unsigned_integer() and ids.dtype.is_unsigned_integer():
        top, wanted = keys.max(), ids.max()
        if isinstance(top, int) and isinstance(wanted, int) and top < 4 * len(keys) + 4096:
            inverse = pl.repeat(None, top + 1, dtype=pl.UInt32, eager=True)
            inverse = inverse.scatter(keys, pl.int_range(len(keys), dtype=pl.UInt32, eager=True))
            rows = inverse.gather(ids.clip(0, top))
            if wanted > top or rows.null_count():
                raise ValueError(f"attach: some {on} values are not in the frame")
            return rows
    rows = keys.search_sorted(ids)
    if not keys.gather(rows.clip(0, max(len(frame) - 1, 0))).equals(ids, check_names=False):
        raise ValueError(f"attach: some {on} values are not in the frame")
    return rows


def attach(frame: pl.DataFrame, part: pl.DataFrame, on: str = "id") -> pl.DataFrame:
    """``frame`` with ``part``'s other columns placed on the rows whose ``on`` matches.

    Other rows get null, or keep their value when ``frame`` already has the column. Each new
    column is made in one gather through the part row of every frame row.
    """
    if part.is_empty():
        missing = {
            c: pl.lit(None, part.schema[c]) for c in part.columns if c != on and c not in frame.columns
        }
        return frame.with_columns(**missing)
    rows = rows_of(frame, part[on], on)
    inverse = pl.repeat(None, len(frame), dtype=pl.UInt32, eager=True).scatter(
        rows, pl.int_range(len(part), dtype=pl.UInt32, eager=True)
    )
    new: dict[str, pl.Series] = {}
    for name in part.columns:
        if name == on:
            continue
        column = part[name].gather(inverse)
        if name in frame.columns:
            column = frame[name].cast(column.dtype).zip_with(inverse.is_null(), column)
        new[name] = column
    return frame.with_columns(**new)


def lookup(frame: pl.DataFrame, ids: pl.Series, *columns: str, on: str = "id") -> pl.DataFrame:
    """``columns`` of the rows of ``frame`` (sorted by a unique ``on``) whose ``on`` is each of ``ids``,
    null where an id is null or absent: a left join of a few ids on a big frame, in one binary
    search instead of a hash table of the whole frame."""
    keys = frame[on]
    if not len(keys):
        return pl.DataFrame({c: pl.Series(c, [None] * len(ids), dtype=frame.schema[c]) for c in columns})
    wanted = ids.cast(keys.dtype, strict=False)
    at = keys.search_sorted(wanted.fill_null(keys[0])).clip(0, len(keys) - 1)
    found = (keys.gather(at) == wanted).fill_null(False)
    picked = frame.select(columns)[at]
    return picked.select(pl.when(pl.lit(found)).then(pl.col(c)).alias(c) for c in columns)
