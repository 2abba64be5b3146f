"""Tables a load keeps on disk until they are first used.

Two of the model's tables are big and seldom read. The flows are as many as a third of the
events (an ``ac2g`` pair per kernel launch, a ``fwdbwd`` pair per autograd op) and, once the load
has read them for the forward links, the model only counts them; the recorded shapes (one row
per op that recorded some) are read once for the FLOPs of the ops that launched GPU work, and on
demand for one event's details or an export. Held in memory they were 48 + 32 MB of a 1 GB
trace's ~580 MB model, at every step of the load and of the summary after it.

:class:`SpilledTables` writes them (Arrow IPC, lz4) to an unlinked temporary file in ``TMPDIR``;
the trace reads them through it on first use, a few columns or the whole table
(:func:`tracetui.trace.model.read_table`, as a trace from the cache reads its entry's). Where no such
file can be written, or the tables are small, they stay in memory. The file is private to the
process and goes with the trace.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import polars as pl

from tracetui import settings
from tracetui.errors import TraceError

READ_BYTES = 1 << 30  # one read at most (one returns at most ~2 GiB on Linux)


def _read_at(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes of ``fd`` from ``offset``, in reads of at most :data:`READ_BYTES`."""
    parts, done = [], 0
    while done < size:
        got = os.pread(fd, min(size - done, READ_BYTES), offset + done)
        if not got:
            raise OSError(f"short read: {done} of {size} bytes")
        parts.append(got)
        done += len(got)
    return parts[0] if len(parts) == 1 else b"".join(parts)


@dataclass(frozen=True)
class _Placed:
    """One table in the file: its bytes, columns and rows."""

    offset: int
    size: int
    columns: tuple[str, ...]
    rows: int


class SpilledTables:
    """Tables in an unlinked temporary file, read back by columns (a
    :class:`~tracetui.trace.model.TableSource`); build it with :meth:`of`."""

    files: tuple[str, ...] = ()

    def __init__(self, path: Path, file: BinaryIO, placed: Mapping[str, _Placed]) -> None:
        self.path = path  # the trace's, for errors
        self._file = file
        self._placed = dict(placed)
        self.names = tuple(placed)
        weakref.finalize(self, file.close)

    @classmethod
    def of(cls, path: Path, tables: Mapping[str, pl.DataFrame]) -> SpilledTables | None:
        """``tables`` (of trace file ``path``) written to a temporary file, or None where none can
        be written (no ``TMPDIR``, or it is full) or they are small (under
        ``TRACETUI_SPILL_MIN_BYTES`` in all; a 90 MB trace's are ~6 MB): the caller keeps them in memory."""
        if sum(frame.estimated_size() for frame in tables.values()) < settings.SPILL_MIN_BYTES.value():
            return None
        try:
            file = tempfile.TemporaryFile(prefix="tracetui-tables-")  # noqa: SIM115 (kept open)
        except OSError:
            return None
        try:
            placed = {}
            for name, frame in tables.items():
                offset = file.tell()
                frame.write_ipc(file, compression="lz4")  # type: ignore[arg-type]
                file.flush()
                placed[name] = _Placed(offset, file.tell() - offset, tuple(frame.columns), frame.height)
        except Exception:  # a full or failing disk, however polars words it: kept in memory
            file.close()
            return None
        return cls(path, file, placed)

    def scan(self, name: str) -> pl.LazyFrame:
        """Table ``name``: its bytes read now, decompressed when collected, only the columns
        selected (:func:`tracetui.trace.model.read_table` checks its rows)."""
        placed = self._placed[name]
        try:
            data = _read_at(self._file.fileno(), placed.size, placed.offset)
        except (OSError, ValueError) as exc:  # the file closed or cut short: never a traceback
            raise self.damaged(f"table {name}: {exc}") from None
        return pl.scan_ipc(data)

    def columns(self, name: str) -> list[str]:
        """The columns of table ``name``, in order."""
        return list(self._placed[name].columns)

    def height(self, name: str) -> int:
        """The rows of table ``name`` (none of it read)."""
        return self._placed[name].rows

    def file(self, name: str) -> BinaryIO:
        raise KeyError(name)  # tables only

    def damaged(self, what: str) -> TraceError:
        """The error for a table that cannot be read back (the temporary file was lost)."""
        return TraceError(self.path, f"a table it kept aside cannot be read back ({what}); open it again")
