"""The timeline's lanes, what each row draws from, and how the user arranges them.

A :class:`Lane` is a CPU thread, a GPU stream, a memory lane, a rank of a run or a lane handed in from
outside (a critical path, a queue length: :class:`ArrayRow` and :class:`CounterRow` take plain
columns). It shows its ``summary`` rows when collapsed and its ``detail`` rows when expanded (a
thread: one row per nesting depth). A :class:`Layout` says the order, which lanes are hidden,
pinned (drawn first, never scrolled away) and expanded; :func:`shown_rows` lays the rows out.
:func:`select` reads ``tracetui render --lanes``.
"""

from __future__ import annotations

import fnmatch
import zlib
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import TYPE_CHECKING, Protocol

import numpy as np
import polars as pl

from tracetui.insight.kernel_names import FAMILIES, decode_kernel_name
from tracetui.trace.categories import GPU_WORK
from tracetui.views.timeline.cells import VECTOR_MIN, Coverage, Events, from_arrays, from_events, from_level
from tracetui.views.timeline.index import EventIndex, RowIndex

if TYPE_CHECKING:
    from tracetui.views.memory import MemoryLane

KINDS = ("cpu", "gpu", "memory", "counter", "rank", "extra")
COLOUR_MODES = ("category", "name", "family")
SLOTS = 12  # the widget's palette
CATEGORY_SLOTS = {
    "cpu_op": 0,
    "user_annotation": 1,
    "python_function": 2,
    "cuda_runtime": 3,
    "cuda_driver": 3,
    "kernel": 4,
    "gpu_memcpy": 5,
    "gpu_memset": 6,
    "gpu_user_annotation": 7,
    "cuda_sync": 8,
    "step": 1,
    "collective": 5,
    "last": 10,  # a rank that arrived last at a collective: the one the others waited for
    "critical": 11,
}
OTHER_SLOT = 9


def colour_slot(mode: str, category: str, name: str) -> int:
    """The palette slot of an event: by category, by name, or by family (GPU work: the decoded
    kernel family; CPU: the name's namespace, ``aten`` of ``aten::mm``)."""
    if mode == "name":
        return zlib.crc32(name.encode("utf-8", "surrogatepass")) % SLOTS
    if mode == "family":
        if category in GPU_WORK:
            family = decode_kernel_name(name).family
            return (FAMILIES.index(family) if family in FAMILIES else len(FAMILIES)) % SLOTS
        head = name.split("::", 1)[0] if "::" in name else category
        return zlib.crc32(head.encode("utf-8", "surrogatepass")) % SLOTS
    return CATEGORY_SLOTS.get(category, OTHER_SLOT)


def shown_name(category: str, name: str) -> str:
    """What an event wide enough is labelled with: GPU work by its decoded short name."""
    return decode_kernel_name(name).short if category in GPU_WORK else name


class IntervalSource(Protocol):
    """What a row of events draws from."""

    def coverage(self, edges: list[int]) -> Coverage: ...

    def describe(self, refs: Sequence[int]) -> list[tuple[str, str]]:
        """``(category, name)`` of each reference."""
        ...

    def extents(self, refs: Sequence[int]) -> list[tuple[int, int]]:
        """``(start, end)`` of each reference (end at least start + 1)."""
        ...

    def event_id(self, ref: int) -> int | None:
        """The trace's event id of a reference (None: not an event of the trace)."""
        ...


class LevelSource(Protocol):
    """What a row of levels (memory, a counter) draws from."""

    @property
    def legend(self) -> str:
        """What an empty and a full cell stand for."""
        ...

    @property
    def quiet(self) -> bool:
        """Tiny beside the other rows: drawn as a faint line where anything is held."""
        ...

    def levels(self, edges: list[int]) -> list[float | None]:
        """Per cell, its highest level between the row's floor (0) and scale (1); None: nothing."""
        ...

    def marks(self, edges: list[int]) -> list[bool]:
        """Per cell, whether it holds the row's mark (a peak)."""
        ...


@dataclass(frozen=True, eq=False)
class TraceRow:
    """A row of the trace's events, through the :class:`EventIndex`."""

    index: EventIndex
    row: RowIndex
    cats: pl.Series
    names: pl.Series
    ids: pl.Series

    def coverage(self, edges: list[int]) -> Coverage:
        lo, hi = edges[0], edges[-1]
        cells = len(edges) - 1
        level = self.row.level_for((hi - lo) // cells)
        if level is not None:
            return from_level(level, self.index.origin, edges)
        first, last = self._range(lo, hi)
        if last - first >= VECTOR_MIN:
            return from_arrays(*self._arrays(first, last, lo, hi), edges)
        return from_events(self.events(lo, hi), edges)

    def _range(self, lo: int, hi: int) -> tuple[int, int]:
        """Which of the row's ordered events may overlap ``[lo, hi)``: those starting in
        ``[lo - reach, hi)`` (some end before ``lo``)."""
        index, row = self.index, self.row
        first = index.position(row, lo - row.reach)
        return first, max(first, index.position(row, hi))

    def events(self, lo: int, hi: int) -> Events:
        """The row's events that may overlap ``[lo, hi)``, by start (:class:`Events`: ``ref`` their
        positions in the events table). Those of the order (:meth:`_range`), and the long ones that
        overlap (a few: put in place one by one)."""
        index, row = self.index, self.row
        first, last = self._range(lo, hi)
        at = index.order.slice(row.offset + first, last - first)
        # series[positions]: a direct gather (Series.gather runs a query, ~10x slower on a window's few)
        s, e, refs = index.starts[at].to_list(), index.ends[at].to_list(), at.to_list()
        order: list[int | None] = list(range(first, first + len(refs)))
        if len(row.long_rows):
            inside = (row.long_starts < hi) & (row.long_ends > lo)
            if inside.any():
                for start, end, ref in zip(
                    row.long_starts.filter(inside).to_list(),
                    row.long_ends.filter(inside).to_list(),
                    row.long_rows.filter(inside).to_list(),
                    strict=True,
                ):
                    place = bisect_right(s, start)
                    while place > 0 and s[place - 1] == start and refs[place - 1] > ref:
                        place -= 1
                    s.insert(place, start)
                    e.insert(place, end)
                    refs.insert(place, ref)
                    order.insert(place, None)
        return Events(s, e, refs, order)

    def _arrays(
        self, first: int, last: int, lo: int, hi: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`events` as arrays (order -1: a long event): the long ones merged in by (start, ref),
        as :meth:`events` places them (the order's ties are by ref)."""
        index, row = self.index, self.row
        at = index.order.slice(row.offset + first, last - first)
        s, e, refs = index.starts[at].to_numpy(), index.ends[at].to_numpy(), at.to_numpy().astype(np.int64)
        order = np.arange(first, last, dtype=np.int64)
        if len(row.long_rows):
            inside = (row.long_starts < hi) & (row.long_ends > lo)
            if inside.any():
                s = np.concatenate((s, row.long_starts.filter(inside).to_numpy()))
                e = np.concatenate((e, row.long_ends.filter(inside).to_numpy()))
                refs = np.concatenate((refs, row.long_rows.filter(inside).to_numpy().astype(np.int64)))
                order = np.concatenate((order, np.full(len(s) - len(order), -1, dtype=np.int64)))
                by = np.lexsort((refs, s))
                s, e, refs, order = s[by], e[by], refs[by], order[by]
        return s, e, refs, order

    def describe(self, refs: Sequence[int]) -> list[tuple[str, str]]:
        at = pl.Series(refs, dtype=pl.UInt32)
        return list(zip(self.cats[at].to_list(), self.names[at].to_list(), strict=True))

    def extents(self, refs: Sequence[int]) -> list[tuple[int, int]]:
        at = pl.Series(refs, dtype=pl.UInt32)
        return list(zip(self.index.starts[at].to_list(), self.index.ends[at].to_list(), strict=True))

    def event_id(self, ref: int) -> int | None:
        return int(self.ids[ref])


@dataclass(frozen=True, eq=False)
class ArrayRow:
    """A row of intervals given as columns (a rank's steps and collectives, a critical path):
    ``starts``/``ends`` in ns on the trace's clock, a category (its colour) and a name each, and the
    trace's event id of each where there is one."""

    starts: Sequence[int]
    ends: Sequence[int]
    categories: Sequence[str]
    names: Sequence[str]
    ids: Sequence[int | None] = ()
    _events: Events = field(init=False, repr=False)

    def __post_init__(self) -> None:
        by_start = sorted(range(len(self.starts)), key=lambda i: (self.starts[i], i))
        events = Events(
            [self.starts[i] for i in by_start],
            [max(self.ends[i], self.starts[i] + 1) for i in by_start],
            by_start,
            list(by_start),
        )
        object.__setattr__(self, "_events", events)

    def coverage(self, edges: list[int]) -> Coverage:
        return from_events(self._events, edges)

    def describe(self, refs: Sequence[int]) -> list[tuple[str, str]]:
        return [(self.categories[r], self.names[r]) for r in refs]

    def extents(self, refs: Sequence[int]) -> list[tuple[int, int]]:
        return [(int(self.starts[r]), max(int(self.ends[r]), int(self.starts[r]) + 1)) for r in refs]

    def event_id(self, ref: int) -> int | None:
        return self.ids[ref] if ref < len(self.ids) else None


@dataclass(frozen=True, eq=False)
class MemoryRow:
    """A memory lane of :mod:`tracetui.views.memory` (its levels, scale and peak are that module's)."""

    lane: MemoryLane

    @property
    def legend(self) -> str:
        return self.lane.legend

    @property
    def quiet(self) -> bool:
        return self.lane.quiet

    def levels(self, edges: list[int]) -> list[float | None]:
        return self.lane.fractions(edges[:-1], edges[1:])

    def marks(self, edges: list[int]) -> list[bool]:
        return [self.lane.peak_in(lo, hi) for lo, hi in pairwise(edges)]


@dataclass(frozen=True, eq=False)
class CounterRow:
    """A level over time given as columns (a queue length, a counter): the value after each time,
    drawn from ``floor`` (empty) to ``scale`` (full); ``legend`` names the range."""

    times: pl.Series
    values: pl.Series
    floor: float
    scale: float
    legend: str = ""
    quiet: bool = False

    def levels(self, edges: list[int]) -> list[float | None]:
        cells = len(edges) - 1
        if not len(self.times):
            return [None] * cells
        bounds = pl.Series(edges, dtype=pl.Int64)
        before = (self.times.search_sorted(bounds.slice(0, cells), side="right").cast(pl.Int64) - 1).to_list()
        values = self.values.to_list()
        inside = (
            pl.DataFrame({"t": self.times, "v": self.values})
            .filter((pl.col("t") >= edges[0]) & (pl.col("t") < edges[-1]))
            .with_columns(cell=((pl.col("t") - edges[0] + 1) * cells - 1) // (edges[-1] - edges[0]))
            .group_by("cell")
            .agg(pl.col("v").max())
        )
        highest: list[float | None] = [values[b] if b >= 0 else None for b in before]
        for cell, value in inside.iter_rows():
            current = highest[cell]
            highest[cell] = value if current is None else max(current, value)
        span = self.scale - self.floor
        return [None if v is None else (v - self.floor) / span if span > 0 else 1.0 for v in highest]

    def marks(self, edges: list[int]) -> list[bool]:
        return [False] * (len(edges) - 1)


@dataclass(frozen=True, eq=False)
class Row:
    """One line of a lane: its label (empty on a lane's first line: the lane's label is drawn) and
    what it draws."""

    label: str
    source: IntervalSource | LevelSource

    @property
    def levels(self) -> bool:
        return hasattr(self.source, "levels")


@dataclass(frozen=True, eq=False)
class Lane:
    """A lane: its key (``cpu:3``, ``gpu:4``, ``memory:alloc cuda:0``, ``rank:2``, ``extra:…``), label,
    kind (:data:`KINDS`), the rows shown collapsed and those shown expanded (none: not collapsible)."""

    key: str
    label: str
    kind: str
    summary: tuple[Row, ...]
    detail: tuple[Row, ...] = ()
    quiet: bool = False
    """Hidden at first (``H`` shows it): the profiler's own span lane."""

    def rows(self, expanded: bool) -> tuple[Row, ...]:
        return self.detail if expanded and self.detail else self.summary


@dataclass(frozen=True)
class Layout:
    """How the lanes are arranged: their order (keys; lanes not named follow in their own order),
    which are hidden, pinned (in pin order) and expanded."""

    order: tuple[str, ...] = ()
    hidden: frozenset[str] = frozenset()
    pinned: tuple[str, ...] = ()
    expanded: frozenset[str] = frozenset()


def first_layout(lanes: Sequence[Lane]) -> Layout:
    """The layout a timeline opens with: every lane but the quiet ones, collapsed."""
    return Layout(hidden=frozenset(lane.key for lane in lanes if lane.quiet))


@dataclass(frozen=True)
class ShownRow:
    """A row on screen: its lane, the row, whether it is the lane's first and whether pinned."""

    lane: Lane
    row: Row
    first: bool
    pinned: bool


def ordered(lanes: Sequence[Lane], layout: Layout) -> list[Lane]:
    """The lanes in the layout's order (pinned ones not first: see :func:`shown_rows`)."""
    rank = {key: i for i, key in enumerate(layout.order)}
    return sorted(lanes, key=lambda lane: rank.get(lane.key, len(rank)))  # stable: the rest keep theirs


def shown_rows(lanes: Sequence[Lane], layout: Layout) -> list[ShownRow]:
    """Every row on screen, pinned lanes first (in pin order), hidden lanes left out."""
    by_key = {lane.key: lane for lane in lanes}
    pinned = [by_key[key] for key in layout.pinned if key in by_key and key not in layout.hidden]
    rest = [
        lane
        for lane in ordered(lanes, layout)
        if lane.key not in layout.hidden and lane.key not in layout.pinned
    ]
    result = []
    for lane in pinned + rest:
        is_pinned = lane.key in layout.pinned
        for i, row in enumerate(lane.rows(lane.key in layout.expanded)):
            result.append(ShownRow(lane, row, i == 0, is_pinned))
    return result


def toggle_expanded(layout: Layout, lane: Lane) -> Layout:
    if not lane.detail:
        return layout
    return replace(layout, expanded=layout.expanded ^ {lane.key})


def hide(layout: Layout, key: str) -> Layout:
    return replace(layout, hidden=layout.hidden | {key}, pinned=tuple(k for k in layout.pinned if k != key))


def unhide_all(layout: Layout) -> Layout:
    return replace(layout, hidden=frozenset())


def toggle_pinned(layout: Layout, key: str) -> Layout:
    if key in layout.pinned:
        return replace(layout, pinned=tuple(k for k in layout.pinned if k != key))
    return replace(layout, pinned=(*layout.pinned, key))


def move(layout: Layout, lanes: Sequence[Lane], key: str, delta: int) -> Layout:
    """``key`` moved ``delta`` places among the lanes shown with it (pinned ones among the pinned)."""
    if key in layout.pinned:
        keys = list(layout.pinned)
    else:
        keys = [lane.key for lane in ordered(lanes, layout) if lane.key not in layout.pinned]
    shown = [k for k in keys if k not in layout.hidden]
    if key not in shown:
        return layout
    at = shown.index(key)
    target = max(0, min(len(shown) - 1, at + delta))
    if target == at:
        return layout
    other = shown[target]
    i, j = keys.index(key), keys.index(other)
    keys[i], keys[j] = keys[j], keys[i]
    if key in layout.pinned:
        return replace(layout, pinned=tuple(keys))
    return replace(layout, order=tuple(keys))


def select(lanes: Sequence[Lane], spec: str) -> Layout:
    """The layout ``tracetui render --lanes SPEC`` asks for: a comma-separated list of lane kinds
    (``cpu``, ``gpu``, ``memory``, ``rank``, …) or label patterns (``GPU 0 s7``, ``CPU pt_*``), in the
    order to draw them, each ending in ``+`` to show it expanded; every other lane hidden. A ValueError
    names an item that matches no lane."""
    chosen: list[str] = []
    expanded: set[str] = set()
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        open_it = item.endswith("+")
        pattern = item.removesuffix("+").strip()
        found = [
            lane.key
            for lane in lanes
            if lane.kind == pattern or fnmatch.fnmatchcase(lane.label, pattern) or lane.key == pattern
        ]
        if not found:
            kinds = ", ".join(sorted({lane.kind for lane in lanes}))
            raise ValueError(f"no lane matches {pattern!r} (kinds here: {kinds}; or a lane's label)")
        for key in found:
            if key not in chosen:
                chosen.append(key)
            if open_it:
                expanded.add(key)
    hidden = frozenset(lane.key for lane in lanes if lane.key not in chosen)
    return Layout(order=tuple(chosen), hidden=hidden, expanded=frozenset(expanded))
