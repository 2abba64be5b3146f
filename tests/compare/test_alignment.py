"""Aligning two sequences of keys (the pair tree's building block), on sequences written by hand."""

from __future__ import annotations

import pytest

from tracetui.compare import alignment
from tracetui.compare.alignment import align, gaps


def test_align_identical_and_empty() -> None:
    assert align("abc", "abc") == [(0, 0), (1, 1), (2, 2)]
    assert align("", "ab") == [(None, 0), (None, 1)]
    assert align("ab", "") == [(0, None), (1, None)]
    assert align("", "") == []


def test_align_puts_a_before_b_in_a_gap_and_keeps_prefix_and_suffix() -> None:
    assert align("xaby", "xcdy") == [(0, 0), (1, None), (2, None), (None, 1), (None, 2), (3, 3)]


def test_align_is_a_longest_common_subsequence_with_early_matches() -> None:
    a, b = list("ABCBDAB"), list("BDCABA")
    rows = align(a, b)
    matched = [(i, j) for i, j in rows if i is not None and j is not None]
    assert len(matched) == 4  # the textbook LCS length
    assert all(a[i] == b[j] for i, j in matched)
    assert [i for i, _ in rows if i is not None] == list(range(len(a)))
    assert [j for _, j in rows if j is not None] == list(range(len(b)))
    assert align(["x"], ["x", "y", "x"])[0] == (0, 0)  # the first equal item, not the last


def test_large_inputs_use_unique_anchors_then_greedy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alignment, "DP_CELLS", 4)
    a = ["u1", "r", "r", "u2", "r", "x"]
    b = ["r", "u1", "r", "u2", "y", "r"]
    rows = align(a, b)
    matched = {(i, j) for i, j in rows if i is not None and j is not None}
    assert (0, 1) in matched and (3, 3) in matched  # the unique keys anchor the alignment
    assert all(a[i] == b[j] for i, j in matched)
    assert [i for i, _ in rows if i is not None] == list(range(len(a)))
    assert [j for _, j in rows if j is not None] == list(range(len(b)))


def test_gaps_are_the_unmatched_runs_with_both_sides() -> None:
    rows = align("xaby", "xcdy")
    assert gaps(rows) == [([1, 2], [1, 2])]
    assert gaps(align("xab", "x")) == []  # A alone: nothing to open on the other side
