"""The timeline of a trace as plain data: its lanes, any window of any row drawn as cells, what a
selected event is linked to, and where a set of events (a critical path) lies.

:class:`TimelineModel` is built once per trace (:func:`timeline_model`, in a worker: the index may
have to be built); drawing a row is a few vectorised searches over the row's index or pyramid
(:mod:`tracetui.views.timeline.cells`), cached per row and window. The widget turns a
:class:`DrawnRow` into styled cells.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from tracetui.trace.categories import GPU_KIND, GPU_WORK, LAUNCH_CALLS
from tracetui.trace.stats import THREAD_NAME
from tracetui.views.counters import counter_table
from tracetui.views.timeline import window as win
from tracetui.views.timeline.cells import BARS, glyph
from tracetui.views.timeline.index import GPU_ROW_NAMES, SUMMARY, EventIndex, index_of, rows_of
from tracetui.views.timeline.lanes import (
    ArrayRow,
    CounterRow,
    IntervalSource,
    Lane,
    LevelSource,
    MemoryRow,
    Row,
    TraceRow,
    colour_slot,
    shown_name,
)
from tracetui.views.timeline.window import Window

if TYPE_CHECKING:
    from tracetui.trace import Trace
    from tracetui.views.memory import MemoryLane

EMPTY, LEVEL, PEAK, FAINT = -1, -2, -3, -4  # slots that are no palette colour
PEAK_GLYPH = "▲"
LABEL_MIN = 6  # cells an event must fully cover to be labelled
CACHED_ROWS = 512
MAX_LINKED = 10_000
PROFILER_SPANS = "Spans"  # Kineto's process of the profiler's own span ("PyTorch Profiler (0)")


@dataclass(frozen=True)
class DrawnRow:
    """One row of cells: glyph, palette slot (:data:`EMPTY`, :data:`LEVEL`, :data:`PEAK`, :data:`FAINT`
    or a slot of :data:`tracetui.views.timeline.lanes.SLOTS`), inverse (an event starting in the cell:
    the glyph is its gap), alternate shade, the reference under each cell (for a click: the row's
    ``source.event_id``), and labels ``(first cell, cells, text)`` over events wide enough."""

    glyphs: str
    slots: tuple[int, ...]
    inverse: tuple[bool, ...]
    alt: tuple[bool, ...]
    refs: tuple[int | None, ...]
    labels: tuple[tuple[int, int, str], ...] = ()


def lane_label(thread_name: str | None, pid: str, tid: str, kind: str) -> str:
    """``CPU python3``, ``CPU pt_autograd_0``, ``GPU 0 s7``."""
    if kind == "gpu":
        return f"GPU {pid} s{tid}"
    if thread_name:
        found = re.search(THREAD_NAME, thread_name)
        return f"CPU {found.group(1) if found else thread_name}"
    return f"CPU {tid}"


def trace_lanes(trace: Trace, index: EventIndex) -> list[Lane]:
    """A lane per CPU thread (collapsed: its summary; expanded: a row per depth) then per GPU stream
    (collapsed: its work; expanded: work, syncs, annotations), those with events."""
    events = trace.columns_of("events", "id", "cat", "name")
    cats, names, ids = events["cat"], events["name"], events["id"]
    subs: dict[int, list[int]] = {}
    for track, sub in index.rows:
        subs.setdefault(track, []).append(sub)
    lanes: list[Lane] = []
    for info in trace.tracks.sort("track").iter_rows(named=True):
        mine = sorted(subs.get(info["track"], []))
        if not mine:
            continue
        track, kind = info["track"], info["kind"]

        def row(sub: int, label: str, track: int = track) -> Row:
            return Row(label, TraceRow(index, index.rows[(track, sub)], cats, names, ids))

        label = lane_label(info["thread_name"], info["pid"], info["tid"], kind)
        if kind == "gpu":
            detail = tuple(row(sub, "" if i == 0 else GPU_ROW_NAMES[sub]) for i, sub in enumerate(mine))
            lanes.append(Lane(f"gpu:{track}", label, "gpu", detail[:1], detail if len(detail) > 1 else ()))
        else:
            depths = [sub for sub in mine if sub != SUMMARY]
            detail = tuple(row(sub, "" if i == 0 else f"depth {sub - 1}") for i, sub in enumerate(depths))
            summary = (row(SUMMARY, ""),) if SUMMARY in mine else detail[:1]
            quiet = info["pid"] == PROFILER_SPANS  # the profiler's own span, one event over the trace
            lanes.append(Lane(f"cpu:{track}", label, "cpu", summary, detail, quiet))
    return [lane for lane in lanes if lane.kind == "cpu"] + [lane for lane in lanes if lane.kind == "gpu"]


def memory_rows(lanes: Sequence[MemoryLane]) -> list[Lane]:
    """The memory lanes of :func:`tracetui.views.memory.memory_lanes`, one row each."""
    return [Lane(f"memory:{lane.label}", lane.label, "memory", (Row("", MemoryRow(lane)),)) for lane in lanes]


def counter_rows(table: pl.DataFrame) -> list[Lane]:
    """A lane per counter series of :func:`tracetui.views.counters.counter_table` (its level after
    each sample, from 0 or its lowest value to its highest), labelled as Perfetto names its tracks,
    ``<name> <series>`` (after the process when several hold counters)."""
    lanes = []
    several = table["pid"].n_unique() > 1
    for (pid, name, series), rows in table.partition_by(
        "pid", "name", "series", as_dict=True, maintain_order=True
    ).items():
        values = rows["value"]
        floor = min(0.0, float(values.min()))  # type: ignore[arg-type]
        top = float(values.max())  # type: ignore[arg-type]
        scale = top if top > floor else floor + 1.0  # a flat counter: its floor, drawn low
        label = f"{name} {series}"
        legend = f"{label} {_number(floor)}–{_number(top)}"
        row = CounterRow(rows["ts_ns"], values, floor, scale, legend)
        lanes.append(
            Lane(
                f"counter:{pid}:{name}:{series}",
                f"{pid} {label}" if several else label,
                "counter",
                (Row("", row),),
            )
        )
    return lanes


def _number(value: float) -> str:
    return f"{value:.4g}"


class TimelineModel:
    """A trace's lanes (and any handed in), drawn over any window."""

    def __init__(self, trace: Trace, index: EventIndex) -> None:
        self.trace = trace
        self.index = index
        self.bounds = (index.origin, index.end)
        self.lanes: list[Lane] = trace_lanes(trace, index) + counter_rows(counter_table(trace))
        self._drawn: OrderedDict[tuple[object, ...], DrawnRow] = OrderedDict()
        self._slots: dict[tuple[str, str, str], int] = {}
        self._names: dict[tuple[str, str], str] = {}

    def set_lanes(self, kind: str, lanes: Iterable[Lane]) -> None:
        """Replace the lanes of ``kind`` (memory once read, a run's ranks, lanes from outside)."""
        self.lanes = [lane for lane in self.lanes if lane.kind != kind] + list(lanes)

    def lane(self, key: str) -> Lane | None:
        return next((lane for lane in self.lanes if lane.key == key), None)

    # ---- drawing -------------------------------------------------------------------------------
    def draw(self, row: Row, window: Window, cells: int, mode: str = "category") -> DrawnRow:
        """Row ``row`` over ``window`` in ``cells`` cells, coloured by ``mode``."""
        key = (id(row), window.start_ns, window.end_ns, cells, mode)
        found = self._drawn.get(key)
        if found is not None:
            self._drawn.move_to_end(key)
            return found
        edges = win.edges(window, cells)
        source = row.source
        drawn = self._levels(source, edges) if row.levels else self._intervals(source, edges, mode)  # type: ignore[arg-type]
        self._drawn[key] = drawn
        if len(self._drawn) > CACHED_ROWS:
            self._drawn.popitem(last=False)
        return drawn

    def _levels(self, source: LevelSource, edges: list[int]) -> DrawnRow:
        cells = len(edges) - 1
        glyphs, slots = [], []
        for fraction, peak in zip(source.levels(edges), source.marks(edges), strict=True):
            if peak:
                glyphs.append(PEAK_GLYPH)
                slots.append(PEAK)
            elif fraction is None:
                glyphs.append(" ")
                slots.append(EMPTY)
            elif source.quiet:  # tiny beside the other lanes: a faint line where anything is held
                glyphs.append(BARS[1])
                slots.append(FAINT)
            else:
                glyphs.append(BARS[max(1, min(8, round(fraction * 8)))])
                slots.append(LEVEL)
        return DrawnRow("".join(glyphs), tuple(slots), (False,) * cells, (False,) * cells, (None,) * cells)

    def _intervals(self, source: IntervalSource, edges: list[int], mode: str) -> DrawnRow:
        cells = len(edges) - 1
        coverage = source.coverage(edges)
        tops = sorted({ref for ref in coverage.top if ref is not None})
        described = dict(zip(tops, source.describe(tops), strict=True))
        glyphs, slots, inverse, alt = [], [], [], []
        for c in range(cells):
            char, flipped = glyph(
                edges[c], edges[c + 1], coverage.busy[c], coverage.first[c], coverage.last[c]
            )
            ref = coverage.top[c]
            glyphs.append(char)
            inverse.append(flipped)
            order = coverage.order[c]
            alt.append(order is not None and order % 2 == 1)
            slots.append(EMPTY if ref is None else self._slot(mode, *described[ref]))
        labels = self._labels(source, tops, described, coverage.top, edges)
        return DrawnRow(
            "".join(glyphs), tuple(slots), tuple(inverse), tuple(alt), tuple(coverage.top), labels
        )

    def _slot(self, mode: str, category: str, name: str) -> int:
        key = (mode, category, name)
        found = self._slots.get(key)
        if found is None:
            found = self._slots[key] = colour_slot(mode, category, name)
        return found

    def _labels(
        self,
        source: IntervalSource,
        tops: list[int],
        described: dict[int, tuple[str, str]],
        top: list[int | None],
        edges: list[int],
    ) -> tuple[tuple[int, int, str], ...]:
        """Labels over the events that fully cover :data:`LABEL_MIN` cells or more (and are on top there)."""
        cells = len(edges) - 1
        counts: dict[int, int] = {}
        for ref in top:
            if ref is not None:
                counts[ref] = counts.get(ref, 0) + 1
        wide = [ref for ref in tops if counts[ref] >= LABEL_MIN]
        labels = []
        window = Window(edges[0], edges[-1])
        for ref, (start, end) in zip(wide, source.extents(wide), strict=True):
            first = max(0, win.cell_of(window, cells, max(start, edges[0])))
            last = min(cells - 1, win.cell_of(window, cells, min(end, edges[-1]) - 1))
            if edges[first] < start:
                first += 1  # the event starts inside its first cell: that cell keeps its edge
            if edges[last + 1] > max(end, start + 1):
                last -= 1
            while first <= last and top[first] != ref:
                first += 1
            run = first
            while run <= last and top[run] == ref:
                run += 1
            if run - first >= LABEL_MIN:
                labels.append((first, run - first, self._shown(*described[ref])))
        return tuple(labels)

    def _shown(self, category: str, name: str) -> str:
        key = (category, name)
        found = self._names.get(key)
        if found is None:
            found = self._names[key] = shown_name(category, name)
        return found

    # ---- marks: a selection, its flows, a critical path -------------------------------------------
    def positions(self, event_ids: Sequence[int]) -> pl.Series:
        """Positions in the events table of ``event_ids`` (those that are events)."""
        ids = self.trace.column("events", "id")
        wanted = pl.Series(sorted(set(event_ids)), dtype=pl.UInt32)
        at = ids.search_sorted(wanted, side="left").cast(pl.Int64)
        found = at < len(ids)
        at = at.filter(found).cast(pl.UInt32)
        return at.filter(ids[at] == wanted.filter(found))  # ids[at]: a direct gather (see TraceRow.events)

    def marks(self, event_ids: Sequence[int]) -> Marks:
        """Where the events ``event_ids`` are drawn: per row source, their references."""
        by_source: dict[int, list[int]] = {}
        if not event_ids:
            return Marks(by_source, frozenset())
        positions = self.positions(event_ids)
        keys = rows_of(self.trace, positions)
        wanted: dict[tuple[int, int], list[int]] = {}
        for ref, track, sub in keys.iter_rows():
            wanted.setdefault((track, sub), []).append(ref)
        ids = frozenset(event_ids)
        for lane in self.lanes:
            for row in (*lane.summary, *lane.detail):
                source = row.source
                if isinstance(source, TraceRow):
                    refs = wanted.get((source.row.track, source.row.sub))
                    if refs:
                        by_source[id(source)] = refs
                elif isinstance(source, ArrayRow):
                    refs = [i for i, event in enumerate(source.ids) if event in ids]
                    if refs:
                        by_source[id(source)] = refs
        return Marks(by_source, ids)

    def marked_cells(self, row: Row, marks: Marks, window: Window, cells: int) -> list[tuple[int, int]]:
        """The cell ranges ``(first, last)`` of ``row`` where marked events lie."""
        refs = marks.refs.get(id(row.source))
        if not refs or row.levels:
            return []
        source: IntervalSource = row.source  # type: ignore[assignment]
        result = []
        for start, end in source.extents(refs):
            if start < window.end_ns and end > window.start_ns:
                first = win.cell_of(window, cells, max(start, window.start_ns))
                last = win.cell_of(window, cells, min(end, window.end_ns) - 1)
                result.append((first, last))
        return result

    # ---- flows ------------------------------------------------------------------------------------
    def linked(self, event_id: int) -> list[int]:
        """What an event is linked to across lanes: GPU work → its runtime call and op; a runtime call
        → the GPU work it launched and its op; any other CPU event → the calls below it and the GPU
        work they launched (at most :data:`MAX_LINKED`)."""
        columns = ("id", "cat", "launch_id", "launch_op_id", "op_id", "pos", "end_pos", "track")
        events = self.trace.columns_of("events", *columns)
        found = self.positions([event_id])
        if not len(found):
            return []
        me = events.row(int(found[0]), named=True)
        category = str(me["cat"])
        if category in GPU_KIND:
            return [i for i in (me["launch_id"], me["launch_op_id"]) if i is not None]
        if category in LAUNCH_CALLS:
            launched = events.filter(pl.col("launch_id") == event_id)["id"].head(MAX_LINKED).to_list()
            return launched + ([me["op_id"]] if me["op_id"] is not None else [])
        if me["pos"] is None:
            return []
        calls = events.filter(
            (pl.col("pos") >= me["pos"]) & (pl.col("pos") < me["end_pos"]) & pl.col("cat").is_in(LAUNCH_CALLS)
        )["id"]
        if calls.is_empty():
            return []
        gpu = events.filter(pl.col("cat").is_in(GPU_WORK) & pl.col("launch_id").is_in(calls.implode()))["id"]
        return [*calls.head(MAX_LINKED).to_list(), *gpu.head(MAX_LINKED).to_list()]

    # ---- windows ----------------------------------------------------------------------------------
    def whole(self, cells: int) -> Window:
        return win.whole(self.bounds, cells)


@dataclass(frozen=True)
class Marks:
    """A set of events to mark (``ids``) and, per row source (by ``id()``), their references."""

    refs: dict[int, list[int]]
    ids: frozenset[int]

    def __bool__(self) -> bool:
        return bool(self.ids)


NO_MARKS = Marks({}, frozenset())


def timeline_model(trace: Trace) -> TimelineModel:
    """The trace's timeline (its index read from the trace's parts, else built and kept)."""
    return TimelineModel(trace, index_of(trace))


def window_for(trace: Trace, step_id: int | None) -> Window:
    """The step's time range (GPU work it launched included), else the whole trace."""
    if step_id is not None:
        events = trace.columns_of("events", "cat", "name", "step_id", "start_ns", "end_ns", "dur")
        step = events.row(trace.row(step_id), named=True)
        gpu = events.filter(pl.col("cat").is_in(list(GPU_KIND)) & (pl.col("step_id") == step_id))
        end = max(step["end_ns"], gpu["end_ns"].max() or step["end_ns"])  # type: ignore[type-var]
        return Window(step["start_ns"], int(end), step["name"], step["dur"])
    times = trace.columns_of("events", "start_ns", "end_ns")
    start = times["start_ns"].min()
    end = times["end_ns"].max()
    return Window(int(start or 0), int(end or 0), "whole trace")  # type: ignore[arg-type]
