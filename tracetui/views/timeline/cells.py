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

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

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


@dataclass(frozen=True)
class Events:
    """A row's events that may overlap a window, sorted by start (then reference): ``s``, ``e`` (ns; an
    instant's end is taken as its start + 1), their references and their positions in the row
    (``order``; None: not one of the row's ordered ones). Python lists: the window mostly holds few
    events (the pyramid draws any window that holds many bins' worth), and a polars search or running
    sum costs a query's start-up, more than the whole row's work here; a window of
    :data:`VECTOR_MIN` events or more is drawn from arrays (numpy: faster past a handful)."""

    s: list[int]
    e: list[int]
    ref: list[int]
    order: list[int | None]

    def __len__(self) -> int:
        return len(self.s)


def from_events(events: Events, edges: list[int]) -> Coverage:
    """Cells from events. Per cell three binary searches: the first event whose running furthest end
    passes the cell's start (every event before it ends before the cell), the events starting before
    its end, and the one starting last before its middle (on top if it covers the middle, else the
    first one in the cell). Exact where events overlap too: the first covered ns is that first
    event's start, the last the furthest end before the cell's end."""
    cells = len(edges) - 1
    result = empty(cells)
    if not len(events):
        return result
    s, refs, orders = events.s, events.ref, events.order
    e = [end if end > start else start + 1 for start, end in zip(s, events.e, strict=True)]
    reach = list(accumulate(e, max))
    before = [0, *accumulate(y - x for x, y in zip(s, e, strict=True))]
    a = b = 0
    for c in range(cells):
        lo, hi = edges[c], edges[c + 1]
        a = bisect_right(reach, lo, a)
        b = bisect_left(s, hi, b)
        if b <= a:
            continue
        start, last_end = s[a], e[b - 1]
        first, last = max(start, lo), min(reach[b - 1], hi)
        busy = before[b] - before[a] - max(0, lo - start) - max(0, last_end - hi)
        result.busy[c] = max(1, min(busy, last - first))
        result.first[c], result.last[c] = first, last
        middle = (lo + hi) // 2
        m = bisect_right(s, middle, a, b) - 1
        top = m if m >= a and e[m] > middle else a
        result.top[c], result.order[c] = refs[top], orders[top]
    return result


VECTOR_MIN = 16  # a window of more events is drawn by :func:`from_arrays` (faster past a handful)


def from_arrays(
    s: np.ndarray, e: np.ndarray, refs: np.ndarray, orders: np.ndarray, edges: list[int]
) -> Coverage:
    """:func:`from_events` over arrays (``orders``: -1 where None): its searches for every cell at once,
    the running furthest end and busy sum native. The same cells: a window of many events."""
    cells = len(edges) - 1
    result = empty(cells)
    if not len(s):
        return result
    e = np.maximum(e, s + 1)
    reach = np.maximum.accumulate(e)
    before = np.concatenate(([0], np.cumsum(e - s)))
    bounds = np.asarray(edges, dtype=np.int64)
    lo, hi = bounds[:-1], bounds[1:]
    a = np.searchsorted(reach, lo, side="right")
    b = np.searchsorted(s, hi, side="left")
    cell = np.flatnonzero(b > a)
    if not len(cell):
        return result
    a, b, lo, hi = a[cell], b[cell], lo[cell], hi[cell]
    start, last_end = s[a], e[b - 1]
    first, last = np.maximum(start, lo), np.minimum(reach[b - 1], hi)
    busy = before[b] - before[a] - np.maximum(0, lo - start) - np.maximum(0, last_end - hi)
    busy = np.maximum(1, np.minimum(busy, last - first))
    middle = (lo + hi) // 2
    m = np.minimum(np.maximum(np.searchsorted(s, middle, side="right"), a), b) - 1
    top = np.where((m >= a) & (e[np.maximum(m, 0)] > middle), m, a)
    columns = zip(
        cell.tolist(),
        busy.tolist(),
        first.tolist(),
        last.tolist(),
        refs[top].tolist(),
        orders[top].tolist(),
        strict=True,
    )
    for c, busy_c, first_c, last_c, ref, order in columns:
        result.busy[c], result.first[c], result.last[c], result.top[c] = busy_c, first_c, last_c, ref
        result.order[c] = order if order >= 0 else None
    return result


def from_level(level: Level, origin: int, edges: list[int]) -> Coverage:
    """Cells from a pyramid level whose bins are at most half the narrowest cell (numpy: every cell's
    searches at once): per cell its first and last occupied bin, each cut bin at its ends kept only
    if it holds something inside the cell (its last covered ns past the cell's start, its first
    before the cell's end), and the bin at its middle on top."""
    cells = len(edges) - 1
    result = empty(cells)
    n = len(level.bins)
    if not n:
        return result
    shift = level.shift
    bins, firsts, lasts = level.bins.to_numpy(), level.first.to_numpy(), level.last.to_numpy()
    rel = np.asarray(edges, dtype=np.int64) - origin
    lo, hi = rel[:-1], rel[1:]
    first_bins, last_bins = lo >> shift, (hi - 1) >> shift
    a = np.searchsorted(bins, first_bins, side="left")
    b = np.searchsorted(bins, last_bins, side="right") - 1
    at_a = np.minimum(a, n - 1)
    a = a + ((a <= b) & (bins[at_a] == first_bins) & (lasts[at_a] <= lo))  # cut at the start, empty there
    at_b = np.maximum(b, 0)
    b = b - ((b >= a) & (bins[at_b] == last_bins) & (firsts[at_b] >= hi))  # cut at the end, empty there
    cell = np.flatnonzero(a <= b)
    if not len(cell):
        return result
    a, b, lo, hi = a[cell], b[cell], lo[cell], hi[cell]
    first, last = np.maximum(firsts[a], lo), np.minimum(lasts[b], hi)
    busy = level.busy.to_numpy()
    covered = np.maximum(1, np.minimum(np.minimum(busy[b + 1] - busy[a], last - first), hi - lo))
    k = np.minimum(np.maximum(np.searchsorted(bins, ((lo + hi) // 2) >> shift, side="left"), a), b + 1)
    tops = level.top.to_numpy()[np.where(k <= b, k, a)]
    columns = zip(
        cell.tolist(),
        covered.tolist(),
        (first + origin).tolist(),
        (last + origin).tolist(),
        tops.tolist(),
        strict=True,
    )
    for c, busy_c, first_c, last_c, top in columns:
        result.busy[c], result.first[c], result.last[c], result.top[c] = busy_c, first_c, last_c, top
    return result


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
