"""The explorer on one rank of a distributed run: the single-trace explorer, with the rank in the
header ("rank 2 of 4"), keys to switch ranks and to the Ranks screen, and under the timeline one
lane per rank for the cursor's step, aligned at the ranks' step starts
(:class:`~tracetui.app.widgets.rank_lanes.RankLanes`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from tracetui.app.rank_messages import OpenRank, RankLanesReady, ShowRanks
from tracetui.app.screens.explorer import ExplorerScreen
from tracetui.app.widgets.dispatch_tree import DispatchTree
from tracetui.app.widgets.rank_lanes import RankLanes
from tracetui.app.widgets.timeline import Timeline
from tracetui.app.widgets.trace_header import TraceHeader
from tracetui.ranks.lanes import rank_lanes
from tracetui.ranks.view import RankChoice, pick_lanes, step_lanes, step_rank

if TYPE_CHECKING:
    from tracetui.ranks.run import RunReport
    from tracetui.trace import Trace
    from tracetui.views.timeline.model import TimelineModel
    from tracetui.views.tree import TreeModel

MAX_LANES = 8  # rank lanes shown at once (the current rank's and the last arrivers' first)


class RankExplorerScreen(ExplorerScreen):
    """One rank's dispatch tree, tables and timeline, within its run."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "right_square_bracket", "step_rank(1)", "Next rank", id="rank.next", tooltip="load the next rank"
        ),
        Binding(
            "left_square_bracket",
            "step_rank(-1)",
            "Previous rank",
            id="rank.previous",
            tooltip="load the previous rank",
        ),
        Binding(
            "R",
            "ranks",
            "Ranks",
            id="rank.ranks",
            tooltip="the Ranks table, collectives and kernels across ranks",
        ),
    ]

    def __init__(
        self,
        trace: Trace,
        model: TreeModel,
        *,
        choice: RankChoice,
        choices: list[RankChoice],
        report: RunReport,
    ) -> None:
        super().__init__(trace, model)
        self.choice = choice
        self.choices = choices
        self.report = report
        self._lanes_step: int | None = -1  # the step whose lanes are shown (-1: none yet)
        self._step_numbers = dict(trace.steps.select("id", "step").iter_rows())

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, TraceHeader):
                widget = TraceHeader(self.trace, rank=self.choice.title)
            yield widget
            if isinstance(widget, Timeline):
                yield RankLanes(self.choice.rank, id="rank-lanes")

    # ---- switching -----------------------------------------------------------------------------
    def action_step_rank(self, delta: int) -> None:
        if len(self.choices) > 1:
            self.post_message(OpenRank(step_rank(self.choices, self.choice.rank, delta).rank))

    def action_ranks(self) -> None:
        self.post_message(ShowRanks())

    def timeline_ready(self, model: TimelineModel) -> None:
        """Every rank of the run as a lane of the timeline, on this rank's clock."""
        model.set_lanes("rank", rank_lanes(self.report, self.choice.rank))

    # ---- the ranks' lanes of the cursor's step --------------------------------------------------
    @on(DispatchTree.CursorMoved)
    def _follow_step(self, event: DispatchTree.CursorMoved) -> None:
        if event.key is None:
            return
        step_id = self.model.step_of(event.key)
        step = self._step_numbers.get(step_id) if step_id is not None else None
        if step == self._lanes_step:
            return
        self._lanes_step = step
        self._pending.add("rank-lanes")
        self.load_lanes(step)

    @work(thread=True, exclusive=True, group="rank-lanes")
    def load_lanes(self, step: int | None) -> None:
        lanes = step_lanes(self.report, step) if step is not None else []
        self.post_message(RankLanesReady(step, pick_lanes(lanes, self.choice.rank, MAX_LANES)))

    def on_rank_lanes_ready(self, message: RankLanesReady) -> None:
        if message.step != self._lanes_step:
            return
        self._pending.discard("rank-lanes")
        self.query_one(RankLanes).show(message.step, message.lanes)
