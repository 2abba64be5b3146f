"""The timeline's view model: glyphs, lanes, the kept index, the layout, the window's keys, the flows."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracetui
from tests.app.conftest import fixture
from tracetui import formatting as fmt
from tracetui.insight.critical_path import annotation_paths, pieces, step_paths
from tracetui.views.timeline import index as ix
from tracetui.views.timeline import window as win
from tracetui.views.timeline.area import area
from tracetui.views.timeline.cells import Events, from_events, glyph
from tracetui.views.timeline.critical import critical_path_overlay
from tracetui.views.timeline.lanes import Layout, move, select, shown_rows
from tracetui.views.timeline.model import TimelineModel, lane_label, window_for
from tracetui.views.timeline.window import Window
from tracetui.views.tree import TreeModel

TRAIN = "mlp_train_tbhandler_stack_memory.pt.trace"


def test_no_events_no_cells() -> None:
    coverage = from_events(Events([], [], [], []), [0, 10, 20])
    assert coverage.occupied == [False, False]


@pytest.mark.parametrize(
    ("cell", "busy", "first", "last", "expected"),
    [
        ((0, 8), 8, 0, 8, ("█", False)),
        ((0, 8), 3, 0, 3, ("▍", False)),  # from the left edge: three eighths
        ((0, 8), 3, 5, 8, ("▋", True)),  # up to the right edge: the five-eighths gap, inverse
        ((0, 8), 1, 3, 4, ("▁", False)),  # inside the cell: a bar of its share
        ((0, 800), 1, 300, 301, ("▁", False)),  # a 2 µs kernel in a 1 ms cell is still seen
        ((0, 8), 4, 0, 8, ("▄", False)),  # two pieces
        ((0, 8), 0, 0, 0, (" ", False)),
    ],
)
def test_glyphs(cell: tuple[int, int], busy: int, first: int, last: int, expected: tuple[str, bool]) -> None:
    assert glyph(*cell, busy, first, last) == expected


def test_lanes_of_a_training_step() -> None:
    trace = tracetui.load(fixture(TRAIN))
    model = TimelineModel(trace, ix.build(trace))
    assert [(lane.label, lane.kind) for lane in model.lanes] == [
        ("CPU python3", "cpu"),
        ("CPU pt_autograd_0", "cpu"),
        ("CPU PyTorch Profiler", "cpu"),
        ("GPU 0 s7", "gpu"),
        ("GPU 0 s13", "gpu"),
    ]
    python3 = model.lanes[0]
    assert len(python3.detail) > 5 and python3.detail[1].label == "depth 1"
    assert [row.label for row in model.lanes[3].detail] == ["", "annotations"]
    step = TreeModel(trace).step_ids[0]
    window = window_for(trace, step)
    assert window.title == "ProfilerStep#2"
    drawn = model.draw(model.lanes[3].summary[0], window, 100)
    assert 0 < sum(g != " " for g in drawn.glyphs) < 100  # idle gaps on the GPU are visible
    drawn = model.draw(python3.summary[0], window, 300)
    assert drawn.labels  # the outermost ops are wide enough to be named


def test_the_index_kept_with_the_trace_reads_back_equal() -> None:
    trace = tracetui.load(fixture(TRAIN))
    built = ix.build(trace)
    kept = ix.read(ix.write(built), trace)
    assert kept is not None and kept.rows.keys() == built.rows.keys()
    assert kept.order.equals(built.order)
    for key, row in built.rows.items():
        again = kept.rows[key]
        assert (again.offset, again.count, again.reach, list(again.skip)) == (
            row.offset,
            row.count,
            row.reach,
            list(row.skip),
        )
        assert again.long_rows.equals(row.long_rows) and len(again.levels) == len(row.levels)
        for a, b in zip(again.levels, row.levels, strict=True):
            assert (
                a.shift == b.shift and a.bins.equals(b.bins) and a.busy.equals(b.busy) and a.top.equals(b.top)
            )
    assert ix.read({"index.msgpack": b"junk"}, trace) is None  # never served: built again


def test_window_keys() -> None:
    bounds = (1_000, 1_000_000)
    whole = win.whole(bounds, 100)
    assert (whole.start_ns, whole.end_ns) == bounds
    zoomed = win.zoom(whole, 0.5, 1_000, bounds, 100)
    assert (
        zoomed.start_ns == 1_000 and zoomed.span == (1_000_000 - 1_000) // 2 + 1
    ) or zoomed.span == 499_500
    deep = whole
    for _ in range(40):
        deep = win.zoom(deep, 0.5, 500_000, bounds, 100)
    assert deep.span == 100  # one ns per column, no further
    assert deep.start_ns <= 500_000 < deep.end_ns
    out = win.zoom(deep, 1e9, 500_000, bounds, 100)
    assert (out.start_ns, out.end_ns) == bounds  # the whole trace, no further
    assert win.pan(win.pan(zoomed, -1, bounds, 100), -1, bounds, 100).start_ns == 1_000  # stops at the start
    edges = win.edges(Window(0, 10), 3)
    assert edges == [0, 3, 6, 10]
    assert [win.cell_of(Window(0, 10), 3, t) for t in (0, 2, 3, 9, 10, -1)] == [0, 0, 1, 2, 3, -1]


def test_the_ruler_counts_from_the_window_start_in_auto_units() -> None:
    assert win.ruler(Window(0, 100), 100).startswith("│+0" + " " * 17 + "│+20 ns")
    assert "+50 µs" in win.ruler(Window(7, 7 + 200_000), 60)
    assert "+0.5 s" in win.ruler(Window(0, 2_000_000_000), 60)
    assert fmt.span_ns(750) == "750 ns" and fmt.span_ns(3_260) == "3.26 µs" and fmt.span_ns(2.5e9) == "2.50 s"


def test_layout_hides_pins_moves_and_selects() -> None:
    trace = tracetui.load(fixture(TRAIN))
    model = TimelineModel(trace, ix.build(trace))
    keys = [lane.key for lane in model.lanes]
    layout = Layout()
    rows = shown_rows(model.lanes, layout)
    assert [r.lane.key for r in rows if r.first] == keys
    layout = Layout(pinned=(keys[3],), hidden=frozenset({keys[2]}), expanded=frozenset({keys[0]}))
    rows = shown_rows(model.lanes, layout)
    assert rows[0].lane.key == keys[3] and rows[0].pinned
    assert keys[2] not in {r.lane.key for r in rows}
    assert sum(r.lane.key == keys[0] for r in rows) == len(model.lanes[0].detail)
    moved = move(Layout(), model.lanes, keys[1], -1)
    assert [r.lane.key for r in shown_rows(model.lanes, moved) if r.first][:2] == [keys[1], keys[0]]
    chosen = select(model.lanes, "GPU*,CPU python3+")
    rows = shown_rows(model.lanes, chosen)
    assert [r.lane.label for r in rows if r.first] == ["GPU 0 s7", "GPU 0 s13", "CPU python3"]
    assert sum(r.lane.label == "CPU python3" for r in rows) == len(model.lanes[0].detail)
    with pytest.raises(ValueError, match="no lane matches 'TPU'"):
        select(model.lanes, "TPU")


def test_flows_of_an_op_a_call_and_a_kernel() -> None:
    trace = tracetui.load(fixture("mlp_eager"))
    model = TimelineModel(trace, ix.build(trace))
    events = trace.events
    kernel = events.filter(pl.col("cat") == "kernel").row(0, named=True)
    assert set(model.linked(kernel["id"])) == {kernel["launch_id"], kernel["launch_op_id"]}
    call = kernel["launch_id"]
    assert kernel["id"] in model.linked(call)
    op = events.filter(pl.col("name") == "aten::linear").row(0, named=True)
    linked = set(model.linked(op["id"]))
    launched = events.filter(pl.col("launch_id").is_not_null())
    below = events.filter(
        (pl.col("pos") >= op["pos"])
        & (pl.col("pos") < op["end_pos"])
        & pl.col("cat").is_in(["cuda_runtime", "cuda_driver"])
    )["id"].to_list()
    assert set(below) <= linked
    assert set(launched.filter(pl.col("launch_id").is_in(below))["id"].to_list()) <= linked
    marks = model.marks(sorted(linked))
    gpu_lane = next(lane for lane in model.lanes if lane.kind == "gpu")
    cells = model.marked_cells(gpu_lane.summary[0], marks, model.whole(200), 200)
    assert cells and all(0 <= a <= b < 200 for a, b in cells)


def test_lane_labels() -> None:
    assert lane_label("thread 472 (pt_autograd_0)", "424", "472", "cpu") == "CPU pt_autograd_0"
    assert lane_label(None, "424", "472", "cpu") == "CPU 472"
    assert lane_label("stream 7", "0", "7", "gpu") == "GPU 0 s7"


@pytest.fixture(scope="module")
def train_trace() -> tracetui.Trace:
    return tracetui.load(fixture(TRAIN))


@settings(max_examples=25, deadline=None)
@given(a=st.floats(-0.05, 1.05), b=st.floats(-0.05, 1.05), lanes=st.sets(st.integers(0, 4)))
def test_the_range_table_equals_a_filter_over_the_events(
    train_trace: tracetui.Trace, a: float, b: float, lanes: set[int]
) -> None:
    trace = train_trace
    low, high = int(trace.events["start_ns"].min()), int(trace.events["end_ns"].max())  # type: ignore[arg-type]
    lo = low + int(min(a, b) * (high - low))
    hi = max(lo + 1, low + int(max(a, b) * (high - low)))
    tracks = trace.tracks
    gpu_track = {
        (p, t): k
        for k, p, t, kind in tracks.select("track", "pid", "tid", "kind").iter_rows()
        if kind == "gpu"
    }
    expected: dict[tuple[str, str], list[float]] = {}
    rows = trace.events.iter_rows(named=True)
    clipped_of: dict[int, int] = {}
    kept = []
    for e in rows:
        track = e["track"] if e["track"] is not None else gpu_track.get((e["pid"], e["tid"]))
        if e["track"] is None and e["cat"] not in (
            "kernel",
            "gpu_memcpy",
            "gpu_memset",
            "cuda_sync",
            "gpu_user_annotation",
        ):
            continue
        if track is None or track not in lanes:
            continue
        if not (e["start_ns"] < hi and max(e["end_ns"], e["start_ns"] + 1) > lo):
            continue
        clipped = max(0, min(e["end_ns"], hi) - max(e["start_ns"], lo))
        clipped_of[e["id"]] = clipped
        kept.append((e, clipped))
    children: dict[int, int] = {}
    for e, clipped in kept:
        if e["track"] is not None and e["parent"] is not None:
            children[e["parent"]] = children.get(e["parent"], 0) + clipped
    for e, clipped in kept:
        on_gpu = e["track"] is None
        self_ns = clipped if on_gpu else max(0, clipped - children.get(e["id"], 0))
        work = e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")
        gpu_ns = (clipped if work else 0) if on_gpu else (e["gpu_us"] or 0) * 1000
        totals = expected.setdefault((e["name"], e["cat"]), [0, 0.0, 0.0, 0.0])
        totals[0] += 1
        totals[1] += clipped / 1000
        totals[2] += self_ns / 1000
        totals[3] += gpu_ns / 1000
    got = area(trace, lo, hi, lanes)
    table = {
        (r["name"], r["category"]): [r["count"], r["total_us"], r["self_us"], r["gpu_us"]]
        for r in got.table.frame.iter_rows(named=True)
    }
    assert table.keys() == expected.keys()
    for key, values in expected.items():
        assert table[key][0] == values[0]
        assert table[key][1:] == pytest.approx(values[1:], abs=1e-6)
    assert got.events == len(kept)


def test_the_range_table_of_the_whole_trace_agrees_with_the_ops_and_kernels_tables() -> None:
    """One number, one computation: over the whole trace the Range table's ops have the ops table's
    calls, CPU time and GPU time, its kernels the kernels table's calls and total time."""
    trace = tracetui.load(fixture("mlp_eager"))
    low, high = int(trace.events["start_ns"].min()), int(trace.events["end_ns"].max())  # type: ignore[arg-type]
    table = area(trace, low, high + 1).table.frame
    ops = table.filter(pl.col("category") == "cpu_op").join(trace.ops, on="name")
    assert ops.height == trace.ops.height
    assert (ops["count"] == ops["calls"]).all()
    assert ((ops["total_us"] - ops["cpu_total_us"]).abs() < 1e-6).all()
    assert ((ops["gpu_us_right"] - ops["gpu_us"]).abs() < 1e-6).all()
    kernels = table.filter(pl.col("category") == "kernel").join(
        trace.kernels.filter(pl.col("cat") == "kernel"), on="name"
    )
    assert kernels.height == trace.kernels.filter(pl.col("cat") == "kernel").height
    assert (kernels["count"] == kernels["calls"]).all()
    assert ((kernels["total_us_right"] - kernels["total_us"]).abs() < 1e-6).all()


@pytest.mark.parametrize(
    ("name", "kind", "legend"),
    [
        (TRAIN, "steps", "critical path: 2 steps, 5.47 ms"),
        ("synthetic_cudnn_conv", "steps", "critical path: 1 step, 900.0 µs"),
        ("mlp_train_eager_default", "annotations", "critical path: 3 annotations, 3.06 ms"),  # no steps
        ("cpu_only", None, ""),  # neither: nothing to mark
    ],
)
def test_the_critical_path_overlay_is_the_paths_events(name: str, kind: str | None, legend: str) -> None:
    trace = tracetui.load(fixture(name))
    ids, text = critical_path_overlay(trace)
    assert text == legend
    if kind is None:
        assert ids == []
        return
    paths = step_paths(trace) if kind == "steps" else annotation_paths(trace)
    assert ids == sorted(set(pieces(trace, paths)["id"].drop_nulls().to_list())) and ids
    assert set(ids) <= set(trace.events["id"].to_list())  # events of the trace, to mark on their lanes
