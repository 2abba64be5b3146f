"""Two ranks of a run in the comparison screen, opened from the Ranks screen or the palette:
the comparison of ``tracetui diff RUN --ranks A,B``, with Escape back to the run."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType

from tracetui.app.screens.diff import DiffScreen


class RankDiffScreen(DiffScreen):
    """Rank A (before) and rank B (after), matching nodes on one row; Escape goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back to the run", id="rank_diff.back"),
    ]
