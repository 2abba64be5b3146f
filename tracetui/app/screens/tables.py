"""The tables: ops, kernels, annotations, steps, anomalies, orphans, memory.

One :class:`TableView` shows the active table; each table keeps its own sort, column and cursor
when another is shown. (A ``TabbedContent`` of six tables costs Textual ~150 ms of restyling
every time the screen opens; one view and a one-line tab bar cost a few ms.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from tracetui import formatting as fmt
from tracetui.app.exporting import TABLE_HINT, Download, ask_export, shown_columns, table_title, write_export
from tracetui.app.widgets.table_view import TableState, TableView
from tracetui.errors import TraceError
from tracetui.safetext import shown
from tracetui.views.table_spec import TableSpec

ORDER = ("ops", "kernels", "annotations", "steps", "anomalies", "orphans", "memory")
HINT = (
    "←/→ column · s sort (again: reverse) · F filter · Enter: go to the first, then next, occurrence"
    " · E export · Esc back"
)


class TablesScreen(Screen[tuple[str, dict[str, Any]] | None]):
    """Enter dismisses with ``(table, row)`` for the tree to jump to."""

    @property
    def view_name(self) -> str:
        """The picture's view: the active table."""
        return self.active

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,t", "close", "Back to tree", id="tables.close"),
        Binding("1", "show('ops')", "Ops", show=False, id="tables.ops"),
        Binding("2", "show('kernels')", "Kernels", show=False, id="tables.kernels"),
        Binding("3", "show('annotations')", "Annotations", show=False, id="tables.annotations"),
        Binding("4", "show('steps')", "Steps", show=False, id="tables.steps"),
        Binding("5", "show('anomalies')", "Anomalies", show=False, id="tables.anomalies"),
        Binding("6", "show('orphans')", "Orphans", show=False, id="tables.orphans"),
        Binding("7", "show('memory')", "Memory", show=False, id="tables.memory"),
        Binding(
            "F,slash",
            "filter",
            "Filter",
            id="tables.filter",
            tooltip="show only the rows whose text contains a string (empty: every row)",
        ),
        Binding(
            "E",
            "export",
            "Export",
            id="tables.export",
            tooltip="write this table, as sorted and filtered, to a .csv, .parquet or .json file",
        ),
    ]

    DEFAULT_CSS: ClassVar[str] = """
    TablesScreen #tables-tabs { height: 1; background: $panel; padding: 0 1; }
    TablesScreen #tables-hint { height: 1; color: $text-muted; padding: 0 1; }
    TablesScreen TableView { height: 1fr; }
    TablesScreen #table-filter { display: none; dock: bottom; margin-bottom: 1; border: tall $accent; }
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
        yield Input(
            placeholder="show only rows containing… (Enter: apply, empty: every row)",
            id="table-filter",
        )
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
        self._draw_hint()
        table.focus()

    def _draw_hint(self) -> None:
        """The keys; with a filter: which one, and how many rows it keeps."""
        table = self.table
        hint = self.query_one("#tables-hint", Static)
        if not table.filter_text:
            hint.update(Content(HINT))
            return
        kept = f"{fmt.count(table.row_count)} of {fmt.count(table.source.height)} rows"
        hint.update(
            Content.assemble(
                ("filter ", "bold $text-accent"),
                (f"“{shown(table.filter_text)}”", "bold"),
                f": {kept} · F: change (empty: every row) · E export these · Esc back",
            )
        )

    def action_filter(self) -> None:
        field = self.query_one("#table-filter", Input)
        field.value = self.table.filter_text
        field.display = True
        field.focus()

    @on(Input.Submitted, "#table-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._close_filter(event.input)
        self.table.set_filter(event.value)
        self._draw_hint()

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape" and isinstance(self.focused, Input):
            event.stop()
            event.prevent_default()
            self._close_filter(self.focused)

    def _close_filter(self, field: Input) -> None:
        field.display = False
        self.table.focus()

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

    def action_export(self) -> None:
        """Ask for a file name, then write the table as shown (its columns, sort, filter and rows)."""
        traces: list[Path] = getattr(self.app, "trace_paths", list)()
        if not traces:
            return
        table, spec = self.table, self.tables[self.active]
        sort = next((c.title for c in table.columns if c.key == table.sort_key), None)
        title = table_title(spec.title, table.row_count, sort, table.sort_descending, table.filter_text)
        ask_export(self.app, title, traces[0], self.active, ".csv", TABLE_HINT, self._export_to)

    def _export_to(self, target: Path | Download, replace: bool) -> None:
        source = self.app.trace_paths()[0]  # type: ignore[attr-defined]
        frame = shown_columns(self.table.frame, self.table.columns)
        what = f"the {self.tables[self.active].title} table"
        try:
            message = write_export(frame, target, source, what, replace=replace).deliver(self.app)
        except TraceError as exc:
            self.notify(str(exc), title="Not exported", severity="error", markup=False)
        else:
            self.notify(message, title="Exported", markup=False)

    def action_close(self) -> None:
        self._states[self.active] = self.table.state()
        self.dismiss(None)
