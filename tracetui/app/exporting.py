"""Export from inside the explorer: the table on screen (its sort and filter) and the subtree under
the cursor, written by ``tracetui export``'s own writer (:func:`tracetui.report.export.write_table`:
CSV cells escaped against formulas, lists joined, written atomically); the format follows the file
name's suffix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.content import Content

from tracetui import formatting as fmt
from tracetui.app.saving import file_stem, free_name, shown_folder
from tracetui.errors import TraceError
from tracetui.report.export import write_table
from tracetui.safetext import shown

if TYPE_CHECKING:
    import polars as pl

    from tracetui.views.table_spec import Column

SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".json": "json"}
TABLE_HINT = "Enter: write · Esc: cancel · the suffix picks the format: .csv, .parquet or .json"
SUBTREE_HINT = "Enter: write · Esc: cancel · .json (one record per node, in tree order), or .csv, .parquet"


def format_of(target: Path) -> str:
    """The export format a file name asks for (its suffix); a one-line error for any other."""
    found = SUFFIXES.get(target.suffix.lower())
    if found is None:
        raise TraceError(target, "end the name with .csv, .parquet or .json")
    return found


def default_target(trace: Path, what: str, suffix: str, folder: Path | None = None) -> Path:
    """``tracetui_<trace>_<what><suffix>`` in ``folder`` (the current one), not yet taken."""
    return free_name(folder or Path.cwd(), f"tracetui_{file_stem(trace.name)}_{file_stem(what)}", suffix)


def shown_columns(frame: pl.DataFrame, columns: list[Column]) -> pl.DataFrame:
    """A table as it is shown: its columns in their order, its rows in theirs."""
    return frame.select([c.key for c in columns if c.key in frame.columns])


def write_export(frame: pl.DataFrame, target: Path, source: Path, what: str) -> str:
    """Write ``frame`` to ``target`` (format by suffix) and say where, for the notification."""

    write_table(frame, format_of(target), target, source)
    where = target.resolve().parent
    return f"Wrote {what} ({fmt.count(frame.height)} rows) to {target.name} in {shown_folder(where)}"


def table_title(title: str, rows: int, sort: str | None, descending: bool, filter_text: str = "") -> Content:
    """``Export the Kernels table: 5 rows containing “gemm”, sorted by total ▼`` (the filter is text
    the user typed: plain, never markup)."""
    order = "" if sort is None else f", sorted by {sort} {'▼' if descending else '▲'}"
    kept = f" containing “{shown(filter_text)}”" if filter_text else ""
    return Content.assemble(f"Export the {title} table: {fmt.count(rows)} rows", kept, order)


def subtree_title(label: str) -> Content:
    """``Export the subtree under NAME`` (the name is trace text: plain, never markup)."""
    return Content.assemble("Export the subtree under ", (shown(label), "bold"))
