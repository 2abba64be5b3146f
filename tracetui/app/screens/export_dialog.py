"""The small dialog that asks where to write an export (the explorer's subtree, a table)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class ExportDialog(ModalScreen[str | None]):
    """Asks for a file name (``default`` filled in); Enter dismisses with the name as typed (where
    it goes: :class:`tracetui.app.save_folder.SaveFolder`), Escape with None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="export.cancel")]

    DEFAULT_CSS: ClassVar[str] = """
    ExportDialog { align: center middle; }
    ExportDialog > Vertical {
        width: 84;
        max-width: 95%;
        height: auto;
        border: thick $accent;
        padding: 1 2;
        background: $panel;
    }
    ExportDialog #export-title { text-style: bold; }
    ExportDialog Input { margin: 1 0; }
    ExportDialog #export-hint { color: $text-muted; }
    """

    def __init__(self, title: Content, default: str, hint: str) -> None:
        super().__init__()
        self.title_content = title
        self.default = default
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_content, id="export-title")
            yield Input(value=self.default, id="export-name", select_on_focus=False)
            yield Static(self.hint, id="export-hint", markup=False)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        name = event.value.strip()
        if name:
            self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)
