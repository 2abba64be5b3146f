"""The Ranks screen's table: a :class:`TableView` whose rows lead to a rank, with the straggler
highlighted and the ranks marked for a comparison."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.style import Style
from textual.binding import Binding, BindingType

from tracetui.app.widgets.table_view import TableView


def _binding_id(binding: BindingType) -> str | None:
    return binding.id if isinstance(binding, Binding) else None


class RankTable(TableView, inherit_bindings=False):
    """Enter opens the row's rank; ``highlight`` ranks are drawn in the warning colour, ``marked``
    ones (to compare) in the accent colour."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(b for b in TableView.BINDINGS if _binding_id(b) != "table.select"),
        Binding(
            "enter", "select", "Open rank", id="rank_table.open", tooltip="its tree, tables and timeline"
        ),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {"rank-table--straggler", "rank-table--marked"}

    DEFAULT_CSS = """
    RankTable > .rank-table--straggler { color: $text-error; text-style: bold; }
    RankTable > .rank-table--marked { background: $accent 30%; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.highlight: frozenset[int] = frozenset()
        self.marked: tuple[int, ...] = ()

    def set_marks(self, highlight: frozenset[int], marked: tuple[int, ...]) -> None:
        self.highlight, self.marked = highlight, marked
        self.restyle()

    def row_style(self, row: dict[str, Any]) -> Style | None:
        rank = row.get("rank")
        style = None
        if rank in self.highlight:
            straggler = self.component("rank-table--straggler")
            style = Style(color=straggler.color, bold=True)
        if rank in self.marked:
            marked = Style(bgcolor=self.component("rank-table--marked").bgcolor)
            style = marked if style is None else style + marked
        return style

    @property
    def cursor_rank(self) -> int | None:
        """The rank the cursor's row leads to."""
        if not self.row_count:
            return None
        rank = self.row(self.cursor_row).get("rank")
        return int(rank) if rank is not None else None
