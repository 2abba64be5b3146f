"""Messages of a distributed run's views: what workers post back (a run, a rank, lanes loaded) and
what the screens and the palette ask the app for (open a rank, compare two, show the Ranks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from tracetui.ranks.run import RunReport
    from tracetui.ranks.view import RankChoice, StepLane, TableView
    from tracetui.trace import Trace
    from tracetui.views.tree import TreeModel


@dataclass
class RunLoaded(Message):
    """Every rank's small tables are analysed: the report and the Ranks screen's tables."""

    report: RunReport
    tables: dict[str, TableView]


@dataclass
class RankLoaded(Message):
    """A rank's trace and its first tree are ready (``ticket``: which request it answers)."""

    choice: RankChoice
    trace: Trace
    model: TreeModel
    ticket: int


@dataclass
class RankFailed(Message):
    """A rank could not be loaded: ``line`` says why, in one line."""

    choice: RankChoice
    line: str
    ticket: int


@dataclass
class OpenRank(Message):
    """Show ``rank``'s tree, tables and timeline."""

    rank: int


@dataclass
class CompareRanks(Message):
    """Open the comparison of rank ``a`` (before) and rank ``b`` (after)."""

    a: int
    b: int


@dataclass
class ShowRanks(Message):
    """Show the Ranks screen."""


@dataclass
class RankLanesReady(Message):
    """The ranks' lanes of ``step`` (``None``: the cursor is outside the shared steps)."""

    step: int | None
    lanes: list[StepLane]


@dataclass
class LeaveRanks(Message):
    """Leave the Ranks screen, back to the rank that was open."""
