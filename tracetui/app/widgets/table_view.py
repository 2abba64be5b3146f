"""A sortable Line-API table over a polars DataFrame: only the visible rows are ever formatted.

The built-in ``DataTable`` builds every row up front (~10 s for 100k rows); this view keeps the
frame, sorts it with polars, and formats a row when it scrolls into view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import polars as pl
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tracetui.app.widgets.cells import pad
from tracetui.app.widgets.line_style import CachedStyles
from tracetui.app.widgets.row_tree import cursor_bindings
from tracetui.views.table_spec import Column
from tracetui.views.tables import filter_rows


@dataclass(frozen=True)
class TableState:
    """Where a table was left: its (sorted, filtered) frame, sort, selected column, cursor, scroll,
    and the filter with the sorted rows it was applied to (``None``: no filter)."""

    frame: pl.DataFrame
    sort_key: str | None
    sort_descending: bool
    column_index: int
    cursor_row: int
    scroll_y: float
    source: pl.DataFrame | None = None
    filter_text: str = ""


class TableView(CachedStyles, ScrollView, can_focus=True):
    """Rows of a DataFrame; ←/→ pick a column, ``s`` sorts by it (again: reverse), Enter selects;
    :meth:`set_filter` keeps the rows whose text contains a string. ``frame`` is what is shown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *cursor_bindings("table"),
        Binding("left", "column(-1)", "Column ←", show=False, id="table.column_left"),
        Binding("right", "column(1)", "Column →", show=False, id="table.column_right"),
        Binding("s", "sort", "Sort", id="table.sort", tooltip="by the selected column; again: reverse"),
        Binding(
            "enter",
            "select",
            "Go to node",
            id="table.select",
            tooltip="the first occurrence in the tree, then the next",
        ),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "table-view--header",
        "table-view--header-selected",
        "table-view--cursor",
        "table-view--stripe",
        "table-view--empty",
    }

    DEFAULT_CSS = """
    TableView { background: $surface; scrollbar-gutter: stable; }
    TableView > .table-view--header { text-style: bold; color: $text-muted; background: $panel; }
    TableView > .table-view--header-selected {
        text-style: bold underline;
        color: $text-accent;
        background: $panel;
    }
    TableView > .table-view--stripe { background: $boost; }
    TableView > .table-view--empty { color: $text-muted; text-style: italic; }
    TableView > .table-view--cursor { background: $block-cursor-blurred-background; }
    TableView:focus > .table-view--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }
    """

    class Selected(Message):
        """Enter (or a click on the cursor row) on a row."""

        def __init__(self, table: TableView, row: dict[str, Any]) -> None:
            super().__init__()
            self.table = table
            self.row = row

    def __init__(self, *, empty: str = "nothing here", id: str | None = None) -> None:
        super().__init__(id=id)
        self.frame = pl.DataFrame()
        self.source = self.frame  # every row, sorted; ``frame`` is ``source`` filtered
        self.filter_text = ""
        self.columns: list[Column] = []
        self.empty = empty
        self.cursor_row = 0
        self.column_index = 0
        self.sort_key: str | None = None
        self.sort_descending = False
        self._strips: dict[tuple[Any, ...], Strip] = {}
        self._name_lengths: dict[str, int] = {}

    # ---- data ---------------------------------------------------------------------------------
    def set_data(self, frame: pl.DataFrame, columns: list[Column]) -> None:
        """Show ``frame`` (keeping the current sort when its column still exists; no filter)."""
        self.columns = columns
        self._name_lengths = {}
        self.column_index = min(self.column_index, max(0, len(columns) - 1))
        if self.sort_key in frame.columns:
            frame = self._sorted(frame)
        self.frame = self.source = frame
        self.filter_text = ""
        self.cursor_row = 0
        self._refresh_all()

    def set_filter(self, text: str) -> None:
        """Show only the rows whose text columns contain ``text`` (empty: every row), in the sort."""
        self.filter_text = text.strip()
        self.frame = filter_rows(self.source, self.columns, self.filter_text)
        self.cursor_row = 0
        self.scroll_to(y=0, animate=False, immediate=True, force=True)
        self._refresh_all()

    def state(self) -> TableState:
        return TableState(
            self.frame,
            self.sort_key,
            self.sort_descending,
            self.column_index,
            self.cursor_row,
            self.scroll_y,
            self.source,
            self.filter_text,
        )

    def restore(self, state: TableState, columns: list[Column]) -> None:
        """Show a table as :meth:`state` left it."""
        self.frame, self.columns = state.frame, columns
        self.source = state.source if state.source is not None else state.frame
        self.filter_text = state.filter_text
        self._name_lengths = {}
        self.sort_key, self.sort_descending = state.sort_key, state.sort_descending
        self.column_index, self.cursor_row = state.column_index, state.cursor_row
        self._refresh_all()
        self.scroll_to(y=state.scroll_y, animate=False, immediate=True, force=True)

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        """Sort by column ``key``; ``descending`` None: numbers high-first, text A→Z, or reverse
        when already sorted by ``key``."""
        if descending is None:
            if key == self.sort_key:
                descending = not self.sort_descending
            else:
                descending = self.frame.schema[key].is_numeric() if key in self.frame.columns else False
        self.sort_key, self.sort_descending = key, descending
        for index, column in enumerate(self.columns):
            if column.key == key:
                self.column_index = index
        self.frame = self._sorted(self.frame)
        self.source = self._sorted(self.source) if self.filter_text else self.frame
        self.cursor_row = 0
        self.scroll_to(y=0, animate=False, immediate=True, force=True)
        self._refresh_all()

    def _sorted(self, frame: pl.DataFrame) -> pl.DataFrame:
        assert self.sort_key is not None
        value = pl.col(self.sort_key)
        if isinstance(frame.schema[self.sort_key], pl.List):
            value = value.list.join(", ")
        return frame.sort(value, descending=self.sort_descending, nulls_last=True, maintain_order=True)

    @property
    def row_count(self) -> int:
        return self.frame.height

    def row(self, index: int) -> dict[str, Any]:
        return self.frame.row(index, named=True)

    # ---- cursor / keys --------------------------------------------------------------------------
    def _move(self, index: int) -> None:
        if not self.row_count:
            return
        self.cursor_row = max(0, min(index, self.row_count - 1))
        visible = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_offset.y)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True, force=True)
        elif self.cursor_row >= top + visible:
            self.scroll_to(y=self.cursor_row - visible + 1, animate=False, immediate=True, force=True)
        self.refresh()

    def action_cursor_up(self) -> None:
        self._move(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self._move(self.cursor_row + 1)

    def action_page_up(self) -> None:
        self._move(self.cursor_row - max(1, self.scrollable_content_region.height - 2))

    def action_page_down(self) -> None:
        self._move(self.cursor_row + max(1, self.scrollable_content_region.height - 2))

    def action_first(self) -> None:
        self._move(0)

    def action_last(self) -> None:
        self._move(self.row_count - 1)

    def action_column(self, step: int) -> None:
        if self.columns:
            self.column_index = (self.column_index + step) % len(self.columns)
            self._strips.clear()
            self.refresh()

    def action_sort(self) -> None:
        if self.columns:
            self.sort_by(self.columns[self.column_index].key)

    def action_select(self) -> None:
        if self.row_count:
            self.post_message(self.Selected(self, self.row(self.cursor_row)))

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            column = self._column_at(offset.x + round(self.scroll_offset.x))
            if column is not None:
                self.sort_by(self.columns[column].key)
            return
        index = round(self.scroll_offset.y) + offset.y - 1
        if 0 <= index < self.row_count:
            if index == self.cursor_row and event.chain > 1:
                self.action_select()
            self._move(index)

    def _column_at(self, x: int) -> int | None:
        position = 0
        for index, width in enumerate(self._widths(self.scrollable_content_region.width)):
            if position <= x < position + width + 1:
                return index
            position += width + 1
        return None

    # ---- rendering --------------------------------------------------------------------------------
    def _widths(self, width: int) -> list[int]:
        """Each column's width: fixed ones as declared, the rest sharing what is left (at least 16);
        the row's name column(s) as wide as their longest name, up to half of ``width`` (the other
        columns scroll: ←/→)."""
        names = sum(1 for c in self.columns if c.name)
        half = (width // 2 - names + 1) // names if names else 0
        floors = [min(half, self._longest(c.key)) if c.name else 0 for c in self.columns]
        fixed = sum(max(c.width, f) + 1 for c, f in zip(self.columns, floors, strict=True) if c.width)
        flexible = [c for c in self.columns if not c.width]
        share = max(16, (width - fixed) // len(flexible)) if flexible else 0
        return [max(c.width or share, f) for c, f in zip(self.columns, floors, strict=True)]

    def _longest(self, key: str) -> int:
        """The longest text in column ``key`` (once per data set: sorting and filtering keep it)."""
        found = self._name_lengths.get(key)
        if found is None:
            values = self.source[key] if key in self.source.columns else pl.Series([], dtype=pl.String)
            found = int(values.cast(pl.String).str.len_chars().max() or 0)  # type: ignore[arg-type]
            self._name_lengths[key] = found
        return found

    def row_style(self, row: dict[str, Any]) -> Style | None:
        """A style for a whole row, over the stripes (a subclass marks rows); ``None``: none."""
        return None

    def restyle(self) -> None:
        """Draw every row again (what :meth:`row_style` says changed)."""
        self._strips.clear()
        self.refresh()

    def _refresh_all(self) -> None:
        self._strips.clear()
        width = self.scrollable_content_region.width
        total = sum(w + 1 for w in self._widths(width)) if self.columns else width
        self.virtual_size = Size(max(width, total), self.row_count + 1)
        self.refresh()

    def on_resize(self) -> None:
        self._refresh_all()

    def styles_changed(self) -> None:
        self._strips.clear()

    def _style(self, name: str) -> Style:
        return self.component(f"table-view--{name}")

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x = round(self.scroll_offset.x)
        if y == 0:
            strip = self._header()
        else:
            index = round(self.scroll_offset.y) + y - 1
            if index >= self.row_count:
                if index == 0:
                    return Strip(
                        [Segment(pad("  " + self.empty, width), self.base_style + self._style("empty"))]
                    )
                return Strip.blank(width, self.base_style)
            key = (index, index == self.cursor_row, width)
            strip = self._strips.get(key) or self._row_strip(index, width)
            if len(self._strips) > 4 * max(64, self.size.height):
                self._strips.clear()
            self._strips[key] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, self.base_style)

    def _header(self) -> Strip:
        widths = self._widths(self.scrollable_content_region.width)
        segments = []
        for index, (column, width) in enumerate(zip(self.columns, widths, strict=True)):
            arrow = ""
            if column.key == self.sort_key:
                arrow = " ▼" if self.sort_descending else " ▲"
            style = self._style("header-selected" if index == self.column_index else "header")
            title = pad(column.title + arrow, width, column.align if column.align != "right" else "right")
            segments.append(Segment(title + " ", self.base_style + style))
        return Strip(segments)

    def _row_strip(self, index: int, width: int) -> Strip:
        widths = self._widths(width)
        values = self.row(index)
        base = self.base_style
        if index % 2:
            base += Style(bgcolor=self._style("stripe").bgcolor)
        marked = self.row_style(values)
        if marked is not None:
            base += marked
        segments = [
            Segment(pad(column.text(values.get(column.key)), size, column.align) + " ", base)
            for column, size in zip(self.columns, widths, strict=True)
        ]
        if index == self.cursor_row:
            cursor_style = self._style("cursor")
            segments = list(Segment.apply_style(segments, post_style=cursor_style))
        return Strip(segments)
