"""The time range a timeline draws, and what the keys do to it: zoom, pan, fit, the cells and the ruler.

All in integer ns. A window of ``cells`` columns is cut at ``lo + i * span // cells`` (so every cell
is a whole number of ns, and the cells tile the window exactly); it is never narrower than one ns per
column, nor wider than the trace (``bounds``), and it stays inside the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tracetui import formatting as fmt

ZOOM_STEP = 2.0  # w / s: the window halves or doubles
PAN_STEP = 0.25  # a / d: a quarter of the window
LABEL_GAP = 12  # cells at least between two of the ruler's labels


@dataclass(frozen=True)
class Window:
    """The time range drawn (``[start_ns, end_ns)``), and what it is (the axis writes it)."""

    start_ns: int
    end_ns: int
    title: str = ""
    subject_us: float | None = None
    """The duration of what the title names (a step's, a zoomed node's); None: the window's own."""

    @property
    def span(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def label_us(self) -> float:
        """What the axis writes after the title."""
        return self.subject_us if self.subject_us is not None else self.span / 1000


def clamp(window: Window, bounds: tuple[int, int], cells: int) -> Window:
    """``window`` at least one ns per cell and at most the whole trace, moved inside ``bounds``."""
    low, high = bounds
    cells = max(1, cells)
    whole = max(high - low, cells)
    span = min(max(window.span, cells), whole)
    start = window.start_ns
    if span != window.span:  # keep the centre
        start = window.start_ns + (window.span - span) // 2
    start = max(low, min(start, low + whole - span))
    return replace(window, start_ns=start, end_ns=start + span)


def zoom(window: Window, factor: float, anchor_ns: int, bounds: tuple[int, int], cells: int) -> Window:
    """The window ``factor`` times as long (below 1: zoomed in), ``anchor_ns`` where it was on screen."""
    span = max(1, round(window.span * factor))
    share = (anchor_ns - window.start_ns) / window.span if window.span else 0.5
    start = anchor_ns - round(span * share)
    return clamp(Window(start, start + span), bounds, cells)


def pan(window: Window, share: float, bounds: tuple[int, int], cells: int) -> Window:
    """The window moved by ``share`` of its length (negative: back in time)."""
    shift = round(window.span * share)
    return clamp(Window(window.start_ns + shift, window.end_ns + shift), bounds, cells)


def moved(window: Window, shift_ns: int, bounds: tuple[int, int], cells: int) -> Window:
    """The window moved by ``shift_ns`` (a drag)."""
    return clamp(Window(window.start_ns + shift_ns, window.end_ns + shift_ns), bounds, cells)


def fit(start_ns: int, end_ns: int, bounds: tuple[int, int], cells: int, title: str = "") -> Window:
    """``[start_ns, end_ns)`` with a margin of a twentieth on each side (nothing at the trace's ends)."""
    margin = max(1, (end_ns - start_ns) // 20)
    return clamp(Window(start_ns - margin, end_ns + margin, title), bounds, cells)


def whole(bounds: tuple[int, int], cells: int) -> Window:
    """The whole trace."""
    return clamp(Window(bounds[0], bounds[1], "whole trace"), bounds, cells)


def edges(window: Window, cells: int) -> list[int]:
    """The ``cells + 1`` cut points of the window: cell ``i`` is ``[edges[i], edges[i + 1])``."""
    lo, span = window.start_ns, window.span
    return [lo + (i * span) // cells for i in range(cells + 1)]


def cell_of(window: Window, cells: int, t: int) -> int:
    """The cell holding ``t`` (``-1`` before the window, ``cells`` after it)."""
    if t < window.start_ns:
        return -1
    if t >= window.end_ns:
        return cells
    return ((t - window.start_ns + 1) * cells - 1) // window.span


def time_at(window: Window, cells: int, cell: int) -> int:
    """The start of ``cell``."""
    return window.start_ns + (cell * window.span) // cells


def tick_step(window: Window, cells: int) -> int:
    """The ruler's step: the smallest 1, 2 or 5 times a power of ten ns that keeps its labels
    :data:`LABEL_GAP` cells apart."""
    wanted = window.span * LABEL_GAP / max(1, cells)
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= wanted:
                return step * factor
        step *= 10


def ruler(window: Window, cells: int) -> str:
    """The ruler line: ``│+50 µs`` at every tick, relative to the window's start."""
    step = tick_step(window, cells)
    line = [" "] * cells
    t = window.start_ns  # the ticks are counted from the window's start (the header writes where it is)
    while t < window.end_ns:
        cell = cell_of(window, cells, t)
        label = "│" + fmt.tick(t - window.start_ns, step)
        if cell + len(label) <= cells:  # a label cut at the edge is left out
            line[cell : cell + len(label)] = label
        t += step
    return "".join(line)
