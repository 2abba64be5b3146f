"""The tables: ops, kernels, annotations, steps, anomalies, orphans, memory.

One :class:`TableView` shows the active table; each table keeps its own sort, column and cursor
when another is shown. (A ``TabbedContent`` of six tables costs Textual ~150 ms of restyling
every time the screen opens; one view and a one-line tab bar cost a few ms.)
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from tracetui import formatting as fmt
from tracetui.app.widgets.table_view import TableState, TableView
from tracetui.views.tables import TableSpec

ORDER = ("ops", "kernels", "annotations", "steps", "anomalies", "orphans", "memory")
HINT = "←/→ column · s sort (again: reverse) · Enter: go to the first, then next, occurrence · Esc back"


class TablesScreen(Screen[tuple[str, dict[str, Any]] | None]):
    """Enter dismisses with ``(table, row)`` for the tree to jump to."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,t", "close", "Back to tree", id="tables.close"),
        Binding("1", "show('ops')", "Ops", show=False, id="tables.ops"),
        Binding("2", "show('kernels')", "Kernels", show=False, id="tables.kernels"),
        Binding("3", "show('annotations')", "Annotations", show=False, id="tables.annotations"),
        Binding("4", "show('steps')", "Steps", show=False, id="tables.steps"),
        Binding("5", "show('anomalies')", "Anomalies", show=False, id="tables.anomalies"),
        Binding("6", "show('orphans')", "Orphans", show=False, id="tables.orphans"),
        Binding("7", "show('memory')", "Memory", show=False, id="tables.memory"),
    ]

    DEFAULT_CSS: ClassVar[str] = """
    TablesScreen #tables-tabs { height: 1; background: $panel; padding: 0 1; }
    TablesScreen #tables-hint { height: 1; color: $text-muted; padding: 0 1; }
    TablesScreen TableView { height: 1fr; }
    """

    def __init__(self, tables: dict[str, TableSpec], initial: str = "ops") -> None:
        super().__init__()
        self.tables = tables
        self.active = initial
        self._states: dict[str, TableState] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="tables-tabs")
        yield Static(HINT, id="tables-hint", markup=False)
        yield TableView(id="table")
        yield Footer()

    def on_mount(self) -> None:
        self.action_show(self.active)

    @property
    def table(self) -> TableView:
        return self.query_one(TableView)

    def action_show(self, key: str) -> None:
        """Show table ``key`` where it was left (first time: its default sort)."""
        table = self.table
        if table.columns:
            self._states[self.active] = table.state()
        self.active = key
        spec = self.tables[key]
        table.empty = spec.empty
        state = self._states.get(key)
        if state is not None:
            table.restore(state, spec.columns)
        else:
            table.set_data(spec.frame, spec.columns)
            if spec.sort:
                table.sort_by(spec.sort, descending=True)
        self._draw_tabs()
        table.focus()

    def _tab_labels(self) -> list[str]:
        return [
            f" {n} {self.tables[k].title} ({fmt.count(self.tables[k].frame.height)}) "
            for n, k in enumerate(ORDER, 1)
        ]

    def _draw_tabs(self) -> None:
        parts: list[str | tuple[str, str]] = []
        for key, label in zip(ORDER, self._tab_labels(), strict=True):
            parts.append((label, "bold reverse $accent" if key == self.active else "$text-muted"))
            parts.append(" ")
        self.query_one("#tables-tabs", Static).update(Content.assemble(*parts))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self.query_one("#tables-tabs"))
        if offset is None:
            return
        x = offset.x
        for key, label in zip(ORDER, self._tab_labels(), strict=True):
            if 0 <= x < len(label):
                self.action_show(key)
                return
            x -= len(label) + 1

    def on_table_view_selected(self, event: TableView.Selected) -> None:
        event.stop()
        self._states[self.active] = self.table.state()
        self.dismiss((self.active, event.row))

    def action_close(self) -> None:
        self._states[self.active] = self.table.state()
        self.dismiss(None)
