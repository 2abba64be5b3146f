"""Every drawn cell of the timeline against a plain scan of the events, for random windows: drawn from
the events and from the pyramid, on a real trace and on any intervals (overlapping, nested, empty)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import pairwise

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracetui
from tests.app.conftest import fixture
from tracetui.trace import Trace
from tracetui.views.timeline import index as ix
from tracetui.views.timeline import lanes as lane_ops
from tracetui.views.timeline import window as win
from tracetui.views.timeline.cells import Coverage, Events, empty, from_arrays, from_events, from_level
from tracetui.views.timeline.lanes import ArrayRow, TraceRow
from tracetui.views.timeline.model import TimelineModel
from tracetui.views.timeline.window import Window

TRAIN = "mlp_train_tbhandler_stack_memory.pt.trace"


@pytest.fixture(scope="module")
def small_index() -> Iterator[None]:
    """Pyramids and long events on rows of a handful of events, and a depth cap that makes rows
    of nested (overlapping) events: what the 1 GB trace has, on a fixture."""
    patch = pytest.MonkeyPatch()
    patch.setattr(ix, "PYRAMID_MIN", 8)
    patch.setattr(ix, "BIN_EVENTS", 2)
    patch.setattr(ix, "LONG_SHARE", 8)
    patch.setattr(ix, "MAX_DEPTH_ROWS", 4)
    yield
    patch.undo()


@pytest.fixture(scope="module")
def train(small_index: None) -> tuple[Trace, TimelineModel]:
    trace = tracetui.load(fixture(TRAIN))
    return trace, TimelineModel(trace, ix.build(trace))


def scan(trace: Trace, track: int, sub: int) -> list[tuple[int, int]]:
    """The row's events, read straight from the events table: ``(start, max(end, start + 1))``."""
    events = trace.events.with_row_index("row")
    keys = (
        ix.row_keys(trace, events.lazy())
        .collect()
        .filter((pl.col("track") == track) & (pl.col("sub") == sub))
    )
    rows = events.join(keys.select("row"), on="row", how="semi")
    return [(s, max(e, s + 1)) for s, e in rows.select("start_ns", "end_ns").iter_rows()]


def occupied(events: list[tuple[int, int]], edges: list[int]) -> list[bool]:
    return [any(s < hi and e > lo for s, e in events) for lo, hi in pairwise(edges)]


windows = st.tuples(st.floats(0, 1), st.floats(0, 1), st.integers(1, 300))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(window=windows)
def test_each_cell_is_drawn_where_and_only_where_an_event_lies(
    train: tuple[Trace, TimelineModel], window: tuple[float, float, int]
) -> None:
    trace, model = train
    a, b, cells = window
    low, high = model.bounds
    span = high - low
    start = low + int(min(a, b) * span)
    length = max(cells, int(abs(a - b) ** 3 * span))  # cubed: as often deep zooms as wide windows
    shown = win.clamp(Window(start, start + length), model.bounds, cells)
    edges = win.edges(shown, cells)
    used_levels = 0
    for lane in model.lanes:
        for row in (*lane.summary, *lane.detail):
            source = row.source
            assert isinstance(source, TraceRow)
            drawn = model.draw(row, shown, cells)
            truth = occupied(scan(trace, source.row.track, source.row.sub), edges)
            assert [g != " " for g in drawn.glyphs] == truth, (lane.label, row.label, shown)
            assert [r is not None for r in drawn.refs] == truth
            used_levels += source.row.level_for(shown.span // cells) is not None
    assert used_levels >= 0


def test_the_fixture_draws_from_pyramids_and_long_events(train: tuple[Trace, TimelineModel]) -> None:
    """What the property test above goes through: rows drawn from a level, rows with long events."""
    _, model = train
    rows = [row.source.row for lane in model.lanes for row in (*lane.summary, *lane.detail)]  # type: ignore[union-attr]
    spans = [model.whole(cells).span // cells for cells in (4, 12, 40)]
    assert sum(r.level_for(span) is not None for r in rows for span in spans) > 10
    assert any(len(r.long_rows) for r in rows)


intervals = st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 400)), min_size=0, max_size=60)


@settings(max_examples=150, deadline=None)
@given(events=intervals, a=st.integers(-100, 5100), length=st.integers(1, 6000), cells=st.integers(1, 80))
def test_cells_of_any_intervals_overlapping_or_empty(
    events: list[tuple[int, int]], a: int, length: int, cells: int
) -> None:
    """Overlapping, nested, touching and zero-length intervals: occupancy, first and last covered ns
    exact; the event on top lies in its cell."""
    events = sorted(events)
    row = ArrayRow(
        [s for s, _ in events], [s + d for s, d in events], ["kernel"] * len(events), ["k"] * len(events)
    )
    length = max(length, cells)
    edges = win.edges(Window(a, a + length), cells)
    coverage = row.coverage(edges)
    spans = [(s, max(s + d, s + 1)) for s, d in events]
    assert coverage.occupied == occupied(spans, edges)
    for c, (lo, hi) in enumerate(pairwise(edges)):
        inside = [(max(s, lo), min(e, hi)) for s, e in spans if s < hi and e > lo]
        if inside:
            assert coverage.first[c] == min(x for x, _ in inside)
            assert coverage.last[c] == max(y for _, y in inside)
            top = coverage.top[c]
            assert top is not None and spans[top][0] < hi and spans[top][1] > lo


def pyramid_of(events: list[tuple[int, int]]) -> tuple[pl.Series, pl.Series, tuple[ix.Level, ...]]:
    """The starts, ends (at least 1 ns long) and pyramid levels of ``(start, duration)`` events."""
    events = sorted(events)
    starts = pl.Series([s for s, _ in events], dtype=pl.Int64)
    ends = pl.Series([s + max(d, 1) for s, d in events], dtype=pl.Int64)
    return starts, ends, ix._pyramid(starts, ends, pl.int_range(0, len(events), dtype=pl.UInt32, eager=True))


@settings(max_examples=150, deadline=None)
@given(events=intervals, a=st.integers(-100, 5100), length=st.integers(1, 6000), cells=st.integers(1, 60))
def test_a_pyramid_level_draws_the_same_cells(
    events: list[tuple[int, int]], a: int, length: int, cells: int
) -> None:
    """Any level at most half a cell wide marks exactly the cells the events do."""
    if not events:
        return
    starts, ends, levels = pyramid_of(events)
    length = max(length, cells)
    edges = win.edges(Window(a, a + length), cells)
    spans = list(zip(starts.to_list(), ends.to_list(), strict=True))
    truth = occupied(spans, edges)
    for level in levels:
        if (2 << level.shift) <= length // cells:
            coverage = from_level(level, 0, edges)
            assert coverage.occupied == truth, level.shift
            for c, ref in enumerate(coverage.top):
                if ref is not None:
                    s, e = spans[ref]
                    assert s < edges[c + 1] + (1 << level.shift) and e > edges[c] - (1 << level.shift)


@settings(max_examples=200, deadline=None)
@given(events=intervals, a=st.integers(-100, 5100), length=st.integers(1, 6000), cells=st.integers(1, 80))
def test_arrays_draw_the_cells_the_lists_do(
    events: list[tuple[int, int]], a: int, length: int, cells: int
) -> None:
    """A window of many events is drawn from arrays: every cell (busy, extent, top, order) as from lists,
    instants (end = start) and events that end where others start included."""
    events = sorted(events)
    s = [start for start, _ in events]
    e = [start + d for start, d in events]
    refs = [7 * i + 3 for i in range(len(events))]
    orders = [None if i % 5 == 4 else i for i in range(len(events))]
    length = max(length, cells)
    edges = win.edges(Window(a, a + length), cells)
    lists = from_events(Events(s, e, refs, orders), edges)
    arrays = from_arrays(
        np.array(s, dtype=np.int64),
        np.array(e, dtype=np.int64),
        np.array(refs, dtype=np.int64),
        np.array([-1 if o is None else o for o in orders], dtype=np.int64),
        edges,
    )
    assert arrays == lists


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(window=windows)
def test_a_trace_row_draws_the_same_from_arrays(
    train: tuple[Trace, TimelineModel], window: tuple[float, float, int]
) -> None:
    """The rows of a trace (long events merged in by start) give the same cells whichever way a
    window's events are read."""
    _, model = train
    a, b, cells = window
    low, high = model.bounds
    start = low + int(min(a, b) * (high - low))
    shown = win.clamp(
        Window(start, start + max(cells, int(abs(a - b) ** 3 * (high - low)))), model.bounds, cells
    )
    edges = win.edges(shown, cells)
    patch = pytest.MonkeyPatch()
    try:
        for lane in model.lanes:
            for row in (*lane.summary, *lane.detail):
                source = row.source
                assert isinstance(source, TraceRow)
                patch.setattr(lane_ops, "VECTOR_MIN", 1 << 40)
                lists = source.coverage(edges)
                patch.setattr(lane_ops, "VECTOR_MIN", 0)
                assert source.coverage(edges) == lists, (lane.label, row.label, shown)
    finally:
        patch.undo()


def reference_from_level(level: ix.Level, origin: int, edges: list[int]) -> Coverage:
    """:func:`from_level` as it was, a cell at a time (bisects over the window's bins as lists):
    what the vectorised one must give, cell for cell."""
    cells = len(edges) - 1
    result = empty(cells)
    shift = level.shift
    rel = [t - origin for t in edges]
    first_bins = [t >> shift for t in rel[:-1]]
    last_bins = [(t - 1) >> shift for t in rel[1:]]
    low = bisect_left(level.bins, first_bins[0])
    high = bisect_right(level.bins, last_bins[-1])
    if high <= low:
        return result
    bins = level.bins.slice(low, high - low).to_list()
    firsts = level.first.slice(low, high - low).to_list()
    lasts = level.last.slice(low, high - low).to_list()
    tops = level.top.slice(low, high - low).to_list()
    busy = level.busy.slice(low, high - low + 1).to_list()
    n = len(bins)
    i = after = 0
    for c in range(cells):
        lo, hi = rel[c], rel[c + 1]
        fb, lb = first_bins[c], last_bins[c]
        i = bisect_left(bins, fb, i)
        after = bisect_right(bins, lb, after)
        a, b = i, after - 1
        if a <= b and bins[a] == fb and lasts[a] <= lo:
            a += 1  # the bin cut at the cell's start holds nothing of it
        if b >= a and bins[b] == lb and firsts[b] >= hi:
            b -= 1  # the bin cut at its end holds nothing of it
        if a > b or a >= n:
            continue
        first, last = max(firsts[a], lo), min(lasts[b], hi)
        result.busy[c] = max(1, min(busy[b + 1] - busy[a], last - first, hi - lo))
        result.first[c], result.last[c] = first + origin, last + origin
        k = bisect_left(bins, ((lo + hi) // 2) >> shift, a, b + 1)
        result.top[c] = tops[k if k <= b else a]
    return result


@settings(max_examples=150, deadline=None)
@given(
    events=intervals,
    a=st.integers(-100, 5100),
    length=st.integers(1, 6000),
    cells=st.integers(1, 60),
    origin=st.integers(-50, 50),
)
def test_a_level_draws_cell_for_cell_as_the_reference(
    events: list[tuple[int, int]], a: int, length: int, cells: int, origin: int
) -> None:
    """Every level (fine enough or not), any window, any origin: the same busy, extent and top."""
    if not events:
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ix, "BIN_EVENTS", 1)  # the finest level as fine as the events: many bins a cell
        _, _, levels = pyramid_of(events)
    edges = win.edges(Window(a, a + max(length, cells)), cells)
    for level in levels:
        assert from_level(level, origin, edges) == reference_from_level(level, origin, edges), level.shift
