"""Aligning two sequences of keys: a longest common subsequence, as index pairs in order.

Generic (any hashable keys): the pair tree aligns one level of two dispatch trees with it. Exact by
dynamic programming up to :data:`DP_CELLS` cells after the common prefix and suffix are trimmed;
larger inputs are split at keys unique in both (patience diff), and what is left matched greedily.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable, Sequence

DP_CELLS = 60_000  # exact LCS up to this many cells (n × m) after trimming; beyond: anchors

Key = Hashable
Row = tuple[int | None, int | None]


def align(a: Sequence[Key], b: Sequence[Key]) -> list[Row]:
    """A longest common subsequence of ``a`` and ``b`` as index pairs in order; unmatched items pair
    with ``None`` (in each gap A's items first). Exact up to :data:`DP_CELLS`; larger inputs are
    split at keys unique in both (patience diff), then matched greedily."""
    n, m = len(a), len(b)
    start = 0
    while start < n and start < m and a[start] == b[start]:
        start += 1
    end_a, end_b = n, m
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    rows: list[Row] = [(i, i) for i in range(start)]
    rows += _align_middle(a, b, start, end_a, start, end_b)
    rows += [(end_a + k, end_b + k) for k in range(n - end_a)]
    return rows


def _align_middle(
    a: Sequence[Key], b: Sequence[Key], lo_a: int, hi_a: int, lo_b: int, hi_b: int
) -> list[Row]:
    if lo_a == hi_a or lo_b == hi_b:
        return [(i, None) for i in range(lo_a, hi_a)] + [(None, j) for j in range(lo_b, hi_b)]
    if (hi_a - lo_a) * (hi_b - lo_b) <= DP_CELLS:
        return _lcs(a, b, lo_a, hi_a, lo_b, hi_b)
    anchors = _unique_anchors(a, b, lo_a, hi_a, lo_b, hi_b)
    if not anchors:
        return _greedy(a, b, lo_a, hi_a, lo_b, hi_b)
    rows: list[Row] = []
    ia, ib = lo_a, lo_b
    for i, j in anchors:
        rows += _align_middle(a, b, ia, i, ib, j)
        rows.append((i, j))
        ia, ib = i + 1, j + 1
    return rows + _align_middle(a, b, ia, hi_a, ib, hi_b)


def _lcs(a: Sequence[Key], b: Sequence[Key], lo_a: int, hi_a: int, lo_b: int, hi_b: int) -> list[Row]:
    """Exact LCS by dynamic programming over suffixes; matches taken as early as possible."""
    xs, ys = a[lo_a:hi_a], b[lo_b:hi_b]
    n, m = len(xs), len(ys)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below, x = table[i], table[i + 1], xs[i]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if x == ys[j] else max(below[j], row[j + 1])
    rows: list[Row] = []
    i = j = 0
    while i < n and j < m:
        if xs[i] == ys[j]:
            rows.append((lo_a + i, lo_b + j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            rows.append((lo_a + i, None))
            i += 1
        else:
            rows.append((None, lo_b + j))
            j += 1
    rows += [(lo_a + k, None) for k in range(i, n)]
    return rows + [(None, lo_b + k) for k in range(j, m)]


def _unique_anchors(
    a: Sequence[Key], b: Sequence[Key], lo_a: int, hi_a: int, lo_b: int, hi_b: int
) -> list[tuple[int, int]]:
    """Keys that occur once in each range, paired, reduced to their longest increasing run."""
    count_a: dict[Key, int] = {}
    for i in range(lo_a, hi_a):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
    count_b: dict[Key, int] = {}
    where_b: dict[Key, int] = {}
    for j in range(lo_b, hi_b):
        count_b[b[j]] = count_b.get(b[j], 0) + 1
        where_b[b[j]] = j
    pairs = [(i, where_b[a[i]]) for i in range(lo_a, hi_a) if count_a[a[i]] == 1 and count_b.get(a[i]) == 1]
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by first item) whose second items increase."""
    tails: list[int] = []
    tail_index: list[int] = []
    previous: list[int] = []
    for index, (_, j) in enumerate(pairs):
        at = bisect_left(tails, j)
        if at == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[at] = j
            tail_index[at] = index
        previous.append(tail_index[at - 1] if at else -1)
    run: list[tuple[int, int]] = []
    index = tail_index[-1] if tail_index else -1
    while index >= 0:
        run.append(pairs[index])
        index = previous[index]
    return run[::-1]


def _greedy(a: Sequence[Key], b: Sequence[Key], lo_a: int, hi_a: int, lo_b: int, hi_b: int) -> list[Row]:
    """Each item of A matched to the next unused equal item of B (linear-ish; large gaps only)."""
    where: dict[Key, list[int]] = {}
    for j in range(lo_b, hi_b):
        where.setdefault(b[j], []).append(j)
    rows: list[Row] = []
    next_b = lo_b
    for i in range(lo_a, hi_a):
        places = where.get(a[i])
        at = bisect_left(places, next_b) if places else 0
        if not places or at == len(places):
            rows.append((i, None))
            continue
        j = places[at]
        rows += [(None, k) for k in range(next_b, j)]
        rows.append((i, j))
        next_b = j + 1
    return rows + [(None, k) for k in range(next_b, hi_b)]


def gaps(rows: list[Row]) -> list[tuple[list[int], list[int]]]:
    """Runs of unmatched rows between matches, as (A indices, B indices), both sides non-empty."""
    found: list[tuple[list[int], list[int]]] = []
    gap_a: list[int] = []
    gap_b: list[int] = []
    for i, j in [*rows, (0, 0)]:
        if i is not None and j is not None:
            if gap_a and gap_b:
                found.append((gap_a, gap_b))
            gap_a, gap_b = [], []
        elif i is not None:
            gap_a.append(i)
        elif j is not None:
            gap_b.append(j)
    return found
