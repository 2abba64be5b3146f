"""The timeline strip: CPU thread and GPU stream lanes over the selected step (Line API).

Each cell shows how busy its lane was in that slice of time (``▁``…``█``, ``·`` idle), so
"the GPU waits for the CPU's launches" (gaps on the GPU lane while the CPU lane is busy) and
"GPU-bound" (a solid GPU lane) read at a glance. The selected node's span is highlighted, and
the GPU work it launched is drawn in the accent colour. With memory events, memory lanes follow:
each cell the highest allocated (reserved) level in it, from the device's lowest level (``▁``) to
its peak reserved (``█``), the range named on the axis, and ``▲`` where the allocated total
reached its peak.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from tracetui import formatting as fmt
from tracetui.app.widgets.cells import fit, pad
from tracetui.app.widgets.line_style import CachedStyles
from tracetui.views.memory import MemoryLane
from tracetui.views.timeline import Lane, Window

LABEL_WIDTH = 16
BLOCKS = " ▁▂▃▄▅▆▇█"
PEAK = "▲"


class Timeline(CachedStyles, Widget):
    """Lanes of the current window; ``set_window`` replaces them, ``set_highlight`` marks a span."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline--axis",
        "timeline--label",
        "timeline--cpu",
        "timeline--gpu",
        "timeline--gpu-alt",
        "timeline--idle",
        "timeline--span",
        "timeline--launched",
        "timeline--memory",
        "timeline--peak",
    }

    DEFAULT_CSS = """
    Timeline { height: auto; background: $surface; }
    Timeline > .timeline--axis { color: $text-muted; background: $panel; }
    Timeline > .timeline--label { color: $text-muted; }
    Timeline > .timeline--cpu { color: $text-primary; }
    Timeline > .timeline--gpu { color: $text-success; }
    Timeline > .timeline--gpu-alt { color: $success-darken-2; }
    Timeline > .timeline--idle { color: $text-disabled; }
    Timeline > .timeline--span { background: $primary 30%; }
    Timeline > .timeline--launched { color: $text-accent; }
    Timeline > .timeline--memory { color: $text-warning; }
    Timeline > .timeline--peak { color: $text-error; text-style: bold; }
    """

    class BlockClicked(Message):
        """A GPU block was clicked: ``event_id`` is the kernel, memcpy or memset under the mouse."""

        def __init__(self, event_id: int) -> None:
            super().__init__()
            self.event_id = event_id

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.window: Window | None = None
        self.lanes: list[Lane] = []
        self.span: tuple[int, int] | None = None
        self.launched: Lane | None = None
        self.memory: list[MemoryLane] = []

    def set_window(self, window: Window, lanes: list[Lane]) -> None:
        self.window, self.lanes = window, lanes
        self.refresh(layout=True)

    def set_memory(self, lanes: list[MemoryLane]) -> None:
        """The memory lanes, drawn under the others over every window."""
        self.memory = lanes
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return 1 + max(1, len(self.lanes)) + len(self.memory) if self.window is not None else 1

    def set_highlight(self, span: tuple[int, int] | None, launched: Lane | None = None) -> None:
        """Mark ``span`` (ns) on every lane and draw ``launched`` GPU intervals in the accent colour."""
        self.span, self.launched = span, launched
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        """Clicking a GPU block selects that GPU event in the tree. Rows and columns are counted in
        the content region (the screen's CSS gives the strip a top border)."""
        offset = event.get_content_offset(self)
        if self.window is None or offset is None or not 1 <= offset.y <= len(self.lanes):
            return
        lane = self.lanes[offset.y - 1]
        cells = self.size.width - LABEL_WIDTH
        cell = offset.x - LABEL_WIDTH
        if lane.kind != "gpu" or cells <= 0 or not 0 <= cell < cells:
            return
        step = (self.window.end_ns - self.window.start_ns) / cells
        lo = int(self.window.start_ns + cell * step)
        index = lane.block_in(lo, max(lo + 1, int(lo + step)))
        if index is not None:
            self.post_message(self.BlockClicked(lane.block_ids[index]))

    def _style(self, name: str) -> Style:
        return self.component(f"timeline--{name}")

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.base_style
        if self.window is None:
            return Strip.blank(width, base)
        if y == 0:
            return self._axis(width)
        busy_rows = max(1, len(self.lanes))
        if y > busy_rows:
            index = y - 1 - busy_rows
            if index < len(self.memory):
                return self._memory_lane(self.memory[index], width)
            return Strip.blank(width, base)
        if not self.lanes:
            text = pad("  no CPU ops or GPU work in this window", width)
            return Strip([Segment(text, base + self._style("idle"))])
        return self._lane(self.lanes[y - 1], width)

    def _axis(self, width: int) -> Strip:
        assert self.window is not None
        start, end = self.window.start_ns, self.window.end_ns
        t0 = self._t0()
        length = fmt.duration(self.window.label_us)
        left = f" {self.window.title} · {length}"
        legends = dict.fromkeys(lane.legend for lane in self.memory)
        if legends:
            left += " · memory " + "; ".join(legends)
        right = f"{fmt.offset(start, t0)} → {fmt.offset(end, t0)} "
        middle = max(0, width - len(left) - len(right))
        text = fit(left + " " * middle + right, width)
        return Strip([Segment(pad(text, width), self.base_style + self._style("axis"))])

    def _t0(self) -> int:
        trace = getattr(self.screen, "trace", None)
        return trace.t0_ns if trace is not None else 0

    def _lane(self, lane: Lane, width: int) -> Strip:
        assert self.window is not None
        base = self.base_style
        cells = max(0, width - LABEL_WIDTH)
        start, end = self.window.start_ns, self.window.end_ns
        step = (end - start) / cells if cells else 1
        segments = [Segment(pad(" " + lane.label, LABEL_WIDTH - 1) + " ", base + self._style("label"))]
        busy_style = self._style("cpu" if lane.kind == "cpu" else "gpu")
        alt_style = self._style("gpu-alt")
        idle_style = self._style("idle")
        span_style = Style(bgcolor=self._style("span").bgcolor)
        launched_style = self._style("launched")
        for cell in range(cells):
            lo = int(start + cell * step)
            hi = int(start + (cell + 1) * step)
            fraction = lane.busy(lo, max(hi, lo + 1))
            if fraction <= 0:
                char, style = "·", idle_style
            else:
                char = BLOCKS[max(1, min(8, round(fraction * 8)))]
                style = busy_style
                if lane.kind == "gpu":
                    block = lane.block_at((lo + hi) // 2)
                    if block is not None and block % 2:
                        style = alt_style
                    if self.launched is not None and self.launched.busy(lo, max(hi, lo + 1)) > 0:
                        style = launched_style
            if self.span is not None and self.span[0] < hi and self.span[1] >= lo:
                style = style + span_style
            segments.append(Segment(char, base + style))
        return Strip(segments).simplify()

    def _memory_lane(self, lane: MemoryLane, width: int) -> Strip:
        """Each cell: the highest level in its slice of time, as a block against the lane's scale."""
        assert self.window is not None
        base = self.base_style
        cells = max(0, width - LABEL_WIDTH)
        start, end = self.window.start_ns, self.window.end_ns
        step = (end - start) / cells if cells else 1
        segments = [Segment(pad(" " + lane.label, LABEL_WIDTH - 1) + " ", base + self._style("label"))]
        level_style, peak_style, idle_style = self._style("memory"), self._style("peak"), self._style("idle")
        span_style = Style(bgcolor=self._style("span").bgcolor)
        los = [int(start + cell * step) for cell in range(cells)]
        his = [max(int(start + (cell + 1) * step), lo + 1) for cell, lo in enumerate(los)]
        fractions = lane.fractions(los, his)  # one pass over the lane for the whole row
        for lo, hi, fraction in zip(los, his, fractions, strict=True):
            if lane.peak_in(lo, hi):
                char, style = PEAK, peak_style
            elif fraction is None:
                char, style = "·", idle_style
            elif lane.quiet:  # tiny against the other lanes: a faint line where anything is held
                char, style = BLOCKS[1], idle_style
            else:
                char, style = BLOCKS[max(1, min(8, round(fraction * 8)))], level_style
            if self.span is not None and self.span[0] < hi and self.span[1] >= lo:
                style = style + span_style
            segments.append(Segment(char, base + style))
        return Strip(segments).simplify()
