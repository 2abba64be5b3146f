"""Pilot tests of memory in the explorer: the timeline's memory lanes, the Memory table and where
its rows lead, ``m``, the details pane — and that they show the peak ``summary`` shows."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from click.testing import CliRunner
from textual.widgets import Static

from tests.app.conftest import fixture, goto, settle, tree_of
from tests.insight import memory_traces as mt
from tracetui import formatting as fmt
from tracetui.app.app import TraceApp
from tracetui.app.screens.tables import TablesScreen
from tracetui.app.widgets.table_view import TableView
from tracetui.app.widgets.timeline import PEAK, Timeline
from tracetui.cli import cli
from tracetui.insight.memory import NO_OP

MEMORY = fixture("mlp_train_tbhandler_stack_memory.pt.trace")
SIZE = (140, 44)


def summary_peak(path: Path) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["summary", str(path), "--json"], catch_exceptions=False)
    device: dict[str, object] = json.loads(result.output)["memory"]["devices"][0]
    return device


def timeline_text(app: TraceApp) -> list[str]:
    timeline = app.screen.query_one(Timeline)
    return ["".join(s.text for s in timeline.render_line(y)) for y in range(timeline.size.height)]


def details_text(app: TraceApp) -> str:
    return str(app.screen.query_one("#details", Static).content)


async def test_memory_lanes_follow_the_busy_lanes_and_mark_the_peak() -> None:
    peak = summary_peak(MEMORY)
    app = TraceApp(MEMORY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert [lane.label for lane in timeline.memory] == ["alloc cuda:0", "resv cuda:0"]
        allocated = timeline.memory[0]
        assert max(allocated.levels) == peak["peak_allocated_bytes"]
        assert timeline.size.height == 1 + len(timeline.lanes) + 2
        rows = timeline_text(app)
        assert "memory cuda:0 97.6 MiB–102.0 MiB" in rows[0]
        assert [row.split()[:2] for row in rows[-2:]] == [["alloc", "cuda:0"], ["resv", "cuda:0"]]
        assert PEAK not in "".join(rows)  # the cursor's step (3) is not the peak's
        await goto(pilot, "ProfilerStep#2")
        rows = timeline_text(app)
        assert rows[0].startswith(" ProfilerStep#2") and rows[-2].count(PEAK) == 1


async def test_the_memory_table_lists_every_event_and_enter_goes_to_its_op() -> None:
    app = TraceApp(MEMORY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablesScreen) and screen.active == "memory"
        spec = screen.tables["memory"]
        assert spec.frame.height == 72 and screen.query_one(TableView).columns[0].title == "time (ms)"
        assert "7 Memory (72)" in str(screen.query_one("#tables-tabs", Static).content)
        assert spec.frame["allocated"].max() == summary_peak(MEMORY)["peak_allocated_bytes"]
        first = spec.frame.row(0, named=True)
        await pilot.press("enter")
        await settle(pilot)
        cursor = tree_of(app).cursor_node
        assert cursor is not None and cursor.key == first["op_id"] and cursor.name == first["op"]


async def test_a_row_with_no_op_says_so(tmp_path: Path) -> None:
    app = TraceApp(mt.allocator_thread_trace(tmp_path / "allocator.json"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("7", "down", "enter")  # the second row: on the allocator's thread
        await settle(pilot)
        assert not isinstance(app.screen, TablesScreen)
        assert any("No op held this event" in str(n.message) for n in app._notifications)
        await pilot.press("m")
        await settle(pilot)
        assert any(f"outside any op ({NO_OP})" in str(n.message) for n in app._notifications)


async def test_m_goes_to_the_op_that_reached_the_peak() -> None:
    peak = summary_peak(MEMORY)
    app = TraceApp(MEMORY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("m")
        await settle(pilot)
        cursor = tree_of(app).cursor_node
        assert cursor is not None and cursor.name == peak["peak_op"] == "aten::mm"  # the summary's
        (message,) = [str(n.message) for n in app._notifications if "Memory peak" in str(n.message)]
        assert message.startswith(f"Memory peak on cuda:0: {fmt.size(peak['peak_allocated_bytes'])}")  # type: ignore[arg-type]
        assert PEAK in "".join(timeline_text(app))  # its step holds the peak
        details = details_text(app)
        assert "Memory" in details and "+1.0 MiB aten::mm" in " ".join(details.split())


async def test_details_list_an_ops_allocations_and_a_steps_levels() -> None:
    app = TraceApp(MEMORY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, "aten::mm")
        text = " ".join(details_text(app).split())
        assert "1 allocation (1.0 MiB), 0 frees (0 B), net +1.0 MiB" in text
        assert "+1.0 MiB aten::mm freed 195.8 µs later, outside any op" in text
        await goto(pilot, "ProfilerStep#2")
        text = " ".join(details_text(app).split())
        assert "cuda:0: start 97.6 MiB, peak 99.6 MiB, end 97.6 MiB (0 B)" in text
        assert "18 allocations" in text and "more (the Memory table, 7, lists every one)" in text


async def test_a_trace_without_memory_events_shows_none() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.screen.query_one(Timeline).memory == []
        assert "Memory" not in details_text(app).split("\n")
        await pilot.press("m")
        await settle(pilot)
        assert any("No memory events" in str(n.message) for n in app._notifications)
        await pilot.press("7")
        await settle(pilot)
        assert isinstance(app.screen, TablesScreen) and app.screen.tables["memory"].frame.height == 0


async def test_one_peak_on_every_surface() -> None:
    """The one-number rule: the summary (text and --json), the export, the Memory table, the
    timeline's lane and m all show the peak memory_of computes."""
    runner = CliRunner()
    device = summary_peak(MEMORY)
    peak = device["peak_allocated_bytes"]
    assert isinstance(peak, int)
    text = runner.invoke(cli, ["summary", str(MEMORY)], catch_exceptions=False).output
    assert f"peak {fmt.size(peak)} allocated" in text
    exported = runner.invoke(cli, ["export", str(MEMORY), "--table", "memory"], catch_exceptions=False).output
    assert pl.read_csv(exported.encode())["allocated"].max() == peak
    app = TraceApp(MEMORY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert max(timeline.memory[0].levels) == peak and timeline.memory[0].peak_ns is not None
        await pilot.press("7")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablesScreen)
        table = screen.tables["memory"].frame
        assert table["allocated"].max() == peak
        assert table.filter(table["allocated"] == peak)["id"][0] == device["peak_event_id"]
        await pilot.press("escape", "m")
        await settle(pilot)
        assert any(f"Memory peak on cuda:0: {fmt.size(peak)}" in str(n.message) for n in app._notifications)


async def test_the_cpu_lane_beside_a_gpu_is_drawn_faint() -> None:
    """Issue 37 item 5: the transformer sample's CPU lane (0–8 bytes) drew full blocks, the loudest
    lane beside the GPU's gigabyte."""
    from tracetui.sample_traces import default_trace

    app = TraceApp(default_trace().parent / "transformer_block_train_memory.json.gz")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lines = timeline_text(app)
        (cpu,) = [line for line in lines if line.lstrip().startswith("alloc cpu")]
        cells = cpu.split("alloc cpu", 1)[1].strip()
        assert cells and set(cells) <= {"·", "▁"} and "▁" in cells
        (gpu,) = [line for line in lines if line.lstrip().startswith("alloc cuda:0")]
        assert set(gpu.split("alloc cuda:0", 1)[1].strip()) - {"·", "▁"}  # drawn to its scale
        assert "cpu ≤ 8 B (faint)" in lines[0]
