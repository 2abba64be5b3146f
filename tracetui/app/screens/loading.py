"""The screen shown while the trace loads: its name and the loader's stages as they start."""

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
                yield ProgressBar(total=len(STAGES), show_eta=False, id="loading-bar")
            with Center():
                yield Static(Content(self.stage + " …"), id="loading-stage")
        yield Footer()

    def on_mount(self) -> None:
        self.show_stage(self.stage)

    def show_stage(self, stage: str) -> None:
        """Advance the bar to ``stage`` (stages the loader adds later still show their name)."""
        self.stage = stage
        for label in self.query("#loading-stage").results(Static):
            label.update(Content(stage + " …"))
        if stage in STAGES:
            for bar in self.query(ProgressBar).results(ProgressBar):
                bar.update(progress=STAGES.index(stage))
