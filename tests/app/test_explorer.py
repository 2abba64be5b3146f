"""Pilot tests: the tree as plain data after key presses, navigation, find, tables, filters, safety."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from textual.widgets import Static

from tests.app import synthetic
from tests.app.conftest import fixture, goto, settle, tree_of
from tests.as_data import tree_as_data, visible_labels
from tracetui.app.app import TraceApp
from tracetui.app.messages import Search
from tracetui.app.screens.error import ErrorScreen
from tracetui.app.screens.explorer import ExplorerScreen
from tracetui.app.screens.help import HelpScreen
from tracetui.app.screens.tables import TablesScreen
from tracetui.app.widgets.table_view import Column, TableView
from tracetui.app.widgets.timeline import LABEL_WIDTH, Timeline

LINEAR_CHAIN = [
    "aten::linear",
    "aten::matmul",
    "aten::mm",
    "cuLaunchKernelEx",
    "nvjet gemm bf16 256x128 coopA TNT",
]


def labels(items: list[dict[str, Any]]) -> list[str]:
    return [item["label"] for item in items]


def expanded_chain(items: list[dict[str, Any]]) -> list[str]:
    """Labels along the expanded path (the first expanded child at each level)."""
    chain = []
    while items:
        opened = [item for item in items if item["expanded"]]
        if not opened:
            return chain
        chain.append(opened[0]["label"])
        items = opened[0]["children"]
    return chain


async def test_hottest_chain_expanded_on_open() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        data = tree_as_data(tree)
        assert labels(data) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4", "outside steps"]
        assert [item["expanded"] for item in data] == [False, False, True, False]
        assert expanded_chain(data) == ["ProfilerStep#4", "mlp_fwd", *LINEAR_CHAIN[:-1]]
        assert tree.cursor_node is not None and tree.cursor_node.name == LINEAR_CHAIN[-1]
        mlp_fwd = data[2]["children"][0]
        assert labels(mlp_fwd["children"]) == [
            "aten::linear",
            "aten::gelu",
            "aten::linear",
            "aten::mul",
            "aten::linear",
        ]


async def test_the_first_cursor_stays_centred_through_resizes_until_it_moves() -> None:
    """Where the opening cursor sits depends on the final size only, whatever the layout's steps."""
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)

        def centred_top() -> int:
            visible = max(1, tree.scrollable_content_region.height - 1)
            return min(max(0, tree.cursor_row - visible // 2), round(tree.max_scroll_y))  # the end stops it

        for size in [(80, 24), (80, 27), (80, 25), (80, 29), (100, 30)]:
            await pilot.resize_terminal(*size)
            await settle(pilot)
            assert round(tree.scroll_offset.y) == centred_top(), size
        await pilot.press("up")
        await settle(pilot)
        top = round(tree.scroll_offset.y)
        await pilot.resize_terminal(100, 28)
        await settle(pilot)
        assert round(tree.scroll_offset.y) == top  # moved once: a resize only keeps the cursor visible
        assert top <= tree.cursor_row < top + tree.scrollable_content_region.height - 1


async def test_e_expands_the_linear_chain_to_its_kernel() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        data = tree_as_data(tree_of(app))
        assert not any(item["expanded"] for item in data)
        await goto(pilot, "aten::linear")
        await pilot.press("e")
        await settle(pilot)
        step = tree_as_data(tree_of(app))[0]
        assert expanded_chain([step]) == ["ProfilerStep#2", "mlp_fwd", *LINEAR_CHAIN[:-1]]
        linear = step["children"][0]["children"][0]
        assert labels(linear["children"]) == ["aten::t", "aten::matmul"]
        assert not linear["children"][0]["expanded"]  # aten::t launched nothing: left closed
        assert tree_of(app).cursor_node.name == LINEAR_CHAIN[-1]


async def test_arrows_collapse_to_parent_and_expand() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        await pilot.press("left")  # on a leaf: go to the parent
        assert tree.cursor_node.name == "cuLaunchKernelEx"
        await pilot.press("left")  # expanded: collapse
        assert not tree.is_expanded(tree.cursor_key)
        await pilot.press("right")
        assert tree.is_expanded(tree.cursor_key)
        await pilot.press("right")  # expanded: first child
        assert tree.cursor_node.kind == "kernel"


async def test_g_jumps_from_kernel_to_launching_op_and_f_to_forward_op() -> None:
    app = TraceApp(fixture("mlp_train_tbhandler_stack_memory.pt.trace"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        assert tree.cursor_node.kind == "kernel"
        await pilot.press("g")
        assert tree.cursor_node.name == "aten::addmm"
        await goto(pilot, "AddmmBackward0")
        await pilot.press("f")
        assert tree.cursor_node.name == "aten::addmm"
        # issue 14 item 12: the engine's wrapper, where users land, goes to the same forward op
        await goto(pilot, "autograd::engine::evaluate_function: AddmmBackward0")
        await pilot.press("f")
        assert tree.cursor_node.name == "aten::addmm"


async def test_python_frames_toggle_and_kernels_only_filter() -> None:
    app = TraceApp(fixture("mlp_train_tbhandler_stack_memory.pt.trace"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        assert any(".py(" in label for label in visible_labels(tree))
        await pilot.press("p")
        await settle(pilot)
        assert not any(".py(" in label for label in visible_labels(tree))
        assert tree.cursor_node.kind == "kernel"  # the cursor stays on its node
        await pilot.press("k")
        await settle(pilot)
        assert all(tree.model.node(key).gpu_events != 0 for key in tree.model.walk(tree.model.tops()[0]))
        await pilot.press("p", "k")
        await settle(pilot)
        assert any(".py(" in label for label in visible_labels(tree))


async def test_name_filter_keeps_matching_chains() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("F", *"gelu", "enter")
        await settle(pilot)
        tree = tree_of(app)
        model = tree.model
        names = {model.label(key) for top in model.tops() for key in model.walk(top)}
        assert "aten::gelu" in names and "aten::mul" not in names
        assert "name ~ 'gelu'" in str(app.screen.query_one("#status").render())


async def test_find_next_and_previous_cycle_through_matches() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"gelu", "enter")
        await settle(pilot)
        tree = tree_of(app)
        seen = [tree.cursor_node.event_id]
        for _ in range(5):
            await pilot.press("n")
            seen.append(tree.cursor_node.event_id)
        assert len(set(seen)) == 6  # three aten::gelu ops and their three kernels
        assert all("gelu" in tree.model.node(key).full_name.lower() for key in seen)
        await pilot.press("n")
        assert tree.cursor_node.event_id == seen[0]  # wraps
        await pilot.press("N")
        assert tree.cursor_node.event_id == seen[-1]


async def test_status_line_follows_the_search_and_the_filters() -> None:
    """The status is computed from the screen's reactive state: a search's position, the filters, a
    rebuild that keeps the search (its matches found again in the new tree)."""
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = app.screen

        def status() -> str:
            return str(screen.query_one("#status").render())

        assert "? help" in status()
        await pilot.press("slash", *"gelu", "enter")
        await settle(pilot)
        assert "find: gelu  1/6" in status()
        await pilot.press("n", "n")
        assert "find: gelu  3/6" in status() and screen.matches.index == 2
        await pilot.press("k")
        await settle(pilot)
        assert "filters: kernel launchers only" in status() and "find: gelu" in status()
        assert len(screen.matches.ids) == 6 and tree_of(app).find_query == "gelu"
        await pilot.press("slash", *["backspace"] * 4, "enter")  # an empty find clears the search
        await settle(pilot)
        assert "find" not in status() and tree_of(app).find_query == ""


async def test_table_enter_goes_to_first_then_next_occurrence() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        assert isinstance(app.screen, TablesScreen)
        assert app.screen.active == "ops"
        assert app.screen.table.row(0)["name"] == "aten::linear"  # most GPU time first
        await pilot.press("enter")
        await settle(pilot)
        tree = tree_of(app)
        first = tree.cursor_node.event_id
        assert tree.cursor_node.name == "aten::linear"
        await pilot.press("t", "enter")
        await settle(pilot)
        second = tree.cursor_node.event_id
        assert tree.cursor_node.name == "aten::linear" and second != first
        await pilot.press("n")
        assert tree.cursor_node.name == "aten::linear"
        assert tree.cursor_node.event_id not in (first, second)


async def test_tables_sort_by_any_column() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert app.screen.active == "kernels"
        table = app.screen.table
        assert table.columns[table.column_index].key == "total_us"  # the default sort's column
        await pilot.press("left", "s")  # calls, most first
        calls = [table.row(i)["calls"] for i in range(table.row_count)]
        assert calls == sorted(calls, reverse=True)
        await pilot.press("s")
        assert [table.row(i)["calls"] for i in range(table.row_count)] == sorted(calls)
        await pilot.press("left", "s")  # kernel short name, A→Z
        shorts = [table.row(i)["short"] for i in range(table.row_count)]
        assert shorts == sorted(shorts)
        await pilot.press("escape")
        assert isinstance(app.screen, ExplorerScreen)


async def test_help_lists_every_binding() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        for title, bindings in app.help_sections():
            assert title in text
            for binding in bindings:
                assert binding.description in text  # type: ignore[union-attr]
        await pilot.press("escape")
        assert isinstance(app.screen, ExplorerScreen)


async def test_command_palette_offers_every_action() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        names = {command.title for command in app.get_system_commands(app.screen)}
        assert {"Find", "Tables", "Open chain", "Go to op", "GPU only", "Python", "Why", "Help"} <= names
        screen = app.screen
        assert isinstance(screen, ExplorerScreen)
        assert ("aten::gelu", "op", 3) in screen.palette_names()


async def test_clicking_an_event_in_the_timeline_selects_it() -> None:
    """Issue 14 item 11: a click on a GPU block selected nothing while a click on the lane above it
    selected a kernel (the strip's top border shifted the rows by one). A click in the middle of the
    first event of each lane (its summary row) puts the tree's cursor on that very event."""
    app = TraceApp(fixture("mlp_train_tbhandler_stack_memory.pt.trace"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.styles.border_top[0] != ""  # the case that broke: a border above the axis
        top = timeline.content_region.y - timeline.region.y  # rows above the header (the border)
        window = timeline.window
        assert window is not None and timeline.model is not None
        kinds = {row.lane.kind for row in timeline.rows}
        assert {"gpu", "cpu"} <= kinds
        checked = 0
        for line, row in enumerate(timeline.rows):
            if row.row.levels:
                continue
            drawn = timeline.model.draw(row.row, window, timeline.cells, timeline.mode)
            cell = next((c for c, ref in enumerate(drawn.refs) if ref is not None), None)
            if cell is None:
                continue
            event_id = row.row.source.event_id(drawn.refs[cell])
            await pilot.click(timeline, offset=(LABEL_WIDTH + cell, top + timeline.header_rows + line))
            await settle(pilot)
            assert tree_of(app).cursor_node.event_id == event_id, (line, row.lane.label)
            assert timeline.selected == event_id
            checked += 1
        assert checked >= 3


async def test_palette_name_search_goes_to_the_first_occurrence() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *"aten::gelu")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        tree = tree_of(app)
        assert tree.cursor_node.name == "aten::gelu"
        assert tree.cursor_node.event_id == tree.model.find("aten::gelu", exact=True)[0]
        await pilot.press("n")
        assert tree.cursor_node.event_id == tree.model.find("aten::gelu", exact=True)[1]


async def test_markup_and_escape_bytes_render_literally_and_run_nothing(markup_path: Path) -> None:
    app = TraceApp(markup_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        await pilot.press("c", "right")
        await settle(pilot)
        shown = [label.strip() for label in visible_labels(tree)]
        for name in synthetic.MARKUP_NAMES[:3]:
            assert name in shown
        assert "esc\ufffd]52;c;aGk=\ufffdbytes" in shown
        rendered = "".join(tree.render_line(y).text for y in range(1, 1 + len(shown)))
        assert "[bold red]x[/]" in rendered and "[@click=app.quit]quit[/]" in rendered
        assert "\x1b" not in rendered
        for row in range(len(shown)):
            await pilot.click(tree, offset=(12, row + 1))
            await settle(pilot)
        await pilot.click("#details", offset=(2, 0))
        assert app.is_running and isinstance(app.screen, ExplorerScreen)


@pytest.mark.slow
async def test_deep_python_stack_does_not_recurse(deep_path: Path) -> None:
    app = TraceApp(deep_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        assert tree.cursor_node.full_name == "deep_gemm_kernel"
        assert len(visible_labels(tree)) == 3000 + 4  # thread, frames, op, call, kernel
        data = tree_as_data(tree)
        depth = 0
        while data:
            depth += 1
            data = data[0]["children"]
        assert depth == 3004
        await pilot.press("c", "e")
        await settle(pilot)
        assert tree.cursor_node.full_name == "deep_gemm_kernel"
        await pilot.press("g")
        assert tree.cursor_node.name == "aten::mm"


async def test_unreadable_trace_shows_the_cli_line_and_exits_2(tmp_path: Path, monkeypatch, capfd) -> None:
    monkeypatch.chdir(tmp_path)
    Path("broken.json").write_text("this is not json")
    app = TraceApp(Path("broken.json"))
    async with app.run_test(size=(100, 20)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen)
        line = app.screen.line
        assert line.startswith("tracetui: broken.json: not a trace")
        await pilot.press("q")
    assert app.return_code == 2
    assert capfd.readouterr().err.strip() == line  # left on the terminal once the app is gone


async def test_orphans_hang_under_their_own_node(orphan_path: Path) -> None:
    app = TraceApp(orphan_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        top = tree_as_data(tree)
        assert labels(top)[-1] == "orphan GPU work (no launch call in the trace)"
        await pilot.press("6", "enter")
        await settle(pilot)
        assert tree.cursor_node.full_name == "lost_kernel_a"
        assert tree_as_data(tree)[-1]["expanded"]


async def test_huge_children_list_and_huge_table_render_only_what_is_visible(tmp_path: Path) -> None:
    app = TraceApp(synthetic.wide_trace(tmp_path / "wide.json"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        assert tree.row_count == 1 + 30_000  # the thread node is the hot chain: expanded at start
        await pilot.press("home", "left")
        assert tree.row_count == 1
        start = time.perf_counter()
        await pilot.press("right", "end")
        assert tree.row_count == 1 + 30_000 and tree.cursor_node.name == f"aten::op_{29_999 % 7}"
        assert time.perf_counter() - start < 2  # generous: a list splice and one screen of rows

        view = TableView(id="big")
        await app.screen.mount(view)
        frame = pl.DataFrame({"name": [f"kernel_{i}" for i in range(200_000)], "us": range(200_000)})
        start = time.perf_counter()
        view.set_data(frame, [Column("name", "name", 0, "left"), Column("us", "µs", 9)])
        view.sort_by("us")
        await pilot.pause()
        assert view.row(0)["us"] == 199_999
        assert time.perf_counter() - start < 2


async def test_details_of_an_op_whose_kernels_have_no_timestamp(tmp_path: Path) -> None:
    """Found by fuzzing: the details pane's launch strip merged intervals with a missing start."""
    doc = json.loads(gzip.decompress(fixture("mlp_eager").read_bytes()))
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel":
            event.pop("ts", None)
    path = tmp_path / "kernels_without_ts.json"
    path.write_text(json.dumps(doc))
    app = TraceApp(path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await goto(pilot, "aten::mm")
        details = app.screen.query_one("#details", Static)
        assert "aten::mm" in str(details.render())


async def test_a_find_with_no_match_says_so_in_plain_text() -> None:
    """The query can be a trace name taken from the palette: it is never read as markup."""
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        app.screen.start_find(Search("[bold]nope[/]"), jump=True)
        await settle(pilot)
        (notification,) = app._notifications
        assert "'[bold]nope[/]'" in notification.message and notification.markup is False


async def test_80x24_gives_the_tree_most_rows_and_every_footer_key_fits() -> None:
    """Issue 14 item 14, the explorer at 80×24: the tree has more rows than every other part, the
    footer's keys all lie inside the 80 columns, the status line fits, and in every table the row's
    name gets at least half the width (or all it needs)."""
    from textual.widgets import Footer

    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        heights = {
            name: screen.query_one(name).region.height for name in ("#tree", "#details-pane", "#timeline")
        }
        assert (
            heights["#tree"] >= 12 and heights["#tree"] > heights["#details-pane"] + heights["#timeline"] - 4
        )
        assert heights["#tree"] == max(heights.values())
        keys = list(screen.query_one(Footer).query("FooterKey"))
        assert keys and all(key.region.x >= 0 and key.region.right <= 80 for key in keys)
        assert {key.description for key in keys} >= {
            "Open chain",
            "Find",
            "GPU only",
            "Python",
            "Tables",
            "Why",
            "Help",
            "Quit",
        }
        status = screen.query_one("#status", Static)
        assert len(str(status.render())) <= 80
        await pilot.press("1")
        await settle(pilot)
        assert isinstance(app.screen, TablesScreen)
        for key in ("ops", "kernels", "annotations", "steps", "anomalies", "orphans"):
            app.screen.action_show(key)
            await settle(pilot)
            table = app.screen.table
            width = table.scrollable_content_region.width
            widths = dict(zip((c.key for c in table.columns), table._widths(width), strict=True))
            name = next(c.key for c in table.columns if c.name)
            longest = max(
                (
                    len(c.text(row[name]))
                    for row in table.frame.iter_rows(named=True)
                    for c in [next(c for c in table.columns if c.key == name)]
                ),
                default=0,
            )
            assert widths[name] >= min(width // 2, longest), (key, widths, longest)


async def test_zoom_label_and_p_without_python_frames() -> None:
    """Issue 14 item 15: the zoom label writes the node's own duration (the window holds margins); p on
    a trace without python frames says so instead of claiming "python hidden"."""
    from tracetui import formatting as fmt

    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await goto(pilot, "aten::mm")
        node = tree_of(app).cursor_node
        assert node is not None
        await pilot.press("z")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        window = timeline.window
        assert window is not None and window.title == "zoom: aten::mm"
        assert (window.end_ns - window.start_ns) / 1000 != node.cpu_us  # the margins
        axis = timeline.render_line(0).text
        assert f"zoom: aten::mm · {fmt.duration(node.cpu_us)}" in axis
        await pilot.press("p")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExplorerScreen)
        assert not screen.model.options.hide_python
        assert "python hidden" not in str(screen.query_one("#status", Static).render())


async def test_a_memcpy_only_op_row_names_its_memory_work() -> None:
    """Issue 14 item 15: the tree's kernels column showed 0 beside the GPU time of a memcpy-only op."""
    import re

    app = TraceApp(fixture("mlp_train_tbhandler_stack_memory.pt.trace"))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        trace = app.screen.trace if isinstance(app.screen, ExplorerScreen) else None
        assert trace is not None
        ops = trace.events.filter(
            (pl.col("cat") == "cpu_op") & (pl.col("kernels") == 0) & (pl.col("gpu_events") > 0)
        )
        assert ops.height  # aten::copy_, aten::item, …: a memcpy, no kernel
        op = ops.row(0, named=True)
        tree = tree_of(app)
        assert tree.reveal_event(op["id"])
        await settle(pilot)
        rendered = [tree.render_line(y).text for y in range(1, tree.size.height)]
        row = next(line for line in rendered if op["name"] in line and "mem" in line)
        assert re.search(rf"\s{op['gpu_events']} mem\s*$", row), row
        assert not re.search(r"\s0\s*$", row)


async def test_step_rows_and_their_details_write_the_replayed_figures() -> None:
    """Issue 14 items 1-2: the tree row of a DDP step and its details pane write the kernels and GPU
    time launched by any thread while it is open (replayed from the raw JSON), with the split."""
    import re

    from tests.app.conftest import FIXTURES
    from tests.replay import replay
    from tracetui import formatting as fmt

    path = next((FIXTURES / "ranks" / "ddp_2rank_nccl").glob("rank0.*.json.gz"))
    truth = replay(path)
    app = TraceApp(path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        for step in truth.steps.values():
            assert tree.reveal_event(step.id)
            await settle(pilot)
            rows = [tree.render_line(y).text for y in range(1, tree.size.height)]
            row = next(line for line in rows if f" {step.name} " in line)
            cells = rf"\s{re.escape(fmt.duration(step.gpu_us))}\s+{step.counts['kernels']}\s*$"
            assert re.search(cells, row.split("▊")[0].rstrip()), row
            details = str(app.screen.query_one("#details", Static).render())
            split = truth.split(step)
            assert split is not None and "on pt_autograd_0" in split  # the backward's kernels
            assert f"{fmt.count(step.counts['kernels'])} ({split})" in details
