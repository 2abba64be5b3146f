"""A view of the explorer as an SVG picture (``tracetui render``), for scripts, CI reports and bug reports.

The explorer runs headless at ``--size``, waits until everything it computes is drawn
(:func:`tracetui.app.settle.settle`), shows the view, and writes Textual's screenshot. The picture is
byte-identical across runs of the same trace and options: it holds no clock and no path other than
the trace's file name (the header's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tracetui.app.app import TraceApp
from tracetui.app.saving import write_svg
from tracetui.app.screens.error import ErrorScreen
from tracetui.app.screens.explorer import ExplorerScreen
from tracetui.app.screens.tables import TablesScreen
from tracetui.app.settle import settle
from tracetui.app.widgets.dispatch_tree import DispatchTree
from tracetui.errors import TraceError
from tracetui.trace.source import check_readable
from tracetui.views.timeline.lanes import select
from tracetui.views.timeline.window import Window

if TYPE_CHECKING:
    from textual.pilot import Pilot

    from tracetui.app.app import TraceApp

VIEWS = ("tree", "timeline", "tables", "why")
TABLE_KEYS = ("ops", "kernels", "annotations", "steps", "anomalies", "orphans", "memory")
DEFAULT_SIZE = (160, 48)


@dataclass
class Request:
    """What to show: the view, the node (an exact name) and the table."""

    view: str = "tree"
    node: str | None = None
    table: str = "kernels"
    window: tuple[float, float] | None = None
    """The timeline's window, in ms from the trace's first event."""
    lanes: str | None = None
    """The timeline's lanes (:func:`tracetui.views.timeline.lanes.select`)."""
    svg: str | None = field(default=None, init=False)
    error: str | None = field(default=None, init=False)


async def show(pilot: Pilot[object], app: TraceApp, request: Request) -> None:
    """Drive the settled explorer to the requested view."""

    await settle(pilot)
    if isinstance(app.screen, ErrorScreen):
        request.error = app.screen.line.removeprefix("tracetui: ")
        return
    tree = app.screen.query_one(DispatchTree)
    if request.node is not None and request.view != "tables":
        assert tree.model is not None
        found = tree.model.find(request.node, exact=True)
        if not found:
            request.error = f"no event named {request.node!r} in {app.path.name}"
            return
        tree.reveal_event(found[0])
        await settle(pilot)
    if request.view == "timeline":
        error = await show_timeline(pilot, app, request)
        if error is not None:
            request.error = error
            return
    elif request.view == "why":  # the Why view of the cursor's step (--node's)
        await pilot.press("y")
        await settle(pilot)
    elif request.view == "tables":
        await pilot.press(str(TABLE_KEYS.index(request.table) + 1))
        await settle(pilot)
        screen = app.screen
        if isinstance(screen, TablesScreen) and request.node is not None:
            frame = screen.table.frame
            named = "name" in frame.columns
            rows = frame.with_row_index("row").filter(frame["name"] == request.node) if named else None
            if rows is None or rows.is_empty():
                request.error = f"no row named {request.node!r} in the {request.table} table"
                return
            screen.table._move(int(rows["row"][0]))
            await settle(pilot)
    request.svg = app.export_screenshot()


async def show_timeline(pilot: Pilot[object], app: TraceApp, request: Request) -> str | None:
    """The timeline full screen: its lanes, the node zoomed to, the window asked for; or what is wrong."""
    screen = app.screen
    assert isinstance(screen, ExplorerScreen)
    await pilot.press("v")  # the timeline full screen, focused
    await settle(pilot)
    timeline, model = screen.timeline, screen.timeline_model
    if model is None:
        return "the timeline could not be built"
    if request.lanes is not None:
        try:
            timeline.set_layout(select(model.lanes, request.lanes))
        except ValueError as exc:
            return f"--lanes: {exc}"
    if request.node is not None:
        screen.action_zoom()  # the timeline zoomed to the node
    if request.window is not None:
        start, end = request.window
        t0 = app_trace_t0(screen)
        length_ms = (model.bounds[1] - t0) / 1e6
        if start >= length_ms or end <= (model.bounds[0] - t0) / 1e6:
            return f"--window {start:g}:{end:g} is outside the trace (0–{length_ms:.3f} ms)"
        screen._following = False
        timeline.show_window(Window(t0 + round(start * 1e6), t0 + round(end * 1e6), "window"))
    await settle(pilot)
    return None


def app_trace_t0(screen: object) -> int:
    return int(screen.trace.t0_ns)  # type: ignore[attr-defined]


def render(
    trace: Path,
    output: Path,
    request: Request,
    size: tuple[int, int] = DEFAULT_SIZE,
    max_inflate: float | None = None,
) -> None:
    """Write the requested view of ``trace`` to ``output`` (SVG); one-line errors for a bad trace
    or an unknown node. ``max_inflate``: as for :func:`tracetui.load`."""
    check_readable(trace)
    if output.exists() and output.resolve() == trace.resolve():
        raise TraceError(output, "refusing to overwrite the trace being rendered")

    app = TraceApp(trace, max_inflate=max_inflate)

    async def auto_pilot(pilot: Pilot[object]) -> None:
        try:
            await show(pilot, app, request)
        finally:
            app.exit()

    app.run(headless=True, size=size, auto_pilot=auto_pilot)
    if request.error is not None:
        raise TraceError(None, request.error)
    if request.svg is None:
        raise TraceError(trace, "the explorer stopped before the view could be drawn")
    write_svg(output, request.svg)
