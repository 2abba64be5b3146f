"""``attach`` / ``rows_of``: columns land on the rows whose id matches, or it refuses."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl
import pytest

from tracetui.trace.align import attach, rows_of


def test_dense_ids_and_other_keys_find_the_same_rows() -> None:
    frame = pl.DataFrame({"id": pl.Series([2, 3, 7, 10], dtype=pl.UInt32), "k": [-5, 0, 4, 9]})
    ids = pl.Series([10, 2, 7], dtype=pl.UInt32)
    assert rows_of(frame, ids).to_list() == [3, 0, 2]
    assert rows_of(frame, pl.Series([9, -5, 4]), on="k").to_list() == [3, 0, 2]
    assert rows_of(frame, pl.Series([], dtype=pl.UInt32)).to_list() == []


@pytest.mark.parametrize("missing", [5, 11, 1000])
def test_an_id_not_in_the_frame_is_an_error(missing: int) -> None:
    frame = pl.DataFrame({"id": pl.Series([2, 3, 7, 10], dtype=pl.UInt32)})
    with pytest.raises(ValueError, match="not in the frame"):
        rows_of(frame, pl.Series([2, missing], dtype=pl.UInt32))
    with pytest.raises(ValueError, match="not in the frame"):
        rows_of(frame.with_columns(pl.col("id").cast(pl.Int64)), pl.Series([2, missing]))


def test_attach_fills_matching_rows_and_leaves_the_others() -> None:
    frame = pl.DataFrame({"id": pl.Series([1, 4, 6], dtype=pl.UInt32), "a": [1, 2, 3]})
    part = pl.DataFrame({"id": pl.Series([6, 1], dtype=pl.UInt32), "a": [30, 10], "b": ["x", "y"]})
    out = attach(frame, part)
    assert out.to_dict(as_series=False) == {"id": [1, 4, 6], "a": [10, 2, 30], "b": ["y", None, "x"]}


def test_one_placement_serves_several_parts_and_columns_placed_one_by_one() -> None:
    from tracetui.trace.align import Rows

    frame = pl.DataFrame({"id": pl.Series([1, 4, 6, 9], dtype=pl.UInt32), "a": [1, 2, 3, 4]})
    rows = Rows(frame)
    ids = pl.Series([9, 1, 6], dtype=pl.UInt32)
    placed = rows.placement(ids)
    assert placed.to_list() == [1, None, 2, 0]
    assert rows.placement_of_rows(rows.of(ids)).equals(placed)
    part = pl.DataFrame({"id": ids, "a": [90, 10, 60], "b": [True, False, True]})
    out = rows.attach(frame, part, placed)
    assert out.equals(attach(frame, part))
    made: list[str] = []

    def columns() -> Iterator[pl.Series]:
        for name, values in (("c", [0.5, 1.5, 2.5]), ("d", [7, 8, 9])):
            made.append(name)
            yield pl.Series(name, values)

    placed_out = rows.place(frame, columns(), placed)
    assert made == ["c", "d"]
    assert placed_out.to_dict(as_series=False) == {
        "id": [1, 4, 6, 9],
        "a": [1, 2, 3, 4],
        "c": [1.5, None, 2.5, 0.5],
        "d": [8, None, 9, 7],
    }
