"""``tracetui open`` on a distributed run (a directory of rank traces, files, a glob or a dataset).

The run is analysed in a worker behind the loading screen (every rank's small tables, in parallel
processes and from the derived cache: :func:`tracetui.ranks.run.report_for`), then the Ranks
screen shows. Opening a rank loads its own trace in a worker (through ``tracetui.load`` and its
cache), behind a loading screen the user can leave with Escape; the explorer of one rank is kept
(installed) while the user looks at the Ranks screen, and dropped when another rank is opened, so
one rank's trace is held at a time. Two ranks open in the comparison screen.

The screen stack is ``[default, base]`` — the Ranks screen before a rank is open, then the rank's
explorer or a loading screen — with the Ranks screen pushed over the explorer (so that going back
pops it, without restyling the explorer), and the help, the tables and the comparison on top.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import ProgressBar, Static

from tracetui.app.app import TracetuiApp, explorer_sections, load_failed
from tracetui.app.messages import DiffLoaded, LoadProgress
from tracetui.app.rank_messages import (
    CompareRanks,
    LeaveRanks,
    OpenRank,
    RankFailed,
    RankLoaded,
    RunLoaded,
    ShowRanks,
)
from tracetui.app.rank_palette import RankCommands
from tracetui.app.save_folder import SaveFolder
from tracetui.app.screens.help import Section
from tracetui.app.screens.loading import LoadingScreen
from tracetui.errors import unexpected
from tracetui.safetext import shown

if TYPE_CHECKING:
    from tracetui.ranks.discover import Target
    from tracetui.ranks.run import RunReport
    from tracetui.ranks.view import RankChoice

RANKS = "ranks"  # the installed Ranks screen
LOADING = "rank-loading"  # the installed loading screen of a rank
EXPLORER = "rank-explorer"  # the installed explorer of the open rank
TABLES = "tables"  # the explorer's tables screen (installed by the explorer)


class RankLoadingScreen(LoadingScreen):
    """A rank (or two) loading; Escape goes back to the Ranks screen (the result is dropped)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "Back to the ranks", id="rank_loading.back"),
    ]

    def action_leave(self) -> None:
        self.post_message(ShowRanks())

    def restart(self, path: Path, title: str) -> None:
        """Show the loading of another rank (the screen is kept and reused: no mount per rank)."""
        self.path, self.label = path, shown(title)  # a file name: outside text
        for label in self.query("#loading-title").results(Static):
            label.update(Content.assemble("Loading ", (self.label, "bold $text-accent")))
        for bar in self.query(ProgressBar).results(ProgressBar):
            bar.update(progress=0)
        self.show_stage("starting")


class RunApp(TracetuiApp):
    """The explorer of a distributed run: the Ranks screen, and one rank at a time."""

    COMMANDS = TracetuiApp.COMMANDS | {RankCommands}

    def __init__(
        self,
        target: Target,
        name: str,
        *,
        freeze_gc: bool = False,
        max_inflate: float | None = None,
        workers: int | None = None,
        save_folder: SaveFolder | None = None,
    ) -> None:
        """``target``: the run (a rank set or a dataset); ``name``: how the screens call it.
        ``freeze_gc``: full garbage collections only while the user is idle (nothing is frozen:
        the ranks' traces come and go). ``max_inflate``: as for :func:`tracetui.load`; ``workers``: the
        processes that load the ranks. ``save_folder``: where files go (:class:`TracetuiApp`)."""
        super().__init__(save_folder=save_folder)
        self.target = target
        self.freeze_gc = freeze_gc
        self.max_inflate = max_inflate
        self.loaders = workers
        if not isinstance(target, Path):  # before Textual captures stderr (see prepare_workers)
            from tracetui.ranks.engine import prepare_workers

            prepare_workers(target.ranks, workers)
        self.run_name = name
        self.report: RunReport | None = None
        self.choices: list[RankChoice] = []
        self.current: RankChoice | None = None  # the rank whose explorer is installed
        self._ticket = 0  # answers to older requests (a rank, a comparison) are dropped

    @property
    def current_rank(self) -> int | None:
        return None if self.current is None else self.current.rank

    def on_mount(self) -> None:
        self.push_screen(LoadingScreen(Path(self.run_name), title=f"the ranks of {self.run_name}"))
        self.load_run()

    # ---- the run --------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="load")
    def load_run(self) -> None:
        def progress(done: int, total: int) -> None:
            self.post_message(LoadProgress(f"loading ranks: {done} of {total}"))

        try:
            from tracetui.ranks.run import report_for
            from tracetui.ranks.view import run_tables

            report = report_for(
                self.target,
                progress=progress,
                summary=False,
                max_inflate=self.max_inflate,
                workers=self.loaders,
            )
            tables = run_tables(report)
            from tracetui.app.screens import ranks  # noqa: F401 - imported here, off the UI thread

            if self.freeze_gc:
                self.start_idle_collection(freeze=False)
        except unexpected() as exc:
            self.post_message(load_failed(exc))
        else:
            self.post_message(RunLoaded(report, tables))

    def on_run_loaded(self, message: RunLoaded) -> None:
        from tracetui.app.screens.ranks import RanksScreen
        from tracetui.insight.distributions import rank_step_times
        from tracetui.ranks.view import rank_choices, run_facts, run_notes
        from tracetui.views.distribution import steps_across_ranks

        self.report = message.report
        self.choices = rank_choices(message.report)
        facts = run_facts(message.report, self.run_name)
        steps = steps_across_ranks(rank_step_times(message.report.analysis.rank_steps))
        screen = RanksScreen(message.tables, facts, run_notes(message.report), steps=steps)
        self.install_screen(screen, RANKS)
        self.switch_screen(RANKS)

    def on_show_ranks(self, _: ShowRanks) -> None:
        """The Ranks screen: pushed over the rank's explorer (popping it back costs no restyle),
        or in place of a loading screen (whose rank or comparison is then not wanted)."""
        if not self.is_screen_installed(RANKS):
            return
        self._ticket += 1
        ranks = self.get_screen(RANKS)
        if ranks in self.screen_stack:
            while self.screen is not ranks:
                self.pop_screen()
            return
        while len(self.screen_stack) > 2:  # the help, the tables, a comparison on top
            self.pop_screen()
        if isinstance(self.screen, LoadingScreen):
            self.switch_screen(RANKS)
        else:
            self.push_screen(RANKS)

    def on_leave_ranks(self, _: LeaveRanks) -> None:
        if self.is_screen_installed(EXPLORER) and len(self.screen_stack) > 2:
            self.pop_screen()  # the explorer is under the Ranks screen
        else:
            self.notify("Enter opens the rank under the cursor.", timeout=3)

    # ---- one rank ---------------------------------------------------------------------------------
    def choice(self, rank: int) -> RankChoice | None:
        return next((c for c in self.choices if c.rank == rank), None)

    def on_open_rank(self, message: OpenRank) -> None:
        choice = self.choice(message.rank)
        if choice is None or self.report is None:
            self.notify(f"No rank {message.rank} in this run.", severity="warning", timeout=3)
            return
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if self.current is not None and self.current.rank == choice.rank:
            self.switch_screen(EXPLORER)  # already the top, unless a load failed meanwhile
            return
        self._ticket += 1
        old = self._installed(TABLES, EXPLORER)
        self.current = None
        self.switch_screen(self._loading(choice))
        self.call_after_refresh(self._drop, old)  # after the loading screen's first frame
        self.load_rank(choice, self._ticket)

    def _loading(self, choice: RankChoice) -> str:
        """The (installed, reused) loading screen, showing ``choice``."""
        title = f"{choice.title}: {choice.path.name}"
        if not self.is_screen_installed(LOADING):
            self.install_screen(RankLoadingScreen(choice.path, title=title), LOADING)
        else:
            screen = self.get_screen(LOADING)
            assert isinstance(screen, RankLoadingScreen)
            screen.restart(choice.path, title)
        return LOADING

    def _installed(self, *names: str) -> dict[str, Screen[object]]:
        return {name: self.get_screen(name) for name in names if self.is_screen_installed(name)}

    def _drop(self, screens: dict[str, Screen[object]]) -> None:
        """Forget a rank's explorer and its tables screen (so that one rank's trace is held at a
        time), unless they were replaced meanwhile or are shown."""
        for name, screen in screens.items():
            mine = self.is_screen_installed(name) and self.get_screen(name) is screen
            if mine and screen not in self.screen_stack:
                self.uninstall_screen(name)
                screen.remove()

    @work(thread=True, exclusive=True, group="rank")
    def load_rank(self, choice: RankChoice, ticket: int) -> None:
        def progress(stage: str) -> None:
            if ticket == self._ticket:
                self.post_message(LoadProgress(stage))

        try:
            from tracetui.ranks.run import rank_trace
            from tracetui.views.tree import TreeModel

            trace = rank_trace(self.target, choice.rank, progress, self.max_inflate)
            progress("building the tree")
            model = TreeModel(trace)
            model.first_frame()  # decodes the hot chain's kernel names off the UI thread, keeps the rows
            from tracetui.app.screens import rank_explorer  # noqa: F401 - imported here, off the UI thread
        except Exception as exc:
            self.post_message(RankFailed(choice, load_failed(exc).line, ticket))
        else:
            self.post_message(RankLoaded(choice, trace, model, ticket))

    def on_rank_loaded(self, message: RankLoaded) -> None:
        if message.ticket != self._ticket or self.report is None:
            return
        from tracetui.app.screens.rank_explorer import RankExplorerScreen

        self._drop(self._installed(TABLES, EXPLORER))
        screen = RankExplorerScreen(
            message.trace, message.model, choice=message.choice, choices=self.choices, report=self.report
        )
        self.install_screen(screen, EXPLORER)
        self.current = message.choice
        self.switch_screen(EXPLORER)

    def on_rank_failed(self, message: RankFailed) -> None:
        if message.ticket != self._ticket:
            return
        self.switch_screen(RANKS)
        line = shown(message.line, limit=None)
        self.notify(line, title=f"{message.choice.title} not loaded", severity="error", markup=False)

    # ---- two ranks ----------------------------------------------------------------------------------
    def on_compare_ranks(self, message: CompareRanks) -> None:
        a, b = self.choice(message.a), self.choice(message.b)
        if a is None or b is None or a.rank == b.rank:
            self.notify("Compare needs two different ranks of this run.", severity="warning", timeout=3)
            return
        while len(self.screen_stack) > 2:
            self.pop_screen()
        self._ticket += 1
        self.push_screen(RankLoadingScreen(a.path, title=f"rank {a.rank} and rank {b.rank}"))
        self.load_pair(a, b, self._ticket)

    @work(thread=True, exclusive=True, group="rank-pair")
    def load_pair(self, a: RankChoice, b: RankChoice, ticket: int) -> None:
        def progress(stage: str) -> None:
            if ticket == self._ticket:
                self.post_message(LoadProgress(stage))

        try:
            from tracetui.app.diff_app import compare_traces
            from tracetui.ranks.run import rank_paths

            path_a, path_b = rank_paths(self.target, [a.rank, b.rank])
            data, model = compare_traces(path_a, path_b, progress, self.max_inflate)
            from tracetui.app.screens import rank_diff  # noqa: F401 - imported here, off the UI thread
        except Exception as exc:
            if ticket == self._ticket:
                self.call_from_thread(self._pair_failed, load_failed(exc).line)
        else:
            if ticket == self._ticket:
                self.post_message(DiffLoaded(data, model))

    def _pair_failed(self, line: str) -> None:
        if isinstance(self.screen, RankLoadingScreen):
            self.pop_screen()
        self.notify(shown(line, limit=None), title="comparison not opened", severity="error", markup=False)

    def on_diff_loaded(self, message: DiffLoaded) -> None:
        from tracetui.app.screens.rank_diff import RankDiffScreen

        if isinstance(self.screen, RankLoadingScreen):
            self.switch_screen(RankDiffScreen(message.data, message.model))

    # ---- keys -----------------------------------------------------------------------------------------
    def help_sections(self) -> list[Section]:
        from tracetui.app.screens.rank_explorer import RankExplorerScreen
        from tracetui.app.screens.ranks import RanksScreen
        from tracetui.app.widgets.rank_table import RankTable

        run: list[BindingType] = [*RanksScreen.BINDINGS, *RankTable.BINDINGS]
        return [
            ("Ranks screen", run),
            ("A rank", RankExplorerScreen.BINDINGS),
            *explorer_sections(),
            ("Everywhere", self.everywhere()),
        ]
