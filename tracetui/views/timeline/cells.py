"""What each cell of a row holds, from the row's events or from a level of its pyramid, and its glyph.

A cell ``[lo, hi)`` is *occupied* where and only where an event lies in it (an event covers
``[start, max(end, start + 1))``). From the events that is direct. From a pyramid level whose bins
are at most half a cell wide it is exact too: a cell then holds whole bins and at most a part of one
bin at each end, and a bin's first and last covered ns say whether anything of it lies in that part
(a bin cut at the cell's start holds something in the cell if its last covered ns is past ``lo``;
one cut at its end, if its first is before ``hi``). The busy share and the covered extent of a cell
cut into partial bins are approximate: they shape the glyph, not where one is drawn.

Glyphs: a covered cell is ``█``; one covered from its left edge on, the eighth block of its share
(``▏▎▍▌▋▊▉``); one covered up to its right edge, the eighth block of its gap drawn in the gap's colour
over the event's (``inverse``); anything else (an event inside the cell, or several) a bar of its busy
share (``▁``…``█``), at least ``▁``: a 2 µs kernel in a 1 ms cell is seen.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracetui.views.timeline.index import Level

EIGHTHS = " ▏▎▍▌▋▊▉█"
BARS = " ▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Coverage:
    """Per cell of a row: how many ns are busy (0: empty), the first and last covered ns, and the
    event covering most of it (``top``: its reference, None when empty) with its position in the row
    (``order``: odd ones take the alternate shade; None where a cell is a summary of many)."""

    busy: list[int]
    first: list[int]
    last: list[int]
    top: list[int | None]
    order: list[int | None]

    @property
    def occupied(self) -> list[bool]:
        return [b > 0 for b in self.busy]


def empty(cells: int) -> Coverage:
    return Coverage([0] * cells, [0] * cells, [0] * cells, [None] * cells, [None] * cells)


def from_events(events: pl.DataFrame, edges: list[int]) -> Coverage:
    """Cells from events sorted by start (``s``, ``e``: ns, ``e > s``; ``ref``; ``order``: position in
    the row, or null). Three searches over the cells' edges: the first event whose running furthest
    end passes a cell's start (every event before it ends before the cell), the events starting
    before its end, and the one starting last before its middle (on top if it covers the middle,
    else the first one in the cell). Exact where events overlap too: the first covered ns is that
    first event's start, the last the furthest end before the cell's end."""
    cells = len(edges) - 1
    n = events.height
    if n == 0:
        return empty(cells)
    frame = events.with_columns(
        reach=pl.col("e").cum_max(),
        before=(pl.col("e") - pl.col("s")).cum_sum() - (pl.col("e") - pl.col("s")),
    )
    bounds = pl.Series(edges, dtype=pl.Int64)
    los, his = bounds.slice(0, cells), bounds.slice(1, cells)
    a = frame["reach"].search_sorted(los, side="right").cast(pl.Int64)
    b = frame["s"].search_sorted(his, side="left").cast(pl.Int64)
    m = frame["s"].search_sorted((los + his) // 2, side="right").cast(pl.Int64) - 1
    at_a = frame[a.clip(0, n - 1)]
    at_b = frame[(b - 1).clip(0, n - 1)]
    at_m = frame[m.clip(0, n - 1)]
    al, bl, ml = a.to_list(), b.to_list(), m.to_list()
    a_s, a_before, a_ref, a_order = (at_a[c].to_list() for c in ("s", "before", "ref", "order"))
    b_s, b_e, b_reach, b_before = (at_b[c].to_list() for c in ("s", "e", "reach", "before"))
    m_e, m_ref, m_order = (at_m[c].to_list() for c in ("e", "ref", "order"))
    result = empty(cells)
    for c in range(cells):
        first_event, end = al[c], bl[c]
        if end <= first_event:
            continue
        lo, hi = edges[c], edges[c + 1]
        start = a_s[c]
        first, last = max(start, lo), min(b_reach[c], hi)
        busy = b_before[c] + b_e[c] - b_s[c] - a_before[c] - max(0, lo - start) - max(0, b_e[c] - hi)
        result.busy[c] = max(1, min(busy, last - first))
        result.first[c], result.last[c] = first, last
        middle = (lo + hi) // 2
        if first_event <= ml[c] < end and m_e[c] > middle:
            result.top[c], result.order[c] = m_ref[c], m_order[c]
        else:
            result.top[c], result.order[c] = a_ref[c], a_order[c]
    return result


def from_level(level: Level, origin: int, edges: list[int]) -> Coverage:
    """Cells from a pyramid level whose bins are at most half the narrowest cell."""
    cells = len(edges) - 1
    width = 1 << level.shift
    rel = [t - origin for t in edges]
    starts = pl.Series(rel[:-1], dtype=pl.Int64)
    ends = pl.Series(rel[1:], dtype=pl.Int64)
    first_bin = starts // width
    last_bin = (ends - 1) // width
    middle_bin = ((starts + ends) // 2) // width
    n = len(level)
    i = level.bins.search_sorted(first_bin, side="left").cast(pl.Int64)
    j = level.bins.search_sorted(last_bin, side="right").cast(pl.Int64) - 1
    k = level.bins.search_sorted(middle_bin, side="left").cast(pl.Int64)
    picks = pl.concat([i, i + 1, j, j - 1, k]).clip(0, max(0, n - 1))
    if n == 0:
        return empty(cells)
    bins = level.bins.gather(picks).to_list()
    firsts = level.first.gather(picks).to_list()
    lasts = level.last.gather(picks).to_list()
    tops = level.top.gather(picks).to_list()
    cum = level.busy.to_list() if n <= 4 * cells else None
    cum_at = None if cum is not None else level.busy.gather(pl.concat([picks, picks + 1])).to_list()
    fb, lb = first_bin.to_list(), last_bin.to_list()
    il, jl, kl = i.to_list(), j.to_list(), k.to_list()
    result = empty(cells)
    for c in range(cells):
        lo, hi = rel[c], rel[c + 1]
        a, b = il[c], jl[c]
        slot_a, slot_b = c, 2 * cells + c  # where picks holds bins a and b
        if a <= b and a < n and bins[slot_a] == fb[c] and lasts[slot_a] <= lo:
            a, slot_a = a + 1, cells + c  # the bin cut at the cell's start holds nothing of it
        if b >= a and b >= 0 and bins[slot_b] == lb[c] and firsts[slot_b] >= hi:
            b, slot_b = b - 1, 3 * cells + c  # the bin cut at its end holds nothing of it
        if a > b or a >= n or b < 0:
            continue
        first = max(firsts[slot_a], lo)
        last = min(lasts[slot_b], hi)
        if cum is not None:
            busy = cum[b + 1] - cum[a]
        else:
            busy = _cum(cum_at, picks_len=5 * cells, slot=slot_b, after=True) - _cum(
                cum_at, 5 * cells, slot_a
            )
        slot_k = 4 * cells + c if a <= kl[c] <= b else slot_a
        result.busy[c] = max(1, min(busy, last - first, hi - lo))
        result.first[c], result.last[c] = first + origin, last + origin
        result.top[c] = tops[slot_k]
    return result


def _cum(values: list[int] | None, picks_len: int, slot: int, after: bool = False) -> int:
    """The running busy sum before (``after``: after) the bin picked at ``slot``."""
    assert values is not None
    return values[slot + picks_len] if after else values[slot]


def glyph(lo: int, hi: int, busy: int, first: int, last: int) -> tuple[str, bool]:
    """The glyph of cell ``[lo, hi)`` and whether it is drawn inverse (see the module's docstring)."""
    width = hi - lo
    if busy <= 0:
        return " ", False
    if busy >= width:
        return "█", False
    if busy >= last - first:  # one covered stretch
        if first <= lo:
            eighths = -(-(last - lo) * 8 // width)
            return EIGHTHS[max(1, min(8, eighths))], False
        if last >= hi:
            gap = (first - lo) * 8 // width
            return (EIGHTHS[gap], True) if gap > 0 else ("█", False)
    return BARS[max(1, min(8, -(-busy * 8 // width)))], False
