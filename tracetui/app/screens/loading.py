"""The screen shown while the trace loads: its name, the loader's stages as they start, and how far
the reading is (a file's bytes read)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import Center, Middle
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, ProgressBar, Static

from tracetui.safetext import shown

STAGES = ("reading", "decoding", "tabulating", "nesting", "linking", "counting", "building the tree")
# Share of the bar per stage: reading a big trace takes about half the time.
WEIGHTS = {"reading": 5}


class LoadingScreen(Screen[None]):
    """``Loading NAME`` with a progress bar over the loader's stages."""

    DEFAULT_CSS: ClassVar[str] = """
    LoadingScreen { align: center middle; }
    LoadingScreen #loading-title { width: auto; text-style: bold; }
    LoadingScreen #loading-stage { width: auto; color: $text-muted; }
    LoadingScreen ProgressBar { width: auto; margin: 1 0; }
    """

    def __init__(self, path: Path, title: str | None = None) -> None:
        """``title``: what is loading, when not ``path``'s name (two traces for a comparison)."""
        super().__init__()
        self.path = path
        self.label = shown(title or path.name)  # file names: outside text
        self.stage = "starting"

    def compose(self) -> ComposeResult:
        with Middle():
            with Center():
                yield Static(
                    Content.assemble("Loading ", (self.label, "bold $text-accent")), id="loading-title"
                )
            with Center():
                yield ProgressBar(total=_start(len(STAGES)), show_eta=False, id="loading-bar")
            with Center():
                yield Static(Content(self.stage + " …"), id="loading-stage")
        yield Footer()

    def on_mount(self) -> None:
        self.show_stage(self.stage)

    def show_stage(self, stage: str, fraction: float | None = None) -> None:
        """Advance the bar to ``stage``, ``fraction`` of the way through it when told (stages the
        loader adds later still show their name)."""
        self.stage = stage
        text = stage if fraction is None else f"{stage} {round(100 * fraction)} %"
        for label in self.query("#loading-stage").results(Static):
            label.update(Content(text + " …"))
        if stage in STAGES:
            index = STAGES.index(stage)
            done = _start(index) + (fraction or 0.0) * WEIGHTS.get(stage, 1)
            for bar in self.query(ProgressBar).results(ProgressBar):
                bar.update(progress=done)


def _start(index: int) -> float:
    """Where stage ``index`` starts on the bar."""
    return float(sum(WEIGHTS.get(stage, 1) for stage in STAGES[:index]))
