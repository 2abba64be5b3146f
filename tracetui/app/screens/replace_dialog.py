"""The small dialog that asks before an export replaces a file that exists (nothing is replaced
without a yes)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from tracetui.safetext import shown

HINT = "y: replace it · n or Esc: keep it (nothing is written)"


class ReplaceDialog(ModalScreen[bool]):
    """``NAME exists in FOLDER. Replace it?``; y dismisses with True, n or Escape with False."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Replace", id="replace.yes"),
        Binding("n,escape", "answer(False)", "Keep", id="replace.no"),
    ]

    DEFAULT_CSS: ClassVar[str] = """
    ReplaceDialog { align: center middle; }
    ReplaceDialog > Vertical {
        width: 84;
        max-width: 95%;
        height: auto;
        border: thick $warning;
        padding: 1 2;
        background: $panel;
    }
    ReplaceDialog #replace-question { text-style: bold; margin-bottom: 1; }
    ReplaceDialog #replace-hint { color: $text-muted; }
    """

    def __init__(self, name: str, folder: str) -> None:
        """``name`` and ``folder``: outside text (plain, never markup)."""
        super().__init__()
        self.question = Content.assemble((shown(name), "bold"), " exists in ", shown(folder), ". Replace it?")

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="replace-question")
            yield Static(HINT, id="replace-hint", markup=False)

    def action_answer(self, replace: bool) -> None:
        self.dismiss(replace)
