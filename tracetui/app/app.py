"""The Textual app: load the trace in a worker behind a loading screen, then explore it.

Only Textual and the light screens are imported up front: polars and the explorer's modules
are imported by the loading worker, so the loading screen paints while they load.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import constants, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.driver import Driver
from textual.screen import Screen

from tracetui.app.collector import IdleCollection
from tracetui.app.messages import LoadFailed, LoadProgress, TraceLoaded
from tracetui.app.palette import NameSearch
from tracetui.app.save_folder import SaveFolder
from tracetui.app.saving import save_screen
from tracetui.app.screens.error import ErrorScreen
from tracetui.app.screens.help import MOUSE, HelpScreen, Mouse, Section
from tracetui.app.screens.loading import LoadingScreen
from tracetui.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, TraceError, failure, unexpected

if TYPE_CHECKING:
    from tracetui.compare.expectations import Expectation

EXPECT_KEY = "explorer.expectations"  # the panel's key: in the help only with --expect
NAVIGATION = frozenset({"cursor_up", "cursor_down", "page_up", "page_down", "first", "last", "column"})


def load_failed(exc: BaseException) -> LoadFailed:
    """The CLI's one line for a loading error (an unexpected exception, or a polars panic, is a
    bug: still one line; out of memory says so)."""
    if isinstance(exc, TraceError):
        return LoadFailed(f"tracetui: {exc}", EXIT_BAD_INPUT)
    problem, code = failure(exc)
    return LoadFailed(f"tracetui: {problem}" + (" (please report it)" if code == EXIT_INTERNAL else ""), code)


class TracetuiApp(IdleCollection):
    """What the explorer and the comparison share: styles, keys, help, palette, the error screen."""

    TITLE = "tracetui"
    CSS_PATH = "styles.tcss"
    # Textual declares it ``ClassVar[...] | None``, which mypy reads as an instance variable.
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (110, "-wide")]  # type: ignore[misc]
    COMMANDS = App.COMMANDS | {NameSearch}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1,question_mark", "help", "Help", id="app.help", tooltip="every key"),
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding(
            "ctrl+s",
            "save_svg",
            "Save SVG",
            show=False,
            id="app.save_svg",
            tooltip="save the screen as an SVG picture in the current folder",
        ),
    ]

    def __init__(self, *, save_folder: SaveFolder | None = None) -> None:
        """``save_folder``: where exports and saved screens go (default: the current folder)."""
        super().__init__()
        self.save_folder = save_folder or SaveFolder.here()

    def get_driver_class(self) -> type[Driver]:
        """Textual's choice, but where that is Textual's web driver (textual-serve names it), one
        that writes each packet whole (:mod:`tracetui.app.web_driver`)."""
        driver = super().get_driver_class()
        if constants.DRIVER is not None:  # named from outside: only then can it be the web driver
            from textual.drivers.web_driver import WebDriver

            from tracetui.app.web_driver import WholePacketsDriver

            if driver is WebDriver:
                return WholePacketsDriver
        return driver

    def trace_paths(self) -> list[Path]:
        """The traces a saved picture's file name names (override)."""
        return []

    def action_save_svg(self) -> None:
        """Save the current screen as SVG; the notification says where."""
        try:
            saved = save_screen(self, self.trace_paths(), self.save_folder.root)
            self.notify(saved, title="Saved", markup=False)
        except TraceError as exc:
            self.notify(str(exc), title="Not saved", severity="error", markup=False)

    def on_load_progress(self, message: LoadProgress) -> None:
        if self.screen_stack and isinstance(self.screen, LoadingScreen):  # none: the app is leaving
            self.screen.show_stage(message.stage, message.fraction)

    def on_load_failed(self, message: LoadFailed) -> None:
        self.switch_screen(ErrorScreen(message.line, message.code))

    # ---- help and palette ---------------------------------------------------------------------
    def help_sections(self) -> list[Section]:
        """Every screen's and widget's keys, for the help screen (override)."""
        return [("Everywhere", self.everywhere())]

    def everywhere(self) -> list[BindingType]:
        return [*self.BINDINGS, Binding("ctrl+p", "command_palette", "Command palette")]

    def help_mouse(self) -> Mouse:
        """What the mouse does here, for the help screen (override)."""
        return MOUSE

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_sections(), self.help_mouse()))

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        # Textual's own "Screenshot" saves to another folder with its own naming: ctrl+s is the one way.
        yield from (c for c in super().get_system_commands(screen) if c.title != "Screenshot")
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            action = binding.action.split("(")[0]
            if action in NAVIGATION or action in ("quit", "command_palette") or binding.action in seen:
                continue
            if not binding.description or not active.enabled:
                continue
            seen.add(binding.action)
            yield SystemCommand(
                binding.description,
                binding.tooltip or f"{binding.description} ({self.get_key_display(binding)})",
                partial(self.run_action, binding.action, active.node),
            )


class TraceApp(TracetuiApp):
    """``tracetui open``: the dispatch-chain explorer."""

    def __init__(
        self,
        path: Path,
        *,
        sample: bool = False,
        freeze_gc: bool = False,
        expect: tuple[Path, list[Expectation]] | None = None,
        max_inflate: float | None = None,
        save_folder: SaveFolder | None = None,
        workers: int | None = None,
    ) -> None:
        """``expect``: an expectations file and its (validated) expectations, checked once loaded.
        ``freeze_gc``: once loaded, freeze what exists and run full garbage collections only while
        the user is idle (:mod:`tracetui.app.collector`). For a process that runs one app:
        ``tracetui open``. ``max_inflate``, ``workers``: as for :func:`tracetui.load`. ``save_folder``: where
        files go (:class:`TracetuiApp`)."""
        super().__init__(save_folder=save_folder)
        self.path = path
        self.sample = sample
        self.freeze_gc = freeze_gc
        self.expect = expect
        self.max_inflate = max_inflate
        self.scan_cores = workers

    def trace_paths(self) -> list[Path]:
        return [self.path]

    def on_mount(self) -> None:
        self.push_screen(LoadingScreen(self.path))
        self.load_trace()

    # ---- loading ------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="load")
    def load_trace(self) -> None:
        def progress(stage: str) -> None:
            self.post_message(LoadProgress(stage))

        try:
            from tracetui.trace import load
            from tracetui.views.tree import TreeModel

            trace = load(
                self.path,
                progress=progress,
                fraction=self._reading,
                max_inflate=self.max_inflate,
                workers=self.scan_cores,
            )
            progress("building the tree")
            model = TreeModel(trace)
            model.first_frame()  # decodes the hot chain's kernel names off the UI thread, keeps the rows
            checks = None
            if self.expect is not None:
                progress("checking expectations")
                from tracetui.app.widgets.expect_panel import Checks
                from tracetui.compare.check import check_trace

                checks = Checks(self.expect[0], check_trace(trace, self.expect[1]))
            from tracetui.app.screens import explorer  # noqa: F401 - imported here, off the UI thread

            if self.freeze_gc:
                self.start_idle_collection()
        except unexpected() as exc:
            self.post_message(load_failed(exc))
        else:
            self.post_message(TraceLoaded(trace, model, checks))

    def _reading(self, fraction: float) -> None:
        self.post_message(LoadProgress("reading", fraction))

    def on_trace_loaded(self, message: TraceLoaded) -> None:
        from tracetui.app.screens.explorer import ExplorerScreen

        screen = ExplorerScreen(message.trace, message.model, sample=self.sample, checks=message.checks)
        self.switch_screen(screen)

    def help_sections(self) -> list[Section]:
        return [*explorer_sections(with_expect=self.expect is not None), ("Everywhere", self.everywhere())]


def explorer_sections(with_expect: bool = False) -> list[Section]:
    """The explorer's keys, for the help: the tree, find / filters / views, the tables (and the
    expectations panel of ``--expect``)."""
    from tracetui.app.screens.explorer import ExplorerScreen
    from tracetui.app.screens.tables import TablesScreen
    from tracetui.app.screens.why import WhyScreen
    from tracetui.app.widgets.dispatch_tree import DispatchTree
    from tracetui.app.widgets.expect_panel import ExpectPanel
    from tracetui.app.widgets.table_view import TableView
    from tracetui.app.widgets.timeline import Timeline

    views = [b for b in ExplorerScreen.BINDINGS if with_expect or _id(b) != EXPECT_KEY]
    sections: list[Section] = [
        ("Tree", DispatchTree.BINDINGS),
        ("Find, filters, views", views),
        ("Timeline (v; while it has the focus)", Timeline.BINDINGS),
        ("Tables", [*TablesScreen.BINDINGS, *TableView.BINDINGS]),
        ("Why view (y)", why_keys(WhyScreen.BINDINGS, TableView.BINDINGS)),
    ]
    if with_expect:
        go = Binding("enter", "select", "Go to the node that broke the check")
        sections.append(("Expectations panel", [go, *ExpectPanel.BINDINGS]))
    return sections


def why_keys(screen: list[BindingType], table: list[BindingType]) -> list[BindingType]:
    """The Why view's keys: its own, its table's, Enter going to the path item's event."""
    go = Binding(
        "enter", "select", "Go to the event", tooltip="of the item, the one with the most time on the path"
    )
    rows = [b for b in table if not (isinstance(b, Binding) and b.action == "select")]
    return [go, *screen, *rows]


def _id(binding: BindingType) -> str | None:
    return binding.id if isinstance(binding, Binding) else None
