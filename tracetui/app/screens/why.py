"""``y``: why the cursor's step is slow (:class:`~tracetui.views.why.WhyView`): what bounds it, its
critical path (the parts, what took most of it: Enter goes to that event in the tree), the GPU's
idle time explained, the launch figures, and what to try."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from tracetui import formatting as fmt
from tracetui.app.widgets.table_view import TableView
from tracetui.safetext import shown
from tracetui.views.table_spec import Column
from tracetui.views.why import WhyView, row_frame

HINT = "Enter: go to it · . / , in the tree: walk the path · Tab: scroll · Esc: back"
MAX_TABLE_ROWS = 8
SHORT_TABLE_ROWS = 4  # below TALL lines: the advice shows under the table too
TALL = 30


def _share(value: float | None) -> str:
    return fmt.percent(None if value is None else 100 * value)


COLUMNS = [
    Column("name", "on the path", name=True, align="left", fmt=shown),
    Column("kind", "kind", 8, align="left"),
    Column("us", "time", 10, fmt=fmt.duration),
    Column("share", "share", 6, fmt=_share),
    Column("events", "events", 7, fmt=fmt.count),
]


class WhyScreen(Screen[int | None]):
    """Dismisses with the event id of the chosen path item (None: nothing chosen)."""

    view_name = "why"  # a saved picture's view (tracetui.app.saving)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,y", "close", "Back to tree", id="why.close"),
    ]

    DEFAULT_CSS: ClassVar[str] = """
    WhyScreen #why-title { height: 1; background: $panel; padding: 0 1; text-style: bold; }
    WhyScreen #why-hint { height: 1; color: $text-muted; padding: 0 1; }
    WhyScreen #why-body { height: 1fr; padding: 0 1; }
    WhyScreen #why-body > Static { margin-bottom: 1; }
    WhyScreen #why-path { margin-bottom: 1; overflow-x: hidden; }
    """

    def __init__(self, view: WhyView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        view = self.view
        yield Static(Content(shown(view.title())), id="why-title")
        with VerticalScroll(id="why-body"):
            yield Static(self._verdict(), id="why-verdict")
            if view.step_id is not None:
                yield Static(Content(view.split_line()), id="why-split")
                yield TableView(empty="nothing on the path", id="why-path")
                lines = view.idle_lines()
                if lines:
                    yield Static(Content("\n".join(lines)), id="why-idle")
            yield Static(self._advice(), id="why-advice")
        yield Static(Content(HINT), id="why-hint")
        yield Footer()

    def on_mount(self) -> None:
        if self.view.step_id is None:
            return
        table = self.query_one("#why-path", TableView)
        table.set_data(row_frame(self.view), COLUMNS)
        self._fit_table()
        table.focus()

    def on_resize(self) -> None:
        self._fit_table()

    def _fit_table(self) -> None:
        """The table's height: its rows, at most :data:`MAX_TABLE_ROWS` (short screens: fewer)."""
        tables = self.query("#why-path")
        if tables:
            most = MAX_TABLE_ROWS if self.app.size.height >= TALL else SHORT_TABLE_ROWS
            tables.first().styles.height = max(1, min(len(self.view.top), most)) + 1  # empty: its message

    def _verdict(self) -> Content:
        view = self.view
        parts: list[str | tuple[str, str]] = [(view.headline, "bold $text-warning")]
        if view.verdict:
            parts += ["\n", (shown(view.verdict), "$text-muted")]
        return Content.assemble(*parts)

    def _advice(self) -> Content:
        lines = self.view.advice_lines()
        if not lines:
            return Content.assemble(
                ("What to try", "bold $text-accent"),
                (": nothing stands out (no rule's threshold is met; docs/why.md lists them)", "$text-muted"),
            )
        parts: list[str | tuple[str, str]] = [("What to try", "bold $text-accent")]
        for action, evidence in lines:
            parts += ["\n", (shown(action), "bold"), "\n   ", (shown(evidence), "$text-muted")]
        return Content.assemble(*parts)

    def on_table_view_selected(self, event: TableView.Selected) -> None:
        event.stop()
        target = event.row.get("event_id")
        if target is None:
            name = shown(str(event.row["name"]))
            self.notify(f"{name}: no event in the trace to go to.", timeout=3, markup=False)
            return
        self.dismiss(int(target))

    def action_close(self) -> None:
        self.dismiss(None)
