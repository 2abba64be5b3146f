"""``tracetui diff A B`` on a terminal: load both traces and align them in a worker, then compare."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work

from tracetui.app.app import TracetuiApp, load_failed
from tracetui.app.messages import DiffLoaded, LoadProgress
from tracetui.app.screens.help import DIFF_MOUSE, Mouse, Section
from tracetui.app.screens.loading import LoadingScreen
from tracetui.errors import unexpected

if TYPE_CHECKING:
    from tracetui.compare.pair_tree import PairTree


def compare_traces(
    path_a: Path, path_b: Path, progress: Callable[[str], None], max_inflate: float | None = None
) -> tuple[dict[str, Any], PairTree]:
    """Load both traces (each through ``tracetui.load`` and its cache), compare and align them:
    the comparison screen's data and tree (for a worker; ``progress`` hears each stage)."""
    from tracetui.compare.diff_data import diff_data
    from tracetui.compare.pair_tree import PairTree
    from tracetui.trace import load
    from tracetui.views.tree import TreeModel

    a, b = (load(path, progress=progress, max_inflate=max_inflate) for path in (path_a, path_b))
    progress("comparing")
    data = diff_data(a, b)
    progress("aligning the trees")
    model = PairTree(TreeModel(a), TreeModel(b))
    model.hottest_path()  # aligns the levels shown first, off the UI thread
    from tracetui.app.screens import diff  # noqa: F401 - imported here, off the UI thread

    return data, model


class DiffApp(TracetuiApp):
    """The comparison screen for trace A (before) and trace B (after)."""

    def __init__(
        self, path_a: Path, path_b: Path, *, freeze_gc: bool = False, max_inflate: float | None = None
    ) -> None:
        """``freeze_gc``, ``max_inflate``: as for :class:`~tracetui.app.app.TraceApp`."""
        super().__init__()
        self.paths = (path_a, path_b)
        self.freeze_gc = freeze_gc
        self.max_inflate = max_inflate

    def trace_paths(self) -> list[Path]:
        return list(self.paths)

    def on_mount(self) -> None:
        a, b = self.paths
        self.push_screen(LoadingScreen(a, title=f"{a.name} and {b.name}"))
        self.load_both()

    @work(thread=True, exclusive=True, group="load")
    def load_both(self) -> None:
        def progress(stage: str) -> None:
            self.post_message(LoadProgress(stage))

        try:
            data, model = compare_traces(*self.paths, progress, self.max_inflate)
            if self.freeze_gc:
                self.start_idle_collection()
        except unexpected() as exc:
            self.post_message(load_failed(exc))
        else:
            self.post_message(DiffLoaded(data, model))

    def on_diff_loaded(self, message: DiffLoaded) -> None:
        from tracetui.app.screens.diff import DiffScreen

        self.switch_screen(DiffScreen(message.data, message.model))

    def help_sections(self) -> list[Section]:
        from tracetui.app.screens.diff import DiffScreen
        from tracetui.app.widgets.diff_tree import DiffTree

        return [("Comparison", [*DiffTree.BINDINGS, *DiffScreen.BINDINGS]), ("Everywhere", self.everywhere())]

    def help_mouse(self) -> Mouse:
        return DIFF_MOUSE
