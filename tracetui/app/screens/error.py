"""The screen for a trace that cannot be shown: the CLI's one-line error, and how to leave."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from tracetui.safetext import shown


class ErrorScreen(Screen[None]):
    """Shows ``tracetui: path: problem``; any of q, Escape or Enter quits with the CLI's exit code,
    and the line is printed again on stderr once the terminal is restored."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,escape,enter", "leave", "Quit", id="error.quit"),
    ]

    DEFAULT_CSS: ClassVar[str] = """
    ErrorScreen { align: center middle; }
    ErrorScreen > Vertical {
        width: 80%;
        max-width: 100;
        height: auto;
        border: heavy $error;
        padding: 1 2;
        background: $panel;
    }
    ErrorScreen #error-title { text-style: bold; color: $text-error; }
    ErrorScreen #error-line { margin: 1 0; }
    ErrorScreen #error-hint { color: $text-muted; }
    """

    def __init__(self, line: str, code: int) -> None:
        super().__init__()
        self.line = line
        self.code = code

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Cannot open this trace", id="error-title", markup=False)
            yield Static(Content(shown(self.line, limit=None)), id="error-line")
            yield Static("Press q to quit.", id="error-hint", markup=False)
        yield Footer()

    def action_leave(self) -> None:
        self.app.exit(return_code=self.code, message=Text(self.line))
