"""The tables: ops, kernels, annotations, steps, anomalies, orphans, one tab each."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from tracetui.app.table_view import TableView
from tracetui.app.tables import TableSpec

ORDER = ("ops", "kernels", "annotations", "steps", "anomalies", "orphans")


class TablesScreen(Screen[tuple[str, dict[str, Any]] | None]):
    """Tabs of sortable tables; Enter dismisses with ``(table, row)`` for the tree to jump to."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,t", "close", "Back to tree", id="tables.close"),
        Binding("1", "show('ops')", "Ops", id="tables.ops"),
        Binding("2", "show('kernels')", "Kernels", id="tables.kernels"),
        Binding("3", "show('annotations')", "Annotations", id="tables.annotations"),
        Binding("4", "show('steps')", "Steps", id="tables.steps"),
        Binding("5", "show('anomalies')", "Anomalies", id="tables.anomalies"),
        Binding("6", "show('orphans')", "Orphans", id="tables.orphans"),
    ]

    DEFAULT_CSS: ClassVar[str] = """
    TablesScreen #tables-hint { height: 1; color: $text-muted; padding: 0 1; background: $panel; }
    TablesScreen TabbedContent { height: 1fr; }
    TablesScreen ContentSwitcher { height: 1fr; }
    TablesScreen TabPane { padding: 0; height: 1fr; }
    TablesScreen TableView { height: 1fr; }
    """

    def __init__(self, tables: dict[str, TableSpec], initial: str = "ops") -> None:
        super().__init__()
        self.tables = tables
        self.initial = initial

    def compose(self) -> ComposeResult:
        yield Static(
            "←/→ pick a column · s sort (again: reverse) · Enter go to the first, then next, occurrence · "
            "Esc back",
            id="tables-hint",
            markup=False,
        )
        with TabbedContent(initial=self.initial):
            for index, key in enumerate(ORDER, start=1):
                spec = self.tables[key]
                with TabPane(f"{index} {spec.title} ({spec.frame.height:,})", id=key):
                    yield TableView(empty=spec.empty, id=f"table-{key}")
        yield Footer()

    def on_mount(self) -> None:
        for key in ORDER:
            spec = self.tables[key]
            table = self.query_one(f"#table-{key}", TableView)
            table.set_data(spec.frame, spec.columns)
            if spec.sort:
                table.sort_by(spec.sort, descending=True)
        self._focus_table(self.initial)

    def table(self, key: str) -> TableView:
        return self.query_one(f"#table-{key}", TableView)

    def action_show(self, key: str) -> None:
        self.query_one(TabbedContent).active = key
        self._focus_table(key)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id:
            self._focus_table(event.pane.id)

    def _focus_table(self, key: str) -> None:
        self.call_after_refresh(self.table(key).focus)

    @property
    def active(self) -> str:
        return self.query_one(TabbedContent).active or self.initial

    def on_table_view_selected(self, event: TableView.Selected) -> None:
        event.stop()
        key = (event.table.id or "").removeprefix("table-")
        self.dismiss((key, event.row))

    def action_close(self) -> None:
        self.dismiss(None)
