"""``tracetui export``: the model's tables as csv, parquet or json."""

from __future__ import annotations

import io
import itertools
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from tracetui.errors import TraceError
from tracetui.insight.critical_path import annotation_paths, piece_parts, pieces, step_paths
from tracetui.insight.idle import stream_idle
from tracetui.insight.kernels import kernels_table_parts
from tracetui.insight.memory import memory_of
from tracetui.insight.why_data import advice_frame, advice_records
from tracetui.output import write_file
from tracetui.safetext import escape_series
from tracetui.trace.text import as_text

if TYPE_CHECKING:
    from tracetui.trace import Trace


ROWS = 100_000  # events per part of ``events`` (their args: ~0.4 KB of text each)
# kernels per part of ``kernels``: making a kernel's reading holds ~4 KB of text a row for a while
# (1 GB trace, 240k kernels: peak 1,131 MB whole, 976 MB in parts of 25k, 850 MB of 10k, each
# part ~55 ms more)
KERNEL_ROWS = 25_000


def export_parts(trace: Trace, table: str) -> Iterator[pl.DataFrame]:
    """The frame behind ``--table``, in parts of consecutive rows (at least one), what the writer
    takes: ``events`` (every event's args as JSON text) and ``kernels`` (every kernel's roofline
    reading) come :data:`ROWS` and :data:`KERNEL_ROWS` at a time, made for those rows alone, so
    that their text is never all in memory (at 1 GB of JSON the events' args are ~1 GB of text);
    the others whole."""
    if table == "events":
        yield from _events_parts(trace)
        return
    if table == "kernels":
        yield from kernels_table_parts(trace, KERNEL_ROWS)
        return
    if table == "critical_path":
        yield from critical_path_parts(trace)
        return
    frames: dict[str, Callable[[], pl.DataFrame]] = {
        "ops": lambda: trace.ops,
        "annotations": lambda: trace.annotations,
        "steps": lambda: trace.steps,
        "runtime": lambda: trace.runtime,
        "anomalies": lambda: trace.anomalies,
        "memory": lambda: memory_table(trace),
        "idle": lambda: idle_table(trace),
        "advice": lambda: advice_table(trace),
    }
    if table not in frames:
        raise ValueError(table)
    yield frames[table]()


def _events_parts(trace: Trace) -> Iterator[pl.DataFrame]:
    """Every event with its args as written and, for ops, their recorded shapes."""
    events = trace.events
    for start in range(0, max(events.height, 1), ROWS):
        part = events.slice(start, ROWS)
        ops = part.filter(pl.col("cat") == "cpu_op")["id"]
        part = part.with_columns(trace.args_json(part["id"]))
        shapes = trace.shapes(ops.to_list(), keep=True)  # read once for all the parts
        yield part.join(shapes, on="id", how="left", maintain_order="left")


def memory_table(trace: Trace) -> pl.DataFrame:
    """One row per allocation or free (``profile_memory``), in time order: the memory table
    without the columns that place it in the tree (see :mod:`tracetui.insight.memory.table`)."""

    return memory_of(trace).events.drop("pair_order", "track", "enclosing_id", "enclosing_pos")


def critical_path_parts(trace: Trace) -> Iterator[pl.DataFrame]:
    """One row per piece of every step's and annotation call's critical path, in time order: the
    span (its id, name and kind), what the path crossed (``id``: the event, null for a gap or a
    launch delay; ``name``, ``kind``), where it starts and its time on the path (µs); a part of the
    spans at a time (:func:`tracetui.insight.critical_path.piece_parts`)."""
    yielded = False
    for kind, paths in (("step", step_paths(trace)), ("annotation", annotation_paths(trace))):
        names = paths.spans.select("span", pl.col("name").alias("span_name"))
        for part in piece_parts(trace, paths):
            yielded = True
            yield _critical_path_rows(part, names, kind)
    if not yielded:
        yield _critical_path_rows(pieces(trace, step_paths(trace), []), pl.DataFrame(), "step")


def _critical_path_rows(part: pl.DataFrame, names: pl.DataFrame, kind: str) -> pl.DataFrame:
    if names.is_empty():
        names = pl.DataFrame(schema={"span": pl.UInt32, "span_name": pl.String})
    return part.join(names, on="span", how="left", maintain_order="left").select(
        "span",
        "span_name",
        pl.lit(kind).alias("span_kind"),
        "id",
        "name",
        "kind",
        "start_ns",
        (pl.col("ns") / 1000.0).alias("us"),
        "track",
        "lane",
    )


def idle_table(trace: Trace) -> pl.DataFrame:
    """One row per step and GPU stream: the window, the idle time and its host wait / kernel wait /
    other parts (µs)."""
    return stream_idle(trace)


def advice_table(trace: Trace) -> pl.DataFrame:
    """The advice, ranked: rule, action, evidence, saving per step (µs), confidence."""
    return advice_frame(advice_records(trace))


def write_table(
    frame: pl.DataFrame | Iterable[pl.DataFrame],
    fmt: str,
    output: Path | None,
    source: Path,
    *,
    replace: bool = True,
) -> None:
    """Write ``frame`` (or its parts, in order: one part's text held at a time); to stdout when
    ``output`` is None (not for parquet). A file is written whole or not at all
    (:func:`tracetui.output.write_file`; ``replace=False``: never over one that exists); CSV
    cells that a spreadsheet would run as formulas are escaped, lists joined."""
    if output is not None and output.exists() and output.resolve() == source.resolve():
        raise TraceError(output, "refusing to overwrite the trace being exported")
    if output is None and fmt == "parquet":
        raise TraceError(None, "parquet needs an output file (-o FILE)")
    given = [frame] if isinstance(frame, pl.DataFrame) else frame
    parts = (_prepared(part, fmt) for part in _checked(given))
    if output is None:  # a part that fails leaves what was written before it
        try:
            for chunk in _chunks(parts, fmt):
                sys.stdout.write(chunk.decode())
        except _PartFailed as failed:
            raise failed.__cause__ from None  # type: ignore[misc]
        if fmt == "json":
            sys.stdout.write("\n")
        return

    def write(path: Path) -> None:
        if fmt == "parquet":
            _write_parquet(parts, path)
            return
        with path.open("wb") as out:
            for chunk in _chunks(parts, fmt):
                out.write(chunk)

    try:
        write_file(output, write, replace=replace)  # whole or not at all: no partial file on a full disk
    except FileExistsError:
        raise TraceError(output, "exists already: not replaced") from None
    except _PartFailed as failed:  # making a part failed, not the write: its own error
        raise failed.__cause__ from None  # type: ignore[misc]
    except OSError as exc:
        raise TraceError(output, f"cannot write: {exc.strerror or exc}") from None
    except pl.exceptions.PolarsError as exc:  # parquet's I/O errors (a full disk) come this way
        raise TraceError(output, f"cannot write: {exc}") from None


def table_bytes(frame: pl.DataFrame, fmt: str) -> bytes:
    """The bytes :func:`write_table` writes for ``frame`` in ``fmt``, held in memory (a served
    explorer's download: nothing is written on the machine)."""
    prepared = _prepared(frame, fmt)
    if fmt == "parquet":
        return _written(prepared, prepared.write_parquet)
    return b"".join(_chunks([prepared], fmt))


class _PartFailed(Exception):
    """Making a part raised (its ``__cause__``): told apart from the write's own errors."""


def _checked(parts: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
    """``parts``, each with the first one's columns and types (else an internal error: the writers
    would put values under another header), the errors of making them wrapped in :class:`_PartFailed`."""
    produced = iter(parts)
    first: pl.Schema | None = None
    while True:
        try:
            part = next(produced)
        except StopIteration:
            if first is None:
                raise ValueError("export: no part to write") from None
            return
        except Exception as exc:
            raise _PartFailed() from exc
        if first is None:
            first = part.schema
        elif part.schema != first:
            raise ValueError(f"export: a part's columns {part.schema} are not the first's {first}")
        yield part


def _prepared(frame: pl.DataFrame, fmt: str) -> pl.DataFrame:
    frame = as_text(frame)  # the events' dictionary-encoded text written as text, escaped below
    return _no_formulas(_visible_marks(_flatten_lists(frame))) if fmt == "csv" else frame


def _chunks(parts: Iterable[pl.DataFrame], fmt: str) -> Iterator[bytes]:
    """The bytes of ``parts`` written one after another as one CSV (one header) or one JSON array
    (bytes: a part's text is never decoded to be encoded again)."""
    if fmt == "csv":
        for index, part in enumerate(parts):
            yield _written(part, partial(part.write_csv, include_header=index == 0))
        return
    yield b"["
    written = False
    for part in parts:
        rows = _written(part, part.write_json)[1:-1]  # [{…},{…}]: the objects between the brackets
        if rows:
            yield (b"," if written else b"") + rows
            written = True
    yield b"]"


def _written(part: pl.DataFrame, write: Callable[[io.BytesIO], object]) -> bytes:
    buffer = io.BytesIO()
    write(buffer)
    return buffer.getvalue()


def _write_parquet(parts: Iterator[pl.DataFrame], path: Path) -> None:
    """One parquet file of ``parts``: one part written as it is; several each spilled to a
    compressed IPC file in a temporary folder beside ``path`` (removed after), then streamed from
    them into one parquet file by polars' sink (one part in memory at a time)."""
    first = next(parts)
    second = next(parts, None)
    if second is None:
        first.write_parquet(path)
        return
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".tracetui-parts-") as folder:
        spilled = []
        for index, part in enumerate(itertools.chain([first, second], parts)):
            spilled.append(Path(folder) / f"{index:06d}.arrow")
            part.write_ipc(spilled[-1], compression="lz4")
        del first, second
        pl.concat([pl.scan_ipc(file) for file in spilled]).sink_parquet(path)


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
