"""The timeline: every lane of the trace over any time range, as in Perfetto (Line API).

A header line (what the window is, its length, the colour mode, the selection or range, where the
window is), a ruler counted from the window's start, then one line per shown row
(:func:`tracetui.views.timeline.lanes.shown_rows`: pinned lanes first, never scrolled away). Each cell
is drawn by :class:`tracetui.views.timeline.model.TimelineModel` (glyph, colour slot, inverse, label);
this widget styles it, overlays the tree cursor's span, the range, the selected event and the events
it is linked to (its flows), marks handed in (a critical path), and the time cursor, and turns keys and
the mouse into windows and selections. Keys apply while the timeline has the focus.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from tracetui import formatting as fmt
from tracetui.app.widgets.cells import pad
from tracetui.app.widgets.line_style import CachedStyles
from tracetui.views.memory import MemoryLane
from tracetui.views.timeline import lanes as lane_ops
from tracetui.views.timeline import window as win
from tracetui.views.timeline.lanes import COLOUR_MODES, SLOTS, CounterRow, Layout, MemoryRow, ShownRow
from tracetui.views.timeline.model import EMPTY, FAINT, LEVEL, NO_MARKS, PEAK_GLYPH, Marks, TimelineModel
from tracetui.views.timeline.model import PEAK as PEAK_SLOT
from tracetui.views.timeline.window import Window

LABEL_WIDTH = 18
PEAK = PEAK_GLYPH  # where a memory lane reached its peak
PALETTE = (  # the slots of tracetui.views.timeline.lanes: CPU ops, annotations, python, runtime, kernels, …
    "#5fafff",
    "#d7afff",
    "#8a8a8a",
    "#ffd75f",
    "#5fd787",
    "#5fd7d7",
    "#d787d7",
    "#87875f",
    "#ff875f",
    "#afaf87",
    "#ff5f5f",
    "#ffaf00",
)


class Timeline(CachedStyles, Widget, can_focus=True):
    """The lanes of ``model`` over ``window``; the screen hands in the tree cursor's span, the
    selection's marks and any other marks (``set_marks``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("w", "zoom(0.5)", "Zoom in", id="timeline.zoom_in", tooltip="halve the window (mouse wheel)"),
        Binding("s", "zoom(2)", "Zoom out", id="timeline.zoom_out", tooltip="double the window"),
        Binding(
            "a", "pan(-0.25)", "Pan left", id="timeline.pan_left", tooltip="a quarter back (drag the lanes)"
        ),
        Binding("d", "pan(0.25)", "Pan right", id="timeline.pan_right", tooltip="a quarter on"),
        Binding("0", "fit_trace", "Fit trace", id="timeline.fit_trace", tooltip="the whole trace"),
        Binding(
            "f",
            "fit_selection",
            "Fit selection",
            id="timeline.fit_selection",
            tooltip="the range, else the selection with what it is linked to, else the tree cursor's node",
        ),
        Binding(
            "c",
            "colour",
            "Colour",
            id="timeline.colour",
            tooltip="colour by category, by name, or by kernel family",
        ),
        Binding("up", "row(-1)", "Lane up", show=False, id="timeline.up"),
        Binding("down", "row(1)", "Lane down", show=False, id="timeline.down"),
        Binding("pageup", "row(-10)", "Page up", show=False, id="timeline.page_up"),
        Binding("pagedown", "row(10)", "Page down", show=False, id="timeline.page_down"),
        Binding(
            "left", "cursor(-1)", "Cursor ←", show=False, id="timeline.cursor_left", tooltip="one column"
        ),
        Binding("right", "cursor(1)", "Cursor →", show=False, id="timeline.cursor_right"),
        Binding("shift+left", "cursor(-8)", "Cursor ← 8", show=False, id="timeline.cursor_left_8"),
        Binding("shift+right", "cursor(8)", "Cursor → 8", show=False, id="timeline.cursor_right_8"),
        Binding(
            "enter",
            "select",
            "Select",
            id="timeline.select",
            tooltip="the event under the cursor: details, tree cursor, flows (or click it)",
        ),
        Binding(
            "space",
            "toggle_lane",
            "Expand lane",
            id="timeline.toggle",
            tooltip="a thread's depths, a stream's rows",
        ),
        Binding("h", "hide_lane", "Hide lane", show=False, id="timeline.hide"),
        Binding("H", "show_lanes", "Show all lanes", show=False, id="timeline.show_all"),
        Binding(
            "p", "pin_lane", "Pin lane", show=False, id="timeline.pin", tooltip="keep it on top; again: unpin"
        ),
        Binding("K,shift+up", "move_lane(-1)", "Move lane up", show=False, id="timeline.move_up"),
        Binding("J,shift+down", "move_lane(1)", "Move lane down", show=False, id="timeline.move_down"),
        Binding(
            "b",
            "mark(0)",
            "Range start",
            id="timeline.range_start",
            tooltip="the range starts at the cursor (or drag on the ruler)",
        ),
        Binding("e", "mark(1)", "Range end", id="timeline.range_end", tooltip="the range ends at the cursor"),
        Binding(
            "escape", "clear", "Clear", show=False, id="timeline.clear", tooltip="the range; again: the tree"
        ),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline--axis",
        "timeline--ruler",
        "timeline--label",
        "timeline--label-cursor",
        "timeline--idle",
        "timeline--span",
        "timeline--range",
        "timeline--cursor",
        "timeline--selected",
        "timeline--linked",
        "timeline--marked",
        "timeline--memory",
        "timeline--peak",
        "timeline--note",
    }

    DEFAULT_CSS = """
    Timeline { height: auto; background: $surface; }
    Timeline > .timeline--axis { color: $text-muted; background: $panel; }
    Timeline > .timeline--ruler { color: $text-muted; }
    Timeline > .timeline--label { color: $text-muted; }
    Timeline > .timeline--label-cursor { color: $text; background: $accent 40%; text-style: bold; }
    Timeline > .timeline--idle { color: $text-disabled; }
    Timeline > .timeline--span { background: $primary 25%; }
    Timeline > .timeline--range { background: $warning 30%; }
    Timeline > .timeline--cursor { background: $foreground 25%; }
    Timeline > .timeline--selected { color: $text; background: $accent; text-style: bold; }
    Timeline > .timeline--linked { color: $text-accent; background: $accent 35%; text-style: bold; }
    Timeline > .timeline--marked { color: #ffaf00; background: #ffaf00 30%; text-style: bold; }
    Timeline > .timeline--memory { color: $text-warning; }
    Timeline > .timeline--peak { color: $text-error; text-style: bold; }
    Timeline > .timeline--note { color: $text-muted; text-style: italic; }
    """

    class EventChosen(Message):
        """An event was clicked (or Enter): ``event_id`` is the trace's event."""

        def __init__(self, event_id: int) -> None:
            super().__init__()
            self.event_id = event_id

    class RangeChosen(Message):
        """A range was dragged on the ruler (or marked with ``b`` / ``e``); None: cleared."""

        def __init__(self, span: tuple[int, int] | None) -> None:
            super().__init__()
            self.span = span

    class Navigated(Message):
        """The user moved the window (the screen stops following the tree's steps)."""

    class Left(Message):
        """Escape with nothing to clear: back to the tree."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model: TimelineModel | None = None
        self.window: Window | None = None
        self.lane_layout = Layout()
        self.mode = COLOUR_MODES[0]
        self.note = "building the timeline …"
        self.span: tuple[int, int] | None = None
        self.range: tuple[int, int] | None = None
        self._anchor: int | None = None
        self.selected: int | None = None
        self.selection = NO_MARKS
        self.linked = NO_MARKS
        self.marked = NO_MARKS
        self.legend_extra = ""
        self.row_cursor = 0
        self.scroll = 0
        self.cursor_ns: int | None = None
        self._rows: list[ShownRow] = []
        self._strips: dict[tuple[object, ...], Strip] = {}
        self._cell_styles: dict[tuple[object, ...], Style] = {}  # by a cell's look: see _cell_style
        self.compact = False
        """One header line (the ruler, the window's title in the label column): a narrow strip."""
        self._drag: tuple[int, int, bool, bool, Window] | None = None  # x, y, ctrl, on the ruler, window
        self._dragged = False

    # ---- data ----------------------------------------------------------------------------------
    def set_model(self, model: TimelineModel) -> None:
        self.model = model
        self.note = ""
        self.lane_layout = lane_ops.first_layout(model.lanes)
        self._relayout(lanes_changed=True)
        if self.window is None:
            self.window = model.whole(self.cells)

    def lanes_changed(self) -> None:
        """The model's lanes changed (memory read, ranks, lanes from outside)."""
        self._relayout(lanes_changed=True)

    def set_layout(self, layout: Layout) -> None:
        self.lane_layout = layout
        self._relayout()

    def _relayout(self, lanes_changed: bool = False) -> None:
        """The rows shown again; the strips drawn are kept (keyed by row, not place: a lane expanded
        or moved draws only its own rows) unless the lanes changed."""
        self._rows = lane_ops.shown_rows(self.model.lanes, self.lane_layout) if self.model is not None else []
        self.row_cursor = max(0, min(self.row_cursor, len(self._rows) - 1))
        if lanes_changed:
            self._strips.clear()
        self.refresh(layout=True)

    @property
    def rows(self) -> list[ShownRow]:
        return self._rows

    @property
    def memory(self) -> list[MemoryLane]:
        """The memory lanes drawn (:mod:`tracetui.views.memory`'s)."""
        if self.model is None:
            return []
        rows = [row.source for lane in self.model.lanes if lane.kind == "memory" for row in lane.summary]
        return [source.lane for source in rows if isinstance(source, MemoryRow)]

    @property
    def cells(self) -> int:
        return max(1, self.size.width - LABEL_WIDTH) if self.size.width else 100

    def show_window(self, window: Window) -> None:
        """Draw ``window`` (clamped to the trace and to one ns per cell)."""
        if self.model is not None:
            window = win.clamp(window, self.model.bounds, self.cells)
        self.window = window
        if self.cursor_ns is not None and not window.start_ns <= self.cursor_ns < window.end_ns:
            self.cursor_ns = None
        self._strips.clear()
        self.refresh()

    def set_highlight(self, span: tuple[int, int] | None) -> None:
        """The tree cursor's span, shaded on every lane."""
        self.span = span
        self._strips.clear()
        self.refresh()

    def set_selection(self, event_id: int | None, selection: Marks, linked: Marks) -> None:
        """The selected event and the events it is linked to (its flows), marked on their lanes."""
        self.selected, self.selection, self.linked = event_id, selection, linked
        self._strips.clear()
        self.refresh()

    def set_marks(self, marks: Marks, legend: str = "") -> None:
        """Events to mark on their lanes (a critical path), ``legend`` in the header."""
        self.marked, self.legend_extra = marks, legend
        self._strips.clear()
        self.refresh()

    def set_range(self, span: tuple[int, int] | None) -> None:
        self.range = span
        self._strips.clear()
        self.refresh()

    @property
    def header_rows(self) -> int:
        return 1 if self.compact else 2

    def set_compact(self, compact: bool) -> None:
        if compact != self.compact:
            self.compact = compact
            self._strips.clear()
            self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self.model is None or self.window is None:
            return 2
        return self.header_rows + max(1, len(self._rows))

    # ---- where things are ----------------------------------------------------------------------
    def _pinned_count(self) -> int:
        return sum(1 for row in self._rows if row.pinned)

    def _visible_lines(self) -> int:
        return max(1, self.size.height - self.header_rows)

    def _row_at(self, line: int) -> int | None:
        """The index in :attr:`rows` drawn on lane line ``line`` (0: the first under the ruler)."""
        pinned = self._pinned_count()
        index = line if line < pinned else pinned + self.scroll + (line - pinned)
        return index if 0 <= index < len(self._rows) else None

    def _scroll_to_cursor(self) -> None:
        pinned = self._pinned_count()
        if self.row_cursor < pinned:
            return
        room = max(1, self._visible_lines() - pinned)
        position = self.row_cursor - pinned
        if position < self.scroll:
            self.scroll = position
        elif position >= self.scroll + room:
            self.scroll = position - room + 1
        self.scroll = max(0, min(self.scroll, max(0, len(self._rows) - pinned - room)))

    def _cell_time(self, cell: int) -> int:
        assert self.window is not None
        return win.time_at(self.window, self.cells, max(0, min(cell, self.cells - 1)))

    def _cursor_cell(self) -> int:
        assert self.window is not None
        if self.cursor_ns is None:
            return self.cells // 2
        return max(0, min(self.cells - 1, win.cell_of(self.window, self.cells, self.cursor_ns)))

    def _event_at(self, row: ShownRow, cell: int) -> int | None:
        assert self.model is not None and self.window is not None
        if row.row.levels:
            return None
        drawn = self.model.draw(row.row, self.window, self.cells, self.mode)
        if not 0 <= cell < len(drawn.refs):
            return None
        ref = drawn.refs[cell]
        return None if ref is None else row.row.source.event_id(ref)  # type: ignore[union-attr]

    # ---- keys -----------------------------------------------------------------------------------
    def _navigate(self, window: Window, title: str = "") -> None:
        self.show_window(replace(window, title=title, subject_us=None))
        self.post_message(self.Navigated())

    def action_zoom(self, factor: float) -> None:
        if self.window is None or self.model is None:
            return
        anchor = (
            self.cursor_ns if self.cursor_ns is not None else (self.window.start_ns + self.window.end_ns) // 2
        )
        self._navigate(win.zoom(self.window, factor, anchor, self.model.bounds, self.cells))

    def action_pan(self, share: float) -> None:
        if self.window is None or self.model is None:
            return
        self._navigate(win.pan(self.window, share, self.model.bounds, self.cells))

    def action_fit_trace(self) -> None:
        if self.model is not None:
            self._navigate(self.model.whole(self.cells), "whole trace")

    def action_fit_selection(self) -> None:
        if self.model is None:
            return
        span = self.range or self._selected_span() or self.span
        if span is None:
            self.notify("Nothing selected: click an event, or drag a range on the ruler.", timeout=3)
            return
        self._navigate(win.fit(span[0], max(span[1], span[0] + 1), self.model.bounds, self.cells))

    def _selected_span(self) -> tuple[int, int] | None:
        """From the selected event's start to its end, and to those of the events it is linked to (a
        kernel's launch and op, an op's launches and kernels): the selection with its flows."""
        if self.model is None or self.selected is None:
            return None
        found = self.model.positions([self.selected, *self.linked.ids])
        if not len(found):
            return None
        starts, ends = self.model.index.starts[found], self.model.index.ends[found]
        return int(starts.min()), int(ends.max())  # type: ignore[arg-type]

    def action_colour(self) -> None:
        self.mode = COLOUR_MODES[(COLOUR_MODES.index(self.mode) + 1) % len(COLOUR_MODES)]
        self._strips.clear()
        self.refresh()

    def action_row(self, delta: int) -> None:
        if not self._rows:
            return
        self.row_cursor = max(0, min(len(self._rows) - 1, self.row_cursor + delta))
        self._scroll_to_cursor()
        self._strips.clear()
        self.refresh()

    def action_cursor(self, delta: int) -> None:
        if self.window is None:
            return
        cell = self._cursor_cell() + delta
        if cell < 0 or cell >= self.cells:  # past the edge: the window follows
            self.action_pan(-0.25 if cell < 0 else 0.25)
            cell = max(0, min(self.cells - 1, cell))
        self.cursor_ns = self._cell_time(cell)
        self._strips.clear()
        self.refresh()

    def action_select(self) -> None:
        row = self._current_row()
        if row is None or self.window is None:
            return
        event_id = self._event_at(row, self._cursor_cell())
        if event_id is not None:
            self.post_message(self.EventChosen(event_id))

    def _current_row(self) -> ShownRow | None:
        return self._rows[self.row_cursor] if 0 <= self.row_cursor < len(self._rows) else None

    def action_toggle_lane(self) -> None:
        row = self._current_row()
        if row is not None:
            lane = row.lane
            self.set_layout(lane_ops.toggle_expanded(self.lane_layout, lane))
            self.row_cursor = next(i for i, r in enumerate(self._rows) if r.lane.key == lane.key)
            self._scroll_to_cursor()

    def action_hide_lane(self) -> None:
        row = self._current_row()
        if row is not None:
            self.set_layout(lane_ops.hide(self.lane_layout, row.lane.key))
            self.notify(f"Lane hidden: {row.lane.label} (H shows every lane).", timeout=3, markup=False)

    def action_show_lanes(self) -> None:
        self.set_layout(lane_ops.unhide_all(self.lane_layout))

    def action_pin_lane(self) -> None:
        row = self._current_row()
        if row is not None:
            key = row.lane.key
            self.set_layout(lane_ops.toggle_pinned(self.lane_layout, key))
            self.row_cursor = next(i for i, r in enumerate(self._rows) if r.lane.key == key)
            self._scroll_to_cursor()

    def action_move_lane(self, delta: int) -> None:
        row = self._current_row()
        if row is None or self.model is None:
            return
        key = row.lane.key
        self.set_layout(lane_ops.move(self.lane_layout, self.model.lanes, key, delta))
        self.row_cursor = next(i for i, r in enumerate(self._rows) if r.lane.key == key)
        self._scroll_to_cursor()

    def action_mark(self, end: int) -> None:
        if self.window is None:
            return
        t = self._cell_time(self._cursor_cell())
        if not end:
            self._anchor = t
            self.set_range(None)
            self.notify("Range starts here: move the cursor, then e.", timeout=2)
            return
        start = self._anchor if self._anchor is not None else self.window.start_ns
        end_ns = (
            self._cell_time(self._cursor_cell() + 1)
            if self._cursor_cell() + 1 < self.cells
            else self.window.end_ns
        )
        lo, hi = min(start, t), max(end_ns, start + 1)
        self._anchor = None
        self._choose_range((lo, hi))

    def _choose_range(self, span: tuple[int, int] | None) -> None:
        self.set_range(span)
        self.post_message(self.RangeChosen(span))

    def action_clear(self) -> None:
        if self.range is not None or self._anchor is not None:
            self._anchor = None
            self._choose_range(None)
        else:
            self.post_message(self.Left())

    # ---- mouse ----------------------------------------------------------------------------------
    def _place(self, event: events.MouseEvent) -> tuple[int, int] | None:
        """(line, cell) of the mouse in the content region (line 0: the header)."""
        offset = event.get_content_offset(self)
        if offset is None:
            return None
        return offset.y, offset.x - LABEL_WIDTH

    def on_mouse_down(self, event: events.MouseDown) -> None:
        place = self._place(event)
        if place is None or self.window is None:
            return
        line, cell = place
        self._drag = (cell, line, bool(event.ctrl), line < self.header_rows, self.window)
        self._dragged = False
        self.capture_mouse()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if self._drag is None or self.model is None:
            return
        place = self._place(event)
        if place is None:
            return
        start_cell, _, ctrl, ruler, window = self._drag
        cell = place[1]
        if cell == start_cell and not self._dragged:
            return
        self._dragged = True
        if ruler or ctrl:  # a range: to select (the ruler) or to zoom to (ctrl)
            self.set_range(self._dragged_span(window, start_cell, cell))
        else:  # the lanes: pan
            shift = (start_cell - cell) * window.span // max(1, self.cells)
            self.show_window(win.moved(window, shift, self.model.bounds, self.cells))

    def _dragged_span(self, window: Window, a: int, b: int) -> tuple[int, int]:
        first, last = sorted((max(0, min(a, self.cells - 1)), max(0, min(b, self.cells - 1))))
        return win.time_at(window, self.cells, first), win.time_at(window, self.cells, last + 1)

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._drag is None:
            return
        _, _, ctrl, ruler, _ = self._drag
        self._drag = None
        self.release_mouse()
        if not self._dragged:
            return
        if ctrl and self.range is not None and self.model is not None:
            span = self.range
            self.set_range(None)
            self._navigate(win.clamp(Window(*span), self.model.bounds, self.cells))
        elif ruler:
            self._choose_range(self.range)
        else:
            self.post_message(self.Navigated())

    def on_click(self, event: events.Click) -> None:
        if self._dragged:
            self._dragged = False
            return
        place = self._place(event)
        if place is None or self.window is None:
            return
        line, cell = place
        if line < self.header_rows or not 0 <= cell < self.cells:
            return
        index = self._row_at(line - self.header_rows)
        if index is None:
            return
        self.row_cursor = index
        self.cursor_ns = self._cell_time(cell)
        self._strips.clear()
        self.refresh()
        event_id = self._event_at(self._rows[index], cell)
        if event_id is not None:
            self.post_message(self.EventChosen(event_id))

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._wheel(event, 0.5)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self._wheel(event, 2.0)

    def _wheel(self, event: events.MouseEvent, factor: float) -> None:
        place = self._place(event)
        if place is None or self.window is None or self.model is None:
            return
        event.stop()
        anchor = (
            self._cell_time(place[1])
            if 0 <= place[1] < self.cells
            else (self.window.start_ns + self.window.end_ns) // 2
        )
        self._navigate(win.zoom(self.window, factor, anchor, self.model.bounds, self.cells))

    # ---- drawing --------------------------------------------------------------------------------
    def styles_changed(self) -> None:
        self._strips.clear()
        self._cell_styles.clear()

    def _style(self, name: str) -> Style:
        return self.component(f"timeline--{name}")

    def _slot_style(self, slot: int) -> Style:
        if slot == LEVEL:
            return self._style("memory")
        if slot == PEAK_SLOT:
            return self._style("peak")
        if slot == FAINT:
            return self._style("idle")
        return Style(color=PALETTE[slot % SLOTS])

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self.model is None or self.window is None:
            if y == 0:
                return self._header(width)
            if y == 1:
                return Strip([Segment(pad("  " + self.note, width), self.base_style + self._style("note"))])
            return Strip.blank(width, self.base_style)
        header = self.header_rows
        if y < header:
            return self._ruler(width) if y == header - 1 else self._header(width)
        index = self._row_at(y - header)
        if index is None:
            if not self._rows and y == header:
                text = pad("  every lane is hidden (H shows them)", width)
                return Strip([Segment(text, self.base_style + self._style("note"))])
            return Strip.blank(width, self.base_style)
        return self._lane_line(index, width)

    def _header(self, width: int) -> Strip:
        style = self.base_style + self._style("axis")
        window = self.window
        if window is None:
            return Strip([Segment(pad(" timeline", width), style)])
        t0 = self._t0()
        title = window.title or "window"
        length = fmt.duration(window.label_us) if window.subject_us is not None else fmt.span_ns(window.span)
        left = f" {title} · {length}"
        left += f" · colour: {self.mode}"
        if self.range is not None:
            left += f" · range {fmt.span_ns(self.range[1] - self.range[0])}"
        if self.legend_extra:
            left += f" · {self.legend_extra}"
        shown = [row.row.source for row in self._rows if row.first]
        legends = [source.legend for source in shown if isinstance(source, MemoryRow)]
        if legends:
            left += " · memory " + "; ".join(dict.fromkeys(legends))
        counters = [source.legend for source in shown if isinstance(source, CounterRow)]
        if counters:
            left += " · counters " + "; ".join(dict.fromkeys(counters))
        decimals = 6 if window.span < 10_000 else 3
        start, end = (fmt.fixed((t - t0) / 1e6, decimals) for t in (window.start_ns, window.end_ns))
        right = f"{start} ms → {end} ms "
        room = max(0, width - len(right) - 1)
        return Strip([Segment(pad(pad(left, room) + " " + right, width), style)])

    def _t0(self) -> int:
        trace = getattr(self.screen, "trace", None)
        return trace.t0_ns if trace is not None else 0

    def _ruler(self, width: int) -> Strip:
        assert self.window is not None
        cells = self.cells
        scale = f"{fmt.span_ns(self.window.span / cells)}/col"
        label = pad(f" {self.window.title or scale}" if self.compact else f" {scale}", LABEL_WIDTH)
        return Strip(
            [
                Segment(label, self.base_style + self._style("label")),
                Segment(pad(win.ruler(self.window, cells), cells), self.base_style + self._style("ruler")),
            ]
        )

    def _lane_line(self, index: int, width: int) -> Strip:
        assert self.model is not None and self.window is not None
        row = self._rows[index]
        cursor_here = self.has_focus and index == self.row_cursor
        key = (
            id(row.row),
            row.first,  # the label: a lane's first row, pinned, expanded (see _label)
            row.pinned,
            row.lane.key in self.lane_layout.expanded,
            self.window.start_ns,
            self.window.end_ns,
            width,
            self.mode,
            cursor_here,
            self.cursor_ns if self.has_focus else None,
            self.range,
            self.span,
        )
        found = self._strips.get(key)
        if found is not None:
            return found
        strip = self._draw_lane(row, width, cursor_here)
        if cursor_here and row.lane.detail and row.lane.key not in self.lane_layout.expanded:
            self.call_after_refresh(self._draw_depths_ahead)
        if len(self._strips) > 4 * max(8, self.size.height):
            self._strips.clear()
        self._strips[key] = strip
        return strip

    def _draw_depths_ahead(self) -> None:
        """Once the frame is out, the cursor lane's depth rows are drawn into the model's cache (its
        window, width and colours), so that Space (expand) finds them drawn: idle time, not the key's."""
        row = self._current_row()
        if row is None or self.model is None or self.window is None:
            return
        if row.lane.key in self.lane_layout.expanded:
            return
        for depth in row.lane.rows(True)[: self._visible_lines()]:  # those the screen has room for
            self.model.draw(depth, self.window, self.cells, self.mode)

    def _label(self, row: ShownRow) -> str:
        if not row.first:
            return "   " + row.row.label
        marker = " " if not row.lane.detail else "▾" if row.lane.key in self.lane_layout.expanded else "▸"
        return marker + ("•" if row.pinned else " ") + row.lane.label

    def _draw_lane(self, row: ShownRow, width: int, cursor_here: bool) -> Strip:
        """The row's strip: each run of cells of one look a segment, its style made once per look
        (:meth:`_cell_style`) until the styles change."""
        assert self.model is not None and self.window is not None
        base = self.base_style
        cells = self.cells
        window = self.window
        drawn = self.model.draw(row.row, window, cells, self.mode)
        label_style = self._style("label-cursor" if cursor_here else "label")
        segments = [Segment(pad(self._label(row), LABEL_WIDTH - 1) + " ", base + label_style)]
        overlays: list[str | None] = [None] * cells
        shade: list[str | None] = [None] * cells
        self._shade(shade, self.span, "span")
        self._shade(shade, self.range, "range")
        marks = (("marked", self.marked), ("linked", self.linked), ("selected", self.selection))
        for name, found in marks:
            if found:
                for first, last in self.model.marked_cells(row.row, found, window, cells):
                    lo, hi = max(0, first), min(cells - 1, last) + 1
                    if lo < hi:
                        overlays[lo:hi] = [name] * (hi - lo)
        if self.has_focus:
            shade[self._cursor_cell()] = "cursor"
        label_at = {first: (length, text) for first, length, text in drawn.labels}
        memo = self._cell_styles
        glyphs, slots, inverse, alt = drawn.glyphs, drawn.slots, drawn.inverse, drawn.alt
        run: tuple[object, ...] | None = None
        texts: list[str] = []
        c = 0
        while c < cells:
            slot = slots[c]
            label = label_at.get(c) if label_at else None
            if label is not None and slot != EMPTY:
                key: tuple[object, ...] = (True, slot, False, False, overlays[c], None)
                text, step = pad(" " + label[1], label[0]), label[0]
            else:
                if slot == EMPTY:
                    key = (False, EMPTY, False, False, overlays[c], shade[c])
                elif inverse[c]:
                    key = (False, slot, True, False, overlays[c], shade[c])
                else:
                    key = (False, slot, False, alt[c], overlays[c], shade[c])
                text, step = glyphs[c], 1
            if key != run:
                if run is not None:
                    segments.append(Segment("".join(texts) if len(texts) > 1 else texts[0], memo[run]))
                run, texts = key, []
                if key not in memo:
                    memo[key] = self._cell_style(key)
            texts.append(text)
            c += step
        if run is not None:
            segments.append(Segment("".join(texts), memo[run]))
        return Strip(segments).simplify()

    def _cell_style(self, key: tuple[object, ...]) -> Style:
        """The style of a cell of one look: ``(labelled, slot, inverse, alternate, overlay, shade)``
        (overlay: a mark's component, shade: the span's, the range's or the cursor's)."""
        labelled, slot, flipped, dim, overlay, shade = key
        base = self.base_style
        background = base.bgcolor
        over = self._style(overlay) if isinstance(overlay, str) else Style()
        colour = None if slot == EMPTY else self._slot_style(slot).color  # type: ignore[arg-type]
        if labelled:
            return base + Style(color=background, bgcolor=colour, bold=True) + over
        if slot == EMPTY:
            style = base + self._style("idle")
        elif flipped:
            style = base + Style(color=background, bgcolor=colour)
        else:
            style = base + Style(color=colour, dim=bool(dim))
        style = style + over
        if isinstance(shade, str):
            style = style + Style(bgcolor=self._style(shade).bgcolor)
        return style

    def _shade(self, shade: list[str | None], span: tuple[int, int] | None, name: str) -> None:
        if span is None or self.window is None:
            return
        if span[0] >= self.window.end_ns or span[1] <= self.window.start_ns:
            return
        cells = self.cells
        first = max(0, win.cell_of(self.window, cells, max(span[0], self.window.start_ns)))
        last = min(
            cells - 1, win.cell_of(self.window, cells, min(max(span[1], span[0] + 1), self.window.end_ns) - 1)
        )
        shade[first : last + 1] = [name] * max(0, last + 1 - first)
