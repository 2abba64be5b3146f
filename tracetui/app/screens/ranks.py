"""The Ranks screen of a distributed run: the Ranks table, the collectives aligned across ranks and
the kernels across ranks (:func:`tracetui.ranks.view.run_tables`), the run's facts and the
straggler verdict. Enter opens a row's rank; two marked ranks open in the comparison.

It only posts what the user asked for (:mod:`tracetui.app.rank_messages`); the app loads ranks.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from tracetui import formatting as fmt
from tracetui.app.rank_messages import CompareRanks, LeaveRanks, OpenRank
from tracetui.app.widgets.rank_table import RankTable
from tracetui.app.widgets.table_view import TableState
from tracetui.ranks.view import RUN_TABLE_TITLES, RUN_TABLES, TableView, display_columns
from tracetui.safetext import shown
from tracetui.views.table_spec import Column

HINT = "Enter: open the rank · space: mark · c: compare two · s: sort · Esc: back to the rank"


class RanksScreen(Screen[None]):
    """The run as one thing: which rank is slow, which collective waits for whom."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "show('ranks')", "Ranks", id="ranks.ranks", tooltip="per rank: time breakdown"),
        Binding(
            "2",
            "show('collectives')",
            "Collectives",
            id="ranks.collectives",
            tooltip="aligned across ranks: arrival skew, last rank, wait",
        ),
        Binding(
            "3",
            "show('kernels')",
            "Kernels",
            id="ranks.kernels",
            tooltip="across ranks: time per rank, min / median / max",
        ),
        Binding("space", "mark", "Mark", id="ranks.mark", tooltip="mark the row's rank to compare"),
        Binding(
            "c",
            "compare",
            "Compare",
            id="ranks.compare",
            tooltip="the two marked ranks (or the marked one and the cursor's) side by side",
        ),
        Binding("escape", "back", "Back to rank", id="ranks.back", tooltip="the rank whose tree was open"),
    ]

    DEFAULT_CSS: ClassVar[str] = """
    RanksScreen #ranks-facts { background: $panel; padding: 0 1; height: auto; }
    RanksScreen #ranks-tabs { height: 1; background: $panel; padding: 0 1; }
    RanksScreen #ranks-caption { height: auto; padding: 0 1; }
    RanksScreen #ranks-legend { height: auto; color: $text-muted; padding: 0 1; }
    RanksScreen #ranks-hint { height: 1; color: $text-muted; padding: 0 1; }
    RanksScreen RankTable { height: 1fr; }
    RanksScreen.-narrow #ranks-legend { display: none; }
    """

    def __init__(
        self,
        tables: dict[str, TableView],
        facts: str,
        notes: list[str],
        initial: str = "ranks",
        steps: str | None = None,
    ) -> None:
        super().__init__()
        self.tables = tables
        self.facts = facts
        self.notes = notes
        self.steps = steps  # the step times across ranks, one line (views.distribution)
        self.active = initial
        self.marked: tuple[int, ...] = ()
        self._states: dict[str, TableState] = {}
        self._columns: dict[str, list[Column]] = {}

    def compose(self) -> ComposeResult:
        yield Static(self._facts_content(), id="ranks-facts")
        yield Static(id="ranks-tabs")
        yield Static(id="ranks-caption")
        yield RankTable(id="rank-table")
        yield Static(id="ranks-legend")
        yield Static(Content(HINT), id="ranks-hint")
        yield Footer()

    def on_mount(self) -> None:
        self.action_show(self.active)

    @property
    def table(self) -> RankTable:
        return self.query_one(RankTable)

    def _facts_content(self) -> Content:
        lines = [Content.assemble(("tracetui", "bold $text-accent"), "  ", (shown(self.facts), "bold"))]
        if self.steps:
            lines.append(Content.styled(shown(self.steps), "$text-muted"))  # step names are trace text
        lines += [Content.styled(f"⚠ {shown(note)}", "$text-warning") for note in self.notes]  # file names
        return Content("\n").join(lines)

    # ---- tables -------------------------------------------------------------------------------
    def action_show(self, key: str) -> None:
        """Show table ``key`` where it was left."""
        table = self.table
        if table.columns:
            self._states[self.active] = table.state()
        self.active = key
        view = self.tables[key]
        columns = self._columns.get(key) or self._columns.setdefault(key, display_columns(view))
        state = self._states.get(key)
        if state is not None:
            table.restore(state, columns)
        else:
            table.set_data(view.frame, columns)
        table.empty = (
            "no collective was found on two or more ranks" if key == "collectives" else "nothing here"
        )
        table.set_marks(frozenset(view.highlight), self.marked)
        self._draw_tabs()
        first, *more = view.caption.split("\n")  # the verdict, then why the straggler is late
        caption = [Content.styled(shown(first), "bold"), *(Content(shown(line)) for line in more)]
        self.query_one("#ranks-caption", Static).update(Content("\n").join(caption))
        self.query_one("#ranks-legend", Static).update(Content(view.legend))
        table.focus()

    def _tab_labels(self) -> list[str]:
        return [
            f" {n} {RUN_TABLE_TITLES[k]} ({fmt.count(self.tables[k].frame.height)}) "
            for n, k in enumerate(RUN_TABLES, 1)
        ]

    def _draw_tabs(self) -> None:
        parts: list[str | tuple[str, str]] = []
        for key, label in zip(RUN_TABLES, self._tab_labels(), strict=True):
            parts.append((label, "bold reverse $accent" if key == self.active else "$text-muted"))
            parts.append(" ")
        self.query_one("#ranks-tabs", Static).update(Content.assemble(*parts))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self.query_one("#ranks-tabs"))
        if offset is None:
            return
        x = offset.x
        for key, label in zip(RUN_TABLES, self._tab_labels(), strict=True):
            if 0 <= x < len(label):
                self.action_show(key)
                return
            x -= len(label) + 1

    # ---- what the user asks for ------------------------------------------------------------------
    def on_table_view_selected(self, event: RankTable.Selected) -> None:
        event.stop()
        rank = event.row.get("rank")
        if rank is not None:
            self.post_message(OpenRank(int(rank)))

    def action_mark(self) -> None:
        """Mark (or unmark) the cursor's rank; a third mark drops the oldest."""
        rank = self.table.cursor_rank
        if rank is None:
            return
        if rank in self.marked:
            self.marked = tuple(r for r in self.marked if r != rank)
        else:
            self.marked = (*self.marked, rank)[-2:]
        self.table.set_marks(frozenset(self.tables[self.active].highlight), self.marked)
        self._draw_hint()

    def _draw_hint(self) -> None:
        if not self.marked:
            self.query_one("#ranks-hint", Static).update(Content(HINT))
            return
        marked = " and ".join(f"rank {r}" for r in self.marked)
        what = "c: compare them" if len(self.marked) == 2 else "c: compare it with the cursor's rank"
        hint = Content.assemble(
            ("marked: ", "$text-muted"), (marked, "bold $text-accent"), f" · {what} · space: unmark"
        )
        self.query_one("#ranks-hint", Static).update(hint)

    def action_compare(self) -> None:
        pair = self.marked
        cursor = self.table.cursor_rank
        if len(pair) == 1 and cursor is not None and cursor != pair[0]:
            pair = (pair[0], cursor)
        if len(pair) != 2:
            self.notify("Mark two ranks with space (or one, and put the cursor on the other).", timeout=3)
            return
        self.post_message(CompareRanks(*sorted(pair)))

    def action_back(self) -> None:
        self.post_message(LeaveRanks())
