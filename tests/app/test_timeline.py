"""Pilot tests of the timeline's keys and mouse: zoom, pan, fit, colour, the lanes (expand, hide, pin,
move), selecting an event (its details, the tree cursor, its flows), a range and its table (and its
export), and ``tracetui render --view timeline --window --lanes``."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from textual import events
from textual.pilot import Pilot

from tests.app.conftest import fixture, goto, settle, tree_of
from tests.app.test_saved_views_and_exports import render
from tracetui import formatting as fmt
from tracetui.app.app import TraceApp
from tracetui.app.screens.explorer import ExplorerScreen
from tracetui.app.widgets.range_panel import RangePanel
from tracetui.app.widgets.timeline import LABEL_WIDTH, Timeline
from tracetui.insight.critical_path import pieces, step_paths
from tracetui.views.timeline.area import area

TRAIN = fixture("mlp_train_tbhandler_stack_memory.pt.trace")
SIZE = (140, 40)


async def full(pilot: Pilot[object]) -> Timeline:
    """The timeline full screen, focused, over the whole trace."""
    await settle(pilot)
    await pilot.press("v", "0")
    await settle(pilot)
    timeline = pilot.app.screen.query_one(Timeline)
    assert timeline.has_focus and timeline.model is not None
    return timeline


async def test_v_shows_the_timeline_full_screen_then_hides_it_then_brings_it_back() -> None:
    app = TraceApp(TRAIN)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        timeline = screen.query_one(Timeline)
        assert timeline.display and not timeline.has_focus and tree_of(app).has_focus
        await pilot.press("v")
        assert screen.has_class("-timeline-full") and timeline.has_focus
        assert not screen.query_one("#tree").display and screen.query_one("#details-pane").display
        await pilot.press("v")
        assert not timeline.display and tree_of(app).has_focus
        await pilot.press("v")
        assert timeline.display and not screen.has_class("-timeline-full")


async def test_zoom_pan_and_fit_keys() -> None:
    app = TraceApp(TRAIN)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await full(pilot)
        assert timeline.model is not None and timeline.window is not None
        low, high = timeline.model.bounds
        whole = timeline.window
        assert (whole.start_ns, whole.end_ns) == (low, high) and whole.title == "whole trace"
        await pilot.press("w")
        assert timeline.window.span == round((high - low) * 0.5)
        await pilot.press("s")
        assert (timeline.window.start_ns, timeline.window.end_ns) == (low, high)
        for _ in range(40):
            await pilot.press("w")
        assert timeline.window.span == timeline.cells  # 1 ns per column, no further
        assert "1 ns/col" in "".join(s.text for s in timeline.render_line(1))
        before = timeline.window
        await pilot.press("d")
        assert timeline.window.start_ns == before.start_ns + before.span // 4
        await pilot.press("a", "a")
        assert timeline.window.start_ns == before.start_ns - before.span // 4
        await pilot.press("0")
        assert (timeline.window.start_ns, timeline.window.end_ns) == (low, high)
        for _ in range(8):
            await pilot.press("a")
        assert timeline.window.start_ns == low  # never before the trace
        assert isinstance(app.screen, ExplorerScreen) and not app.screen._following


async def test_enter_selects_the_event_under_the_cursor_with_its_flows_and_f_fits_it() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=SIZE) as pilot:
        timeline = await full(pilot)
        model = timeline.model
        assert model is not None and timeline.window is not None
        kernel = model.trace.events.filter(pl.col("cat") == "kernel").row(0, named=True)
        gpu = next(i for i, row in enumerate(timeline.rows) if row.lane.kind == "gpu")
        timeline.row_cursor = gpu
        timeline.cursor_ns = (kernel["start_ns"] + kernel["end_ns"]) // 2
        await pilot.press("f")  # nothing selected in the timeline: the tree cursor's node
        await pilot.press("enter")
        await settle(pilot)
        chosen = timeline.selected
        assert chosen is not None and tree_of(app).cursor_node.event_id == chosen
        assert timeline.selection.ids == {chosen}
        row = model.trace.event(chosen)
        assert {row["launch_id"], row["launch_op_id"]} <= timeline.linked.ids  # runtime call and op
        details = str(app.screen.query_one("#details").render())
        assert "GPU kernel" in details
        await pilot.press("f")  # the kernel with its launch call and op
        span = timeline.window
        call = model.trace.event(row["launch_id"])
        assert span.start_ns < min(call["start_ns"], row["start_ns"]) and row["end_ns"] < span.end_ns
        reach = max(row["end_ns"], call["end_ns"]) - min(
            row["start_ns"], model.trace.event(row["launch_op_id"])["start_ns"]
        )
        assert span.span <= reach * 1.2 + timeline.cells
        await goto(pilot, "aten::linear")  # an op: the calls below it and the kernels they launched
        linked = timeline.linked.ids
        launched = model.trace.events.filter(pl.col("launch_op_id").is_not_null())
        op = tree_of(app).cursor_node.event_id
        assert op == timeline.selected
        assert any(model.trace.event(i)["cat"] == "kernel" for i in linked)
        assert set(launched.filter(pl.col("id").is_in(list(linked)))["launch_id"].to_list()) <= linked


async def test_colour_modes_cycle() -> None:
    app = TraceApp(TRAIN)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await full(pilot)
        assert timeline.model is not None and timeline.window is not None
        row = timeline.rows[0].row
        slots = {}
        for mode in ("category", "name", "family", "category"):
            assert timeline.mode == mode
            slots[mode] = timeline.model.draw(row, timeline.window, timeline.cells, mode).slots
            await pilot.press("c")
        assert len({s for s in slots["category"] if s >= 0}) < len({s for s in slots["name"] if s >= 0})


async def test_lanes_expand_hide_pin_and_move() -> None:
    app = TraceApp(TRAIN)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await full(pilot)
        labels = [row.lane.label for row in timeline.rows]
        assert labels[:2] == ["CPU python3", "CPU pt_autograd_0"] and "CPU PyTorch Profiler" not in labels
        rows = len(timeline.rows)
        await pilot.press("space")  # the main thread: a row per depth
        python3 = timeline.rows[0].lane
        assert len(timeline.rows) == rows - 1 + len(python3.detail)
        await pilot.press("space", "down", "h")  # collapsed again; the autograd thread hidden
        assert [row.lane.label for row in timeline.rows] == [labels[0], *labels[2:]]
        await pilot.press("H")
        assert "CPU PyTorch Profiler" in [row.lane.label for row in timeline.rows]  # every lane
        last = len(timeline.rows) - 1
        timeline.row_cursor = last
        pinned = timeline.rows[last].lane.label
        await pilot.press("p")
        assert timeline.rows[0].lane.label == pinned and timeline.rows[0].pinned
        assert timeline.row_cursor == 0
        await pilot.press("down", "K")  # the first unpinned lane cannot go above the pinned ones
        assert timeline.rows[1].lane.label == labels[0]
        await pilot.press("J")
        assert [row.lane.label for row in timeline.rows if row.first][1:3] == [labels[1], labels[0]]


async def test_the_cursor_lanes_depths_are_drawn_before_space_asks() -> None:
    """Once a frame is out, the cursor lane's depth rows are in the model's cache (this window, width
    and colours): Space draws none of them anew, and what it shows is what a cold draw gives."""
    app = TraceApp(TRAIN)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await full(pilot)
        model, window = timeline.model, timeline.window
        assert model is not None and window is not None

        def key(row: object) -> tuple[object, ...]:
            return (id(row), window.start_ns, window.end_ns, timeline.cells, timeline.mode)

        for press in ("down", "c"):  # the autograd thread, then drawn in the second colour mode
            await pilot.press(press)
            await settle(pilot)
            lane = timeline.rows[timeline.row_cursor].lane
            assert len(lane.detail) > 1 and all(key(row) in model._drawn for row in lane.detail)
        misses: list[object] = []
        draw = model.draw

        def counted(row: object, *args: object) -> object:
            if key(row) not in model._drawn:
                misses.append(row)
            return draw(row, *args)  # type: ignore[arg-type]

        model.draw = counted  # type: ignore[assignment,method-assign]
        await pilot.press("space")
        await settle(pilot)
        assert [row.row for row in timeline.rows if row.lane is lane] == list(lane.detail)
        assert not [row for row in misses if row in lane.detail]
        ahead = {id(row): model._drawn[key(row)] for row in lane.detail}
        model._drawn.clear()
        assert all(draw(row, window, timeline.cells, timeline.mode) == ahead[id(row)] for row in lane.detail)


async def test_a_range_shows_its_table_and_exports_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = TraceApp(TRAIN)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await full(pilot)
        assert timeline.window is not None
        timeline.cursor_ns = timeline.window.start_ns + timeline.window.span // 4
        await pilot.press("b", *["right"] * 40, "e")
        await settle(pilot)
        assert timeline.range is not None
        panel = app.screen.query_one(RangePanel)
        assert panel.display and panel.area is not None
        tracks = {int(r.lane.key.split(":")[1]) for r in timeline.rows if r.lane.kind in ("cpu", "gpu")}
        expected = area(app.screen.trace, *timeline.range, tracks)
        assert panel.table.frame.equals(expected.table.frame) and panel.area.events == expected.events > 0
        await pilot.press("E")
        await settle(pilot)
        dialog = app.screen
        name = dialog.query_one("#export-name")
        assert name.value.endswith("_range.csv")  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
        written = next(tmp_path.glob("*_range.csv"))
        assert pl.read_csv(written).height == expected.table.frame.height
        await pilot.press("escape")  # the range cleared
        assert timeline.range is None and not panel.display


async def test_mouse_click_drag_ctrl_drag_and_wheel() -> None:
    app = TraceApp(TRAIN)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await full(pilot)
        assert timeline.window is not None
        top = timeline.content_region.y - timeline.region.y
        whole = timeline.window
        ruler = top + 1
        await pilot.mouse_down(timeline, offset=(LABEL_WIDTH + 10, ruler))  # on the ruler: a range
        await pilot.hover(timeline, offset=(LABEL_WIDTH + 30, ruler))
        await pilot.mouse_up(timeline, offset=(LABEL_WIDTH + 30, ruler))
        await settle(pilot)
        assert timeline.range is not None and app.screen.query_one(RangePanel).display
        assert timeline.window == whole
        lane = top + timeline.header_rows
        await pilot.mouse_down(timeline, offset=(LABEL_WIDTH + 50, lane))  # on the lanes: a pan
        await pilot.hover(timeline, offset=(LABEL_WIDTH + 40, lane))
        await pilot.mouse_up(timeline, offset=(LABEL_WIDTH + 40, lane))
        assert (timeline.window.start_ns, timeline.window.end_ns) == (
            whole.start_ns,
            whole.end_ns,
        )  # nowhere to go
        await pilot._post_mouse_events([events.MouseScrollUp], timeline, offset=(LABEL_WIDTH + 20, lane))
        zoomed = timeline.window
        assert zoomed.span == round(whole.span * 0.5)
        await pilot.mouse_down(timeline, offset=(LABEL_WIDTH + 50, lane))
        await pilot.hover(timeline, offset=(LABEL_WIDTH + 40, lane))
        await pilot.mouse_up(timeline, offset=(LABEL_WIDTH + 40, lane))
        assert timeline.window.start_ns == zoomed.start_ns + 10 * zoomed.span // timeline.cells
        before = timeline.window
        await pilot.mouse_down(timeline, offset=(LABEL_WIDTH + 10, lane), control=True)  # zoom to it
        await pilot.hover(timeline, offset=(LABEL_WIDTH + 19, lane))
        await pilot.mouse_up(timeline, offset=(LABEL_WIDTH + 19, lane))
        cells = timeline.cells
        assert (
            timeline.window.span == max(cells, 10 * before.span // cells + 1)
            or abs(timeline.window.span - 10 * before.span / cells) <= 2
        )


def test_render_a_window_of_chosen_lanes_is_byte_identical(tmp_path: Path) -> None:
    trace = str(TRAIN)
    args = [
        trace,
        "--view",
        "timeline",
        "--window",
        "1.5:2.75",
        "--lanes",
        "GPU*,CPU python3+",
        "--size",
        "120x30",
    ]
    first = render([*args, "-o", "a.svg"], tmp_path)
    second = render([*args, "-o", "b.svg"], tmp_path)
    assert first.returncode == second.returncode == 0, first.stderr
    svg = (tmp_path / "a.svg").read_bytes()
    assert svg == (tmp_path / "b.svg").read_bytes()
    text = svg.decode()
    assert "GPU&#160;0&#160;s7" in text and "depth&#160;1" in text and "pt_autograd" not in text
    assert "1.500&#160;ms&#160;→&#160;2.750&#160;ms" in text


def test_render_timeline_errors_are_one_line(tmp_path: Path) -> None:
    trace = str(TRAIN)
    for args, message in [
        (["--window", "3:1"], "is not START_MS:END_MS"),
        (["--window", "100:200"], "outside the trace"),
        (["--lanes", "TPU*"], "no lane matches 'TPU*'"),
    ]:
        done = render([trace, "--view", "timeline", *args, "-o", "x.svg"], tmp_path)
        assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    done = render([trace, "--window", "1:2", "-o", "x.svg"], tmp_path)
    assert done.returncode == 2 and "--view timeline" in done.stderr


async def test_r_marks_the_steps_critical_paths_on_their_lanes_and_again_clears_them() -> None:
    app = TraceApp(TRAIN)
    async with app.run_test(size=SIZE) as pilot:
        timeline = await full(pilot)
        assert not timeline.marked.ids
        await pilot.press("r")
        await settle(pilot)
        paths = step_paths(app.screen.trace)  # type: ignore[attr-defined]
        on_path = set(pieces(app.screen.trace, paths)["id"].drop_nulls().to_list())
        assert on_path and timeline.marked.ids == on_path
        steps = paths.spans.height
        header = "".join(s.text for s in timeline.render_line(0))
        length = fmt.duration(float(paths.spans["length_us"].sum()))
        assert f"critical path: {steps} steps, {length}" in header
        assert timeline.model is not None and timeline.window is not None
        kernels = [r for r in timeline.rows if r.lane.kind == "gpu" and r.first]
        marked = [
            timeline.model.marked_cells(r.row, timeline.marked, timeline.window, timeline.cells)
            for r in kernels
        ]
        assert any(marked)  # the path's GPU work is marked on its stream
        lines = [timeline.render_line(timeline.header_rows + i) for i in range(len(timeline.rows))]
        colours = {
            str(seg.style.color.name) for line in lines for seg in line if seg.style and seg.style.color
        }
        assert "#ffaf00" in colours
        await pilot.press("r")
        await settle(pilot)
        assert not timeline.marked.ids and "critical path" not in "".join(
            s.text for s in timeline.render_line(0)
        )


async def test_r_without_steps_or_annotations_says_there_is_no_critical_path() -> None:
    app = TraceApp(fixture("cpu_only"))
    async with app.run_test(size=SIZE) as pilot:
        timeline = await full(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert not timeline.marked.ids
        assert any("no critical path" in str(n.message) for n in app._notifications)
