"""The Range panel under the timeline: what lies in the selected range, per name (Perfetto's area
selection), as a table (:func:`tracetui.views.timeline.area.area`). Enter goes to the first such
event in the tree; ``E`` exports the table; Escape goes back to the timeline."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from tracetui.app.widgets.table_view import TableView
from tracetui.views.timeline.area import Area

HINT = "Enter: go to the first · s: sort · E: export · Esc: back to the timeline"


class RangePanel(Vertical):
    """The Range table of the selected range (hidden while there is none)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "Back to the timeline", show=False, id="range.leave"),
    ]

    DEFAULT_CSS = """
    RangePanel { height: auto; max-height: 14; display: none; border-top: solid $warning; }
    RangePanel #range-title { height: 1; background: $panel; padding: 0 1; }
    RangePanel TableView { height: auto; max-height: 12; }
    """

    class Left(Message):
        """Escape: back to the timeline."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.area: Area | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="range-title")
        yield TableView(id="range-table")

    @property
    def table(self) -> TableView:
        return self.query_one(TableView)

    def show_area(self, area: Area | None, start: str = "") -> None:
        """Show ``area`` (``start``: where it starts, as the header writes it); None: hide."""
        self.area = area
        self.display = area is not None
        if area is None:
            return
        table = self.table
        table.empty = area.table.empty
        table.set_data(area.table.frame, area.table.columns)
        title = Content.assemble(
            ("Range ", "bold $text-warning"), f"{start}{area.title} · ", (HINT, "$text-muted")
        )
        self.query_one("#range-title", Static).update(title)

    def action_leave(self) -> None:
        self.post_message(self.Left())
