"""F1 / ``?``: every key of every screen, generated from the bindings themselves."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

Mouse = Sequence[tuple[str, str]]
MOUSE: Mouse = (
    ("click", "select a row; click the selected row or its ▶ to expand / collapse"),
    ("wheel", "scroll the tree, the details, the tables"),
    ("timeline", "click an event: select it (tree, details, flows); wheel: zoom; drag: pan"),
    ("timeline drag", "on the ruler: a range and its table; with ctrl: zoom to it"),
    ("table header", "click: sort by that column (again: reverse)"),
    ("table row", "double-click: go to it in the tree"),
)
# The comparison has the two trees and their details only: no timeline, no tables.
DIFF_MOUSE: Mouse = (
    ("click", "select a row, on the side clicked (A left, B right); again: expand / collapse"),
    ("wheel", "scroll the trees"),
)

Section = tuple[str, Sequence[BindingType]]
KEY_WIDTH = 18  # "  keys" column, then the description
BOX_WIDTH = 96


def key_rows(bindings: Iterable[BindingType], display: Callable[[Binding], str]) -> list[tuple[str, str]]:
    """``(keys, what)`` per action, keys of one action joined (``enter / space``)."""
    rows: dict[str, tuple[list[str], str]] = {}
    for binding in Binding.make_bindings(bindings):
        key = display(binding)
        keys, what = rows.setdefault(binding.action, ([], binding.description))
        if binding.tooltip and binding.tooltip not in what:
            what = f"{binding.description} — {binding.tooltip}"
        if key not in keys:
            keys.append(key)
        rows[binding.action] = (keys, what)
    return [(" / ".join(keys), what) for keys, what in rows.values()]


def help_content(
    sections: Sequence[Section], display: Callable[[Binding], str], width: int, mouse: Mouse = MOUSE
) -> Content:
    """The help text, ``width`` cells wide: one block per section, then the mouse; descriptions
    wrap under their own column."""
    lines: list[Content] = []

    def entry(keys: str, what: str) -> None:
        wrapped = textwrap.wrap(what, max(20, width - KEY_WIDTH)) or [""]
        lines.append(Content.assemble((f"  {keys:<{KEY_WIDTH - 2}}", "bold"), wrapped[0]))
        lines.extend(Content(" " * KEY_WIDTH + more) for more in wrapped[1:])

    for title, bindings in sections:
        lines.append(Content.styled(title, "bold $text-accent"))
        for keys, what in key_rows(bindings, display):
            entry(keys, what)
        lines.append(Content(""))
    lines.append(Content.styled("Mouse", "bold $text-accent"))
    for where, what in mouse:
        entry(where, what)
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    """A scrollable list of keys; Escape, q, F1 or ``?`` closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,f1,question_mark", "dismiss", "Close help", id="help.close"),
    ]

    DEFAULT_CSS: ClassVar[str] = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 96;
        max-width: 95%;
        height: 90%;
        border: round $primary;
        border-title-color: $text-accent;
        background: $panel;
        padding: 0 1;
    }
    HelpScreen #help-footer { color: $text-muted; height: 1; }
    """

    def __init__(self, sections: Sequence[Section], mouse: Mouse = MOUSE) -> None:
        super().__init__()
        self.sections = sections
        self.mouse = mouse

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "tracetui keys"
            with VerticalScroll():
                # the box's text width: border, padding and the scrollbar off its outer width
                width = min(BOX_WIDTH, self.app.size.width * 95 // 100) - 6
                text = help_content(self.sections, self.app.get_key_display, width, self.mouse)
                yield Static(text, id="help-text")
            yield Static("Escape closes · ctrl+p: every action in the command palette", id="help-footer")
