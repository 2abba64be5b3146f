"""Messages that workers post back to the UI thread (workers never touch widgets)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from textual.content import Content

    from tracetui.app.widgets.expect_panel import Checks
    from tracetui.compare.pair_tree import PairTree
    from tracetui.insight.memory import Memory
    from tracetui.trace import Trace
    from tracetui.views.insight import Insight
    from tracetui.views.memory import MemoryLane
    from tracetui.views.table_spec import TableSpec
    from tracetui.views.timeline.area import Area
    from tracetui.views.timeline.model import Marks, TimelineModel
    from tracetui.views.timeline.window import Window
    from tracetui.views.tree import NodeKey, TreeModel


@dataclass
class LoadProgress(Message):
    """The loader started a stage (``reading``, ``decoding``, …), or is this far into it."""

    stage: str
    fraction: float | None = None


@dataclass
class TraceLoaded(Message):
    """The trace and its first tree are ready."""

    trace: Trace
    model: TreeModel
    checks: Checks | None = None


@dataclass
class LoadFailed(Message):
    """Loading failed: ``line`` is the CLI's one-line error; ``code`` the exit status."""

    line: str
    code: int


@dataclass
class ModelReady(Message):
    """A tree rebuilt for new filters."""

    model: TreeModel


@dataclass
class DetailsReady(Message):
    """The details of ``key``."""

    key: NodeKey
    content: Content


@dataclass
class TimelineModelReady(Message):
    """The trace's timeline (its index built or read back)."""

    model: TimelineModel


@dataclass
class TimelineReady(Message):
    """The window the timeline follows (the tree cursor's step)."""

    window: Window


@dataclass
class SelectionReady(Message):
    """The timeline's selected event, where it is drawn and what it is linked to (its flows)."""

    event_id: int | None
    selection: Marks
    linked: Marks
    count: int


@dataclass
class AreaReady(Message):
    """What lies in the timeline's range (None: no range)."""

    area: Area | None


@dataclass
class TablesReady(Message):
    """The tables (and the per-kernel roofline rows), the
    trace's memory reading and its timeline lanes."""

    tables: dict[str, TableSpec]
    insight: Insight
    memory: Memory | None = None
    memory_lanes: list[MemoryLane] | None = None


@dataclass
class FindReady(Message):
    """Matches of a search, in tree order; ``jump``: go to the first one."""

    search: Search
    matches: list[int]
    jump: bool


@dataclass(frozen=True)
class Search:
    """What ``n`` / ``N`` walk through: a find query, or the occurrences of one exact name."""

    query: str
    label: str = "find"
    exact: bool = False
    cats: tuple[str, ...] | None = None


@dataclass
class DiffLoaded(Message):
    """Both traces of a comparison are loaded and aligned."""

    data: dict[str, Any]
    model: PairTree


@dataclass
class DifferenceFound(Message):
    """``n`` / ``N``: the next (previous) difference, ``None`` when there is none; ``wrapped``: the
    search went past the end and started over."""

    pid: int | None
    wrapped: bool
