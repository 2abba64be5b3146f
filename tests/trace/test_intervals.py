"""The one interval union (``stats.merged_intervals``) that busy time, idle gaps, the timeline's lanes
and the details' launched lane all read, against a reference written out by hand."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracetui.trace.stats import merged_intervals, union_length

INTERVAL = st.tuples(st.integers(0, 3), st.integers(0, 200), st.integers(0, 50), st.booleans())


def reference(rows: list[tuple[int, int, int | None]]) -> dict[int, list[tuple[int, int]]]:
    """Per group: sorted, merged ``[start, end)`` (touching intervals merge; no end: left out)."""
    merged: dict[int, list[tuple[int, int]]] = {}
    for group, start, end in sorted((r for r in rows if r[2] is not None), key=lambda r: (r[0], r[1])):
        assert end is not None
        spans = merged.setdefault(group, [])
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return merged


@given(st.lists(INTERVAL, max_size=30))
def test_merged_intervals_match_the_reference(drawn: list[tuple[int, int, int, bool]]) -> None:
    rows = [(g, start, None if no_end else start + length) for g, start, length, no_end in drawn]
    frame = pl.DataFrame(rows, schema={"g": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64}, orient="row")
    expected = reference(rows)
    got = merged_intervals(frame, "g")
    assert got.columns == ["g", "start_ns", "end_ns"]
    assert got.rows() == [(g, s, e) for g in sorted(expected) for s, e in expected[g]]
    lengths = dict(union_length(frame, "g").rows())
    assert lengths == pytest.approx({g: sum(e - s for s, e in spans) / 1000 for g, spans in expected.items()})
    one_group = merged_intervals(frame.filter(pl.col("g") == 0).drop("g"))
    assert one_group.rows() == expected.get(0, [])


def test_touching_and_nested_intervals() -> None:
    frame = pl.DataFrame({"start_ns": [30, 0, 5, 10, 40], "end_ns": [35, 10, 8, 20, 41]})
    assert merged_intervals(frame).rows() == [(0, 20), (30, 35), (40, 41)]
