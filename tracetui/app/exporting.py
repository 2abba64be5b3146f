"""Export from inside the explorer: the table on screen (its sort and filter) and the subtree under
the cursor, written by ``tracetui export``'s own writer (:func:`tracetui.report.export.write_table`:
CSV cells escaped against formulas, lists joined, written atomically); the format follows the file
name's suffix. Where the name may go is the app's :class:`~tracetui.app.save_folder.SaveFolder`;
a file that exists is replaced only after a yes. A served explorer (``tracetui serve``) without a
save folder writes nothing on the machine: the export goes to the browser's downloads
(:class:`Download`)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from textual.content import Content

from tracetui import formatting as fmt
from tracetui.app.saving import file_stem, free_name, shown_folder
from tracetui.app.screens.export_dialog import ExportDialog
from tracetui.app.screens.replace_dialog import ReplaceDialog
from tracetui.errors import TraceError
from tracetui.report.export import table_bytes, write_table
from tracetui.safetext import shown

if TYPE_CHECKING:
    import polars as pl
    from textual.app import App

    from tracetui.app.save_folder import SaveFolder
    from tracetui.views.table_spec import Column

SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".json": "json"}
TABLE_HINT = "Enter: write · Esc: cancel · the suffix picks the format: .csv, .parquet or .json"
SUBTREE_HINT = "Enter: write · Esc: cancel · .json (one record per node, in tree order), or .csv, .parquet"


@dataclass(frozen=True)
class Download:
    """An export sent to the browser as a download named ``name`` (a served explorer without a save
    folder): nothing is written on the machine."""

    name: str

    @property
    def suffix(self) -> str:
        return PurePath(self.name).suffix


@dataclass(frozen=True)
class Exported:
    """What an export did (``message``, for the notification) and, for a :class:`Download`, the
    bytes to send from the app's thread (:meth:`deliver`)."""

    message: str
    download: Download | None = None
    data: bytes = b""

    def deliver(self, app: App[Any]) -> str:
        """Send a download's bytes to the browser (nothing for a file written); the message."""
        if self.download is not None:
            data = io.BytesIO(self.data)
            app.deliver_binary(data, save_filename=self.download.name, open_method="download")
        return self.message


def format_of(target: Path | Download) -> str:
    """The export format a file name asks for (its suffix); a one-line error for any other."""
    found = SUFFIXES.get(target.suffix.lower())
    if found is None:
        named = target.name if isinstance(target, Download) else target
        raise TraceError(named, "end the name with .csv, .parquet or .json")
    return found


def default_target(trace: Path, what: str, suffix: str, folder: Path | None = None) -> Path:
    """``tracetui_<trace>_<what><suffix>`` in ``folder`` (the current one), not yet taken."""
    return free_name(folder or Path.cwd(), f"tracetui_{file_stem(trace.name)}_{file_stem(what)}", suffix)


def shown_columns(frame: pl.DataFrame, columns: list[Column]) -> pl.DataFrame:
    """A table as it is shown: its columns in their order, its rows in theirs."""
    return frame.select([c.key for c in columns if c.key in frame.columns])


def ask_export(
    app: App[Any],
    title: Content,
    trace: Path,
    what: str,
    suffix: str,
    hint: str,
    write: Callable[[Path | Download, bool], None],
) -> None:
    """Ask for a name (a free one in the save folder offered), then call ``write(target, replace)``:
    a name the save folder refuses, or a suffix of no format, is one notification; a file that
    exists is written over only after the user says yes (``replace`` True), else never. A served
    explorer without a save folder: ``target`` is a :class:`Download` of the name's last part."""

    folder: SaveFolder = app.save_folder  # type: ignore[attr-defined]

    def chosen(typed: str | None) -> None:
        if typed is None:
            return
        if app.is_web and not folder.confined:
            download = Download(PurePath(typed).name)
            try:
                format_of(download)
            except TraceError as exc:
                app.notify(str(exc), title="Not exported", severity="error", markup=False)
                return
            write(download, False)
            return
        try:
            target = folder.target(typed)
            format_of(target)
        except TraceError as exc:
            app.notify(str(exc), title="Not exported", severity="error", markup=False)
            return
        if not os.path.lexists(target):
            write(target, False)
            return

        def answered(replace: bool | None) -> None:
            if replace:
                write(target, True)
            else:
                app.notify(f"Kept {shown(target.name)}: nothing written", title="Not exported", markup=False)

        where = shown_folder(target.absolute().parent)
        app.push_screen(ReplaceDialog(target.name, where), answered)

    default = default_target(trace, what, suffix, folder.root)
    app.push_screen(ExportDialog(title, default.name, hint), chosen)


def write_export(
    frame: pl.DataFrame, target: Path | Download, source: Path, what: str, *, replace: bool = False
) -> Exported:
    """Write ``frame`` to ``target`` (format by suffix; over a file that exists only with
    ``replace``), or make a download's bytes; what to tell the user."""
    rows = fmt.count(frame.height)
    if isinstance(target, Download):
        data = table_bytes(frame, format_of(target))
        message = f"Sent {what} ({rows} rows) to the browser as {shown(target.name)} (your downloads folder)"
        return Exported(message, target, data)
    write_table(frame, format_of(target), target, source, replace=replace)
    where = target.resolve().parent
    return Exported(f"Wrote {what} ({rows} rows) to {target.name} in {shown_folder(where)}")


def table_title(title: str, rows: int, sort: str | None, descending: bool, filter_text: str = "") -> Content:
    """``Export the Kernels table: 5 rows containing “gemm”, sorted by total ▼`` (the filter is text
    the user typed: plain, never markup)."""
    order = "" if sort is None else f", sorted by {sort} {'▼' if descending else '▲'}"
    kept = f" containing “{shown(filter_text)}”" if filter_text else ""
    return Content.assemble(f"Export the {title} table: {fmt.count(rows)} rows", kept, order)


def subtree_title(label: str) -> Content:
    """``Export the subtree under NAME`` (the name is trace text: plain, never markup)."""
    return Content.assemble("Export the subtree under ", (shown(label), "bold"))
