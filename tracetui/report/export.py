"""``tracetui export``: the model's tables as csv, parquet or json."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from tracetui.errors import TraceError
from tracetui.output import write_file
from tracetui.safetext import escape_series
from tracetui.trace.text import as_text

if TYPE_CHECKING:
    from tracetui.trace import Trace


def export_table(trace: Trace, table: str) -> pl.DataFrame:
    """The frame behind ``--table``."""
    if table == "events":
        events = trace.events.with_columns(trace.args_json())
        return events.join(trace.shapes(), on="id", how="left", maintain_order="left")
    if table == "ops":
        return trace.ops
    if table == "kernels":
        from tracetui.insight.report import kernels_table

        return kernels_table(trace)
    if table == "annotations":
        return trace.annotations
    if table == "steps":
        return trace.steps
    if table == "runtime":
        return trace.runtime
    if table == "anomalies":
        return trace.anomalies
    if table == "memory":
        return memory_table(trace)
    raise ValueError(table)


def memory_table(trace: Trace) -> pl.DataFrame:
    """One row per allocation or free (``profile_memory``), in time order: the memory table
    without the columns that place it in the tree (see :mod:`tracetui.insight.memory.table`)."""
    from tracetui.insight.memory import memory_of

    return memory_of(trace).events.drop("pair_order", "track", "enclosing_id", "enclosing_pos")


def write_table(frame: pl.DataFrame, fmt: str, output: Path | None, source: Path) -> None:
    """Write ``frame``; to stdout when ``output`` is None (not for parquet). A file is written whole
    or not at all (:func:`tracetui.output.write_file`); CSV cells that a spreadsheet would run
    as formulas are escaped, lists joined."""
    if output is not None and output.exists() and output.resolve() == source.resolve():
        raise TraceError(output, "refusing to overwrite the trace being exported")
    frame = as_text(frame)  # the events' dictionary-encoded text written as text, escaped below
    if fmt == "csv":
        frame = _no_formulas(_visible_marks(_flatten_lists(frame)))
    if output is None:
        if fmt == "parquet":
            raise TraceError(None, "parquet needs an output file (-o FILE)")
        buffer = io.StringIO()
        frame.write_csv(buffer) if fmt == "csv" else frame.write_json(buffer)
        sys.stdout.write(buffer.getvalue() + ("" if fmt == "csv" else "\n"))
        return
    writers: dict[str, Callable[[Path], object]] = {
        "csv": frame.write_csv,
        "parquet": frame.write_parquet,
        "json": frame.write_json,
    }
    try:
        write_file(output, writers[fmt])  # whole or not at all: a full disk leaves no partial file
    except OSError as exc:
        raise TraceError(output, f"cannot write: {exc.strerror or exc}") from None
    except pl.exceptions.PolarsError as exc:  # parquet's I/O errors (a full disk) come this way
        raise TraceError(output, f"cannot write: {exc}") from None


FORMULA_START = r"^[=+\-@\t\r]"  # what a spreadsheet reads as the start of a formula
PLAIN_NUMBER = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"  # -1, +2.5e3: a number


def _no_formulas(frame: pl.DataFrame) -> pl.DataFrame:
    """Text cells that a spreadsheet would run as a formula get a leading ``'`` (OWASP's advice
    against CSV injection); a cell that is just a number (``-1``) stays a number."""
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return frame.with_columns(
        pl.when(pl.col(c).str.contains(FORMULA_START) & ~pl.col(c).str.contains(PLAIN_NUMBER))
        .then("'" + pl.col(c))
        .otherwise(pl.col(c))
        .alias(c)
        for c in text
    )


def _visible_marks(frame: pl.DataFrame) -> pl.DataFrame:
    """Invisible and direction-changing characters as visible escapes (``\\u200b``), as on a
    terminal: a CSV is read by people, in spreadsheets that hide them too (not cut)."""
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return frame.with_columns(escape_series(frame[c]) for c in text)


def _flatten_lists(frame: pl.DataFrame) -> pl.DataFrame:
    """CSV has no lists: join them with '; '."""
    lists = [name for name, dtype in frame.schema.items() if isinstance(dtype, pl.List)]
    return frame.with_columns(
        pl.col(c).list.eval(pl.element().cast(pl.String)).list.join("; ") for c in lists
    )
