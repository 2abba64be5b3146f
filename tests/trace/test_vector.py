"""The doubling primitives against plain reference loops, on random forests and sequences."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from tracetui.trace import native
from tracetui.trace.vector import depths, nearest_marked_ancestor, prev_at_least_self


@st.composite
def forests(draw: st.DrawFn) -> tuple[list[int], list[bool]]:
    """Parent positions in preorder (a parent comes before its children) and marks."""
    n = draw(st.integers(0, 60))
    parents = [draw(st.integers(-1, i - 1)) for i in range(n)]
    return parents, draw(st.lists(st.booleans(), min_size=n, max_size=n))


@settings(max_examples=examples(200), deadline=None)
@given(forests())
def test_depths_and_marked_ancestors_match_a_walk_up(forest: tuple[list[int], list[bool]]) -> None:
    parents, marks = forest
    want_depth, want_marked = [], []
    for i in range(len(parents)):
        depth, up, found = 0, parents[i], -1
        while up >= 0:
            depth += 1
            if found < 0 and marks[up]:
                found = up
            up = parents[up]
        want_depth.append(depth)
        want_marked.append(found)
    series = pl.Series(parents, dtype=pl.Int64)
    assert depths(series).to_list() == want_depth
    assert nearest_marked_ancestor(series, pl.Series(marks, dtype=pl.Boolean)).to_list() == want_marked
    if native.AVAILABLE:  # the C preorder pass, the same answer
        found = native.marked_ancestor(series, pl.Series(marks, dtype=pl.Boolean))
        assert found is not None and found.to_list() == want_marked


@pytest.mark.skipif(not native.AVAILABLE, reason="the C extension is not built")
def test_the_native_marked_ancestor_refuses_rows_out_of_preorder() -> None:
    parents = pl.Series([1, -1], dtype=pl.Int64)
    assert native.marked_ancestor(parents, pl.Series([True, False])) is None
    assert nearest_marked_ancestor(parents, pl.Series([True, False])).to_list() == [-1, -1]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9)), max_size=60))
def test_prev_at_least_self_matches_a_scan_back(rows: list[tuple[int, int]]) -> None:
    rows = sorted(rows, key=lambda r: r[0])  # groups are contiguous runs
    groups, values = [g for g, _ in rows], [v for _, v in rows]
    first = [groups.index(g) for g in groups]
    want = []
    for i, v in enumerate(values):
        j = i - 1
        while j >= first[i] and values[j] < v:
            j -= 1
        want.append(j if j >= first[i] else -1)
    got = prev_at_least_self(pl.Series(values, dtype=pl.Int64), pl.Series(first, dtype=pl.Int64))
    assert got.to_list() == want
