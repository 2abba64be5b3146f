"""Put columns computed for some events onto the events frame without a join.

A left join copies every column of a wide frame; here the frame keeps its columns and only
the new ones are built: the rows found once (:class:`Rows`), one gather per column.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl


class Rows:
    """Where each id of a frame is (its ``on`` column sorted and unique): found once, for the many
    columns a build puts on the same frame (the frame may gain columns meanwhile, not rows).

    Event ids are dense small integers: an inverse table (id -> row) answers with one gather;
    other keys, or ``table=False`` (a one-off lookup: no table the size of the frame), take a
    binary search.
    """

    def __init__(self, frame: pl.DataFrame, on: str = "id", table: bool = True) -> None:
        self.on = on
        self.keys = frame[on]
        self.inverse: pl.Series | None = None
        top = self.keys.max() if table and len(self.keys) else None
        if self.keys.dtype.is_unsigned_integer() and isinstance(top, int) and top < 4 * len(self.keys) + 4096:
            self.inverse = pl.repeat(None, top + 1, dtype=pl.UInt32, eager=True).scatter(
                self.keys, pl.int_range(len(self.keys), dtype=pl.UInt32, eager=True)
            )

    def of(self, ids: pl.Series) -> pl.Series:
        """Row positions of ``ids``, which must be present."""
        if not len(ids):
            return pl.Series(self.on, [], dtype=pl.UInt32)
        inverse = self.inverse
        if inverse is not None and ids.dtype.is_unsigned_integer():
            wanted = ids.max()
            rows = inverse.gather(ids.clip(0, len(inverse) - 1))
            if not isinstance(wanted, int) or wanted >= len(inverse) or rows.null_count():
                raise ValueError(f"attach: some {self.on} values are not in the frame")
            return rows
        keys = self.keys
        rows = keys.search_sorted(ids)
        if not keys.gather(rows.clip(0, max(len(keys) - 1, 0))).equals(ids, check_names=False):
            raise ValueError(f"attach: some {self.on} values are not in the frame")
        return rows

    def placement(self, ids: pl.Series) -> pl.Series:
        """Per row of the frame, the position in ``ids`` (unique, all present) of its ``on`` value,
        else null: what :meth:`attach` gathers a part's columns through (one scatter)."""
        return self.placement_of_rows(self.of(ids))

    def placement_of_rows(self, rows: pl.Series) -> pl.Series:
        """:meth:`placement` of the ids at frame rows ``rows`` (:meth:`of` them)."""
        return pl.repeat(None, len(self.keys), dtype=pl.UInt32, eager=True).scatter(
            rows, pl.int_range(len(rows), dtype=pl.UInt32, eager=True)
        )

    def attach(
        self, frame: pl.DataFrame, part: pl.DataFrame, placed: pl.Series | None = None
    ) -> pl.DataFrame:
        """``frame`` with ``part``'s other columns placed on the rows whose ``on`` matches.

        Other rows get null, or keep their value when ``frame`` already has the column. Each
        new column is made in one gather through the part row of every frame row (``placed``:
        :meth:`placement` of the part's ``on`` column, if the caller has it already).
        """
        on = self.on
        if part.is_empty():
            missing = {
                c: pl.lit(None, part.schema[c]) for c in part.columns if c != on and c not in frame.columns
            }
            return frame.with_columns(**missing)
        inverse = self.placement(part[on]) if placed is None else placed
        new: dict[str, pl.Series] = {}
        for name in part.columns:
            if name == on:
                continue
            column = part[name].gather(inverse)
            if name in frame.columns:
                column = frame[name].cast(column.dtype).zip_with(inverse.is_null(), column)
            new[name] = column
        return frame.with_columns(**new)

    def place(self, frame: pl.DataFrame, columns: Iterable[pl.Series], placed: pl.Series) -> pl.DataFrame:
        """``frame`` with new ``columns`` (in the order of a part whose :meth:`placement` is ``placed``)
        on its rows, null on the others; each column is placed as soon as it comes, so a caller that
        makes them one at a time never holds them all twice."""
        return frame.with_columns([column.gather(placed) for column in columns])


def rows_of(frame: pl.DataFrame, ids: pl.Series, on: str = "id") -> pl.Series:
    """Row positions in ``frame`` (sorted by a unique ``on``) of ``ids``, which must be present: a
    binary search each (a one-off lookup builds no table the size of the frame)."""
    return Rows(frame, on, table=False).of(ids)


def attach(frame: pl.DataFrame, part: pl.DataFrame, on: str = "id") -> pl.DataFrame:
    """:meth:`Rows.attach` for one part."""
    return Rows(frame, on).attach(frame, part)


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
