"""One lane per rank for one step, aligned at each rank's step start (Line API).

Each lane is the rank's step on a time axis shared by every lane (0 = its own step start): ``─``
while it works, ``━`` while it is inside a collective (waiting for the others included), ``▼``
where it arrives at one — in the error colour for the rank that came last, whom the others waited
for. On the right, the step's length and its GPU time split into compute, communication,
memcpy/memset and idle (a bar of shares). The data is :func:`tracetui.ranks.view.step_lanes`.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from tracetui import formatting as fmt
from tracetui.app.widgets.cells import fit, pad
from tracetui.app.widgets.line_style import CachedStyles
from tracetui.ranks.view import StepLane

LABEL_WIDTH = 16
BAR_WIDTH = 20
LENGTH_WIDTH = 10
PARTS = ("compute", "comm", "memory", "idle")
LEGEND = (("comp", "compute"), ("comm", "comm"), ("mem", "memory"), ("idle", "idle"))


def shares(lane: StepLane, cells: int) -> list[int]:
    """How many of ``cells`` each part of the lane's GPU time gets (largest remainders; every
    cell given out)."""
    values = [lane.compute_us, lane.comm_us, lane.memory_us, lane.idle_us]
    total = sum(values)
    if total <= 0:
        return [0, 0, 0, cells]
    exact = [v / total * cells for v in values]
    given = [int(e) for e in exact]
    order = sorted(range(len(values)), key=lambda i: exact[i] - given[i], reverse=True)
    for i in order[: cells - sum(given)]:
        given[i] += 1
    return given


class RankLanes(CachedStyles, Widget):
    """The ranks' lanes of one step; ``show`` replaces them."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "rank-lanes--axis",
        "rank-lanes--label",
        "rank-lanes--current",
        "rank-lanes--work",
        "rank-lanes--collective",
        "rank-lanes--arrival",
        "rank-lanes--last",
        "rank-lanes--compute",
        "rank-lanes--comm",
        "rank-lanes--memory",
        "rank-lanes--idle",
    }

    DEFAULT_CSS = """
    RankLanes { height: auto; background: $surface; border-top: solid $panel-lighten-1; }
    RankLanes > .rank-lanes--axis { color: $text-muted; background: $panel; }
    RankLanes > .rank-lanes--label { color: $text-muted; }
    RankLanes > .rank-lanes--current { color: $text-accent; text-style: bold; }
    RankLanes > .rank-lanes--work { color: $text-primary; }
    RankLanes > .rank-lanes--collective { color: $text-warning; }
    RankLanes > .rank-lanes--arrival { color: $text-accent; text-style: bold; }
    RankLanes > .rank-lanes--last { color: $text-error; text-style: bold; }
    RankLanes > .rank-lanes--compute { color: $text-success; }
    RankLanes > .rank-lanes--comm { color: $text-warning; }
    RankLanes > .rank-lanes--memory { color: $text-primary; }
    RankLanes > .rank-lanes--idle { color: $text-disabled; }
    """

    def __init__(self, current: int | None = None, *, id: str | None = None) -> None:
        """``current``: the rank shown in the explorer (its label is marked)."""
        super().__init__(id=id)
        self.current = current
        self.step: int | None = None
        self.lanes: list[StepLane] = []

    def show(self, step: int | None, lanes: list[StepLane]) -> None:
        """The lanes of ``step`` (``None``: the cursor is outside the steps the ranks share)."""
        self.step, self.lanes = step, lanes
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return 1 + max(1, len(self.lanes))

    def _style(self, name: str) -> Style:
        return self.component(f"rank-lanes--{name}")

    @property
    def span_ns(self) -> int:
        """The time axis: the longest of the lanes' steps."""
        return max((lane.length_ns for lane in self.lanes), default=0)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            return self._axis(width)
        if not self.lanes:
            text = "  ranks: the cursor is outside the steps the ranks share" if y == 1 else ""
            return Strip([Segment(pad(text, width), self.base_style + self._style("label"))])
        if y - 1 >= len(self.lanes):
            return Strip.blank(width, self.base_style)
        return self._lane(self.lanes[y - 1], width)

    def _axis(self, width: int) -> Strip:
        base = self.base_style + self._style("axis")
        step = f"step #{self.step}" if self.step is not None else "ranks"
        left = (
            f" {step}: each rank from its step start · ▼ arrives at a collective (red: last) · ━ inside one"
        )
        right = f"0 → {fmt.duration(self.span_ns / 1000)}" if self.lanes else ""
        cells = max(0, width - LABEL_WIDTH - LENGTH_WIDTH - BAR_WIDTH - 2)
        time_part = pad(
            fit(left, LABEL_WIDTH + cells - len(right) - 1) + " ", LABEL_WIDTH + cells - len(right)
        )
        segments = [Segment(time_part + right, base), Segment(" " * (LENGTH_WIDTH + 1), base)]
        for word, part in LEGEND:  # the bar's colours
            segments.append(Segment(word.ljust(BAR_WIDTH // 4), base + self._style(part)))
        segments.append(Segment(" " * max(0, width - sum(s.cell_length for s in segments)), base))
        return Strip(segments).crop(0, width)

    def _lane(self, lane: StepLane, width: int) -> Strip:
        base = self.base_style
        current = lane.rank == self.current
        label = f" rank {lane.rank}" + (" ◀" if current else "")
        segments = [
            Segment(pad(label, LABEL_WIDTH - 1) + " ", base + self._style("current" if current else "label"))
        ]
        cells = max(0, width - LABEL_WIDTH - LENGTH_WIDTH - BAR_WIDTH - 2)
        span = self.span_ns or 1
        arrivals = sorted(lane.arrivals, key=lambda a: a.at_ns)
        styles = {name: base + self._style(name) for name in ("work", "collective", "arrival", "last")}
        for cell in range(cells):
            lo = cell * span // cells
            hi = (cell + 1) * span // cells
            if lo >= lane.length_ns:
                segments.append(Segment(" ", base))
                continue
            here = [a for a in arrivals if lo <= a.at_ns < max(hi, lo + 1)]
            if here:
                last = any(a.last for a in here)
                segments.append(Segment("▼", styles["last" if last else "arrival"]))
            elif any(a.at_ns < hi and a.at_ns + a.dur_ns > lo for a in arrivals):
                segments.append(Segment("━", styles["collective"]))
            else:
                segments.append(Segment("─", styles["work"]))
        segments.append(Segment(pad(fmt.duration(lane.length_ns / 1000), LENGTH_WIDTH, "right") + " ", base))
        for part, count in zip(PARTS, shares(lane, BAR_WIDTH), strict=True):
            if count:
                char = "·" if part == "idle" else "█"
                segments.append(Segment(char * count, base + self._style(part)))
        segments.append(Segment(" ", base))
        return Strip(segments).simplify()
