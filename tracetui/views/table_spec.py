"""What a table is, as plain data: its columns (title, width, alignment, formatter) and its frame,
and where a row leads in the tree. A leaf: every table builder (views/tables.py, views/memory.py,
the ranks' tables) and the table widget use it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

Formatter = Callable[[Any], str]


@dataclass(frozen=True)
class Column:
    """One column: the frame column, its title, width (0: share the rest), alignment, formatter;
    ``name``: the row's name, which gets at least half the table's width (80 columns: 40)."""

    key: str
    title: str
    width: int = 0
    align: str = "right"
    fmt: Formatter = str
    name: bool = False

    def text(self, value: Any) -> str:
        return "" if value is None else self.fmt(value)


@dataclass(frozen=True)
class TableSpec:
    """One table. A row jumps to the events whose ``name`` equals its ``name`` (in ``cats``), or to
    the event id in its ``id_column``."""

    key: str
    title: str
    frame: pl.DataFrame
    columns: list[Column]
    sort: str | None = None
    cats: tuple[str, ...] | None = None
    id_column: str | None = None
    empty: str = "nothing here"

    def targets(self, row: dict[str, Any]) -> tuple[str, int | str]:
        """``("id", event_id)`` or ``("name", name)`` for a selected row."""
        if self.id_column is not None:
            return "id", row[self.id_column]
        return "name", row["name"]
