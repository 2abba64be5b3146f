"""The explorer's Why view (``y``), the critical path marked in the tree and walked with ``.`` / ``,``:
Pilot tests on the rows as plain data, and snapshots (SVGs in __snapshots__) at 140×40 and 80×24."""

from __future__ import annotations

import html
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot

import tracetui
from tests.app.conftest import WIDE, fixture, keys, settle, tree_of
from tracetui.app.app import TraceApp
from tracetui.app.render import Request, render
from tracetui.app.screens import explorer
from tracetui.app.screens.explorer import ExplorerScreen
from tracetui.app.screens.why import WhyScreen
from tracetui.app.widgets.table_view import TableView
from tracetui.insight.spans import verdicts
from tracetui.sample_traces import default_trace
from tracetui.views.why import HEADLINES, NO_STEPS, why_view

SIZES = pytest.mark.parametrize("size", [WIDE, (80, 24)], ids=["140x40", "80x24"])


async def test_why_view_rows_and_enter_goes_to_the_event() -> None:
    """``y`` on the opening kernel (ProfilerStep#4): the view's table is the model's rows, the path
    is marked in the tree, Enter on an item puts the tree's cursor on its event."""
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        assert tree.model is not None and not tree.marks
        step = tree.model.step_of(tree.cursor_key)  # type: ignore[arg-type]
        await pilot.press("y")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, WhyScreen)
        expected = why_view(tree.model.trace, step)
        assert screen.view == expected and expected.step_name == "ProfilerStep#4"
        table = screen.query_one("#why-path", TableView)
        assert [table.row(i) for i in range(table.row_count)] == expected.rows()
        assert expected.events is not None
        assert tree.marks.on == frozenset(expected.events.ids)
        target = next(i for i, row in enumerate(expected.rows()) if row["event_id"] is not None and i)
        await pilot.press(*["down"] * target, "enter")
        await settle(pilot)
        assert isinstance(app.screen, ExplorerScreen)
        assert tree.cursor_key == expected.rows()[target]["event_id"]


async def test_walk_keys_visit_the_path_in_order() -> None:
    """``.`` from the step's row visits the events of its critical path in the order the path
    reaches them (expanding what holds them), wrapping at its end; ``,`` walks back; the status
    line counts; ``r`` then marks every step's path in the tree, and again clears the marks."""
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        assert tree.model is not None
        await pilot.press("c")  # collapsed: each reveal expands the event's ancestors
        step = tree.model.step_ids[-1]
        assert tree.reveal_event(step)
        await settle(pilot)
        events = why_view(tree.model.trace, step).events
        assert events is not None and len(events.ids) > 5
        ids = events.ids
        first = events.after(step, tree.model.node(step).start_ns)
        assert first is not None
        visited = []
        for _ in range(4):
            await pilot.press("full_stop")
            await settle(pilot)  # the first finds the path in a worker; the others move at once
            visited.append(tree.cursor_key)
        assert visited == list(ids[first : first + 4])
        assert tree.reveal_event(ids[-2])
        await pilot.press("full_stop")
        await pilot.press("full_stop")  # past the end: the first
        assert tree.cursor_key == ids[0]
        await pilot.press("comma")
        await settle(pilot)
        assert tree.cursor_key == ids[-1]
        screen = app.screen
        assert isinstance(screen, ExplorerScreen)
        assert f"critical path of ProfilerStep#4  {len(ids)}/{len(ids)}" in str(screen.status)
        assert tree.marks.on == frozenset(ids)  # this step's path only
        assert screen.timeline.legend_extra.startswith("critical path: ProfilerStep#4, ")
        await pilot.press("r")  # every step's path, in the tree too
        await settle(pilot)
        every = {i for s in tree.model.step_ids for i in why_view(tree.model.trace, s).events.ids}  # type: ignore[union-attr]
        assert tree.marks.on == frozenset(every) and len(every) > len(ids)
        await pilot.press("r")
        await settle(pilot)
        assert not tree.marks and not screen.timeline.legend_extra


async def test_keys_pressed_while_a_path_is_found_stack_nothing_and_lose_no_marks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``y`` twice before the path is found (a slow one) opens one Why view; ``.`` then ``r`` at
    once: every step's path is marked (the marks of each arrival merged with the tree's, never
    replaced); ``r`` again clears them and the walk's count."""

    def slow(*args: object) -> object:
        time.sleep(0.3)
        return why_view(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(explorer, "why_view", slow)
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        assert tree.model is not None
        await pilot.press("y", "y")
        await settle(pilot)
        assert [type(screen) for screen in app.screen_stack].count(WhyScreen) == 1
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("full_stop", "r")
        await settle(pilot)
        every = {i for s in tree.model.step_ids for i in why_view(tree.model.trace, s).events.ids}  # type: ignore[union-attr]
        assert tree.marks.on == frozenset(every)
        await pilot.press("r")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExplorerScreen)
        assert not tree.marks and screen.walk is None


async def test_a_trace_without_steps() -> None:
    """No steps: the Why view says so and lists the advice; the walk keys only say so too."""
    app = TraceApp(fixture("cpu_only"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("full_stop")
        await settle(pilot)
        assert tree_of(app).marks.on == frozenset()
        await pilot.press("y")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, WhyScreen) and screen.view.headline == NO_STEPS
        assert not screen.query("#why-path")
        await pilot.press("escape")
        assert isinstance(app.screen, ExplorerScreen)


@SIZES
def test_why_view_snapshot(snap_compare, size: tuple[int, int]) -> None:
    """The Why view of ProfilerStep#4: CPU-bound, its path's parts, the kernels and gaps on it, the
    GPU's idle time, the launch delays, what to try."""
    assert snap_compare(TraceApp(fixture("mlp_eager")), terminal_size=size, run_before=keys("y"))


def test_tree_with_the_path_marked_snapshot(snap_compare) -> None:
    """After ``.`` twice from the collapsed step: ``»`` on the path's events, ``›`` on the nodes
    holding one; the status line counts the walk."""

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot)
        tree = tree_of(pilot.app)
        assert tree.model is not None
        await pilot.press("c")
        assert tree.reveal_event(tree.model.step_ids[-1])
        await settle(pilot)
        for _ in range(3):
            await pilot.press("full_stop")
            await settle(pilot)

    assert snap_compare(TraceApp(fixture("mlp_eager")), terminal_size=WIDE, run_before=run_before)


def test_render_why_of_the_nodes_step(tmp_path: Path) -> None:
    """``tracetui render --view why --node aten::gelu``: the Why view of the first gelu's step."""
    out = tmp_path / "why.svg"
    render(fixture("mlp_eager"), out, Request("why", "aten::gelu"), (120, 30))
    text = html.unescape(out.read_text()).replace("\xa0", " ")
    assert "Why ProfilerStep#2 is slow (the cursor's step)" in text and "What to try" in text


def test_render_why_says_each_steps_headline(tmp_path: Path) -> None:
    """The CUDA-graph sample has GPU-bound steps and one whose GPU waits: the view drawn for a step
    of each leads with that step's headline."""
    path = default_trace().with_name("mlp_cudagraph.json.gz")  # the installed copy (CI tests an install)
    trace = tracetui.load(path)
    model = why_view(trace, None)
    steps = dict(verdicts(trace)[0].select("name", "bound").iter_rows())
    assert set(steps.values()) == {"gpu-bound", "gpu-waits"} and model.step_name in steps
    first = {bound: name for name, bound in reversed(list(steps.items()))}  # a step of each
    for bound, name in first.items():
        out = tmp_path / f"{name}.svg"
        render(path, out, Request("why", name), (160, 40))
        text = html.unescape(out.read_text()).replace("\xa0", " ")
        assert f"Why {name} is slow (the cursor's step)" in text
        assert HEADLINES[bound] in text
