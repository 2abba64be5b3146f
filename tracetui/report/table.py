"""The compact rich table shared by the summary, diff and check reports (numbers are written by
:mod:`tracetui.formatting`), and :func:`shown_text`: every cell, and every other text of a report
that holds outside text, is shown as :func:`tracetui.safetext.shown` says."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracetui.safetext import MAX_SHOWN, shown

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

Cell = str | Text
MISSING = "-"  # a number a report has no value for (the formatters write "" for it)
MIN_NAME = 8  # the narrowest a name column gets, where the numbers need the rest


def nums(*headers: str) -> list[tuple[str, str]]:
    """Column specs for numeric columns."""
    return [(header, "num") for header in headers]


def table(
    title: str | None,
    columns: list[tuple[str, str]],
    rows: list[list[Cell]],
    drop_zero: tuple[str, ...] = (),
) -> Table:
    """A compact table. ``columns`` are ``(header, kind)``: ``name`` (the row's name) and ``text``
    shrink with an ellipsis, ``wrap`` folds long text, ``mark`` is a one-character status, ``num``
    never truncates. Columns whose header is in ``drop_zero`` are left out when all are ``0``."""
    keep = [
        i
        for i, (header, _) in enumerate(columns)
        if header not in drop_zero or any(str(row[i]) not in ("0", "-") for row in rows)
    ]
    grid = FitTable(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    for i in keep:
        header, kind = columns[i]
        width = max([len(header)] + [len(str(row[i])) for row in rows])
        if kind == "name":
            grid.names[len(grid.columns)] = width
            grid.add_column(header, no_wrap=True, overflow="ellipsis", min_width=min(width, 16))
        elif kind == "text":
            grid.add_column(header, no_wrap=True, overflow="ellipsis", min_width=min(width, 12), max_width=24)
        elif kind == "wrap":
            grid.add_column(header, overflow="fold", min_width=16)
        elif kind == "mark":
            grid.add_column(header, no_wrap=True, width=1)
        else:
            grid.add_column(header, justify="right", no_wrap=True, min_width=width)
    for row in rows:
        grid.add_row(*[shown_cell(row[i]) for i in keep])
    return grid


def shown_cell(cell: Cell) -> Cell:
    """A cell as a terminal may show it (outside text: trace names, file names, expectations)."""
    return shown(cell) if isinstance(cell, str) else shown_text(cell)


_STYLES = Console(color_system=None, markup=False, highlight=False)  # resolves style names only


def shown_text(text: Text) -> Text:
    """``text`` with each differently styled run as :func:`~tracetui.safetext.shown` says (the
    styles kept), its line breaks kept as line breaks (a cell of several lines, e.g. an
    expectation and its note); ``text`` itself when that changes nothing."""
    if len(text.plain) <= MAX_SHOWN and all(shown(line) == line for line in text.plain.split("\n")):
        return text
    runs = [
        ("\n".join(shown(line) for line in s.text.split("\n")), s.style or "")
        for s in text.render(_STYLES, end="")
        if s.text and not s.control
    ]
    out = Text.assemble(*runs, justify=text.justify, overflow=text.overflow, no_wrap=text.no_wrap)
    out.end = text.end
    return out


class FitTable(Table):
    """A table whose ``name`` columns give up width, with an ellipsis, so the numbers always fit."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.names: dict[int, int] = {}  # name column -> its natural width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.names:
            for i, natural in self.names.items():  # first as wide as their names
                self.columns[i].max_width = max(self.columns[i].min_width or 0, natural)
            wide = self.__rich_measure__(console, options).maximum
            if wide > options.max_width:  # too wide: the names give up what is missing, shared
                share = sum(self.names.values()) - (wide - options.max_width)
                share = max(12, share // len(self.names))
                for i, natural in self.names.items():
                    column = self.columns[i]
                    column.max_width = max(column.min_width or 0, min(natural, share))
                least = self.__rich_measure__(console, options).minimum
                if least > options.max_width:  # even then too wide: the names go below their minimum
                    cut = -(-(least - options.max_width) // len(self.names))
                    for i in self.names:
                        column = self.columns[i]
                        column.min_width = column.max_width = max(MIN_NAME, (column.min_width or 0) - cut)
        yield from super().__rich_console__(console, options)
