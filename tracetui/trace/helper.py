"""A second process that decodes the second half of a big trace while this one does the first.

Loading a 90 MB trace is mostly CPU work on Python objects (msgspec decoding, turning events
into columns). Commands that load a trace call :func:`start` before anything imports polars:
the forked child imports polars itself (a pool created after a fork is safe; one inherited
through a fork is not), reads the same file, decodes and tabulates the second half of the
events (:mod:`split`) and sends its tables back as Arrow IPC. :func:`tracetui.load` merges
them with the first half. Anything unexpected (the child fails, the file changed, no
boundary) makes ``load`` decode that half itself, so results never depend on this.

This module imports nothing heavy: it must be importable before polars.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracetui.trace import cache

if TYPE_CHECKING:
    from tracetui.trace.frames import Tables

MIN_FILE_BYTES = int(os.environ.get("TRACETUI_HELPER_MIN_BYTES", 1 << 20))  # gzip ~15x smaller than JSON


@dataclass
class Helper:
    """A running child decoding the second half of ``path``."""

    pid: int
    fd: int
    done: bool = False

    def receive(self) -> tuple[int, int, Tables] | None:
        """``(array length, first-half length, tables)`` from the child, or None if it failed."""
        self.done = True
        try:
            with os.fdopen(self.fd, "rb") as stream:
                payload = stream.read()
        finally:
            _, status = os.waitpid(self.pid, 0)
        if not payload or os.waitstatus_to_exitcode(status) != 0:
            return None
        return _unpack(payload)

    def cancel(self) -> None:
        """Stop the child if it still runs (the parent no longer needs it)."""
        if self.done:
            return
        self.done = True
        with contextlib.suppress(OSError):
            os.kill(self.pid, 9)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


def start(path: str | Path) -> Helper | None:
    """Fork a helper for ``path`` when it pays off and is safe, else None."""
    if not _worthwhile(Path(path)):
        return None
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(Path(path), write_end)
    os.close(write_end)
    return Helper(pid, read_end)


def _worthwhile(path: Path) -> bool:
    return (
        sys.platform == "linux"
        and hasattr(os, "fork")
        and (os.cpu_count() or 1) > 1
        and "polars" not in sys.modules  # an inherited polars thread pool would deadlock the child
        and not os.environ.get("TRACETUI_SERIAL")
        and path.is_file()
        and path.stat().st_size >= MIN_FILE_BYTES
        and not cache.has_entry(path)
    )


def _child(path: Path, write_end: int) -> None:
    status = 1
    try:
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the child never prints
        payload = _work(path)
        with os.fdopen(write_end, "wb") as out:
            out.write(payload)
        status = 0
    except BaseException:
        pass
    finally:
        os._exit(status)


def _work(path: Path) -> bytes:
    import gc
    import io

    import msgspec

    from tracetui.trace.frames import build_tables, transpose
    from tracetui.trace.schema import EVENTS_DECODER, TOP_DECODER
    from tracetui.trace.source import read_source
    from tracetui.trace.split import halves

    gc.disable()
    data = read_source(path).data
    events_json = data if data[:4096].lstrip()[:1] == b"[" else TOP_DECODER.decode(data)["traceEvents"]
    split = halves(events_json)
    if split is None:
        return b""
    first, second = split
    tables = build_tables([transpose(EVENTS_DECODER.decode(second))])
    frames = []
    for frame in (tables.events, tables.instants, tables.flows, tables.meta):
        buffer = io.BytesIO()
        frame.write_ipc(buffer)
        frames.append(buffer.getvalue())
    header = [len(events_json), len(first), tables.other_phases, tables.legacy_categories]
    return msgspec.msgpack.encode([header, frames])


def _unpack(payload: bytes) -> tuple[int, int, Tables]:
    import io

    import msgspec
    import polars as pl

    from tracetui.trace.frames import Tables

    header, frames = msgspec.msgpack.decode(payload)
    size, first, other_phases, legacy = header
    events, instants, flows, meta = (pl.read_ipc(io.BytesIO(blob)) for blob in frames)
    return size, first, Tables(events, instants, flows, meta, other_phases, legacy)


def merge(first: Tables, second: Tables, offset: int) -> Tables:
    """Tables of consecutive halves; ``second``'s ids are shifted by ``offset`` events."""
    import polars as pl

    from tracetui.trace.frames import Tables

    def cat(a: pl.DataFrame, b: pl.DataFrame) -> pl.DataFrame:
        return pl.concat([a, b.with_columns(pl.col("id") + offset)], how="diagonal_relaxed")

    phases: dict[str, Any] = dict(first.other_phases)
    for phase, count in second.other_phases.items():
        phases[phase] = phases.get(phase, 0) + count
    return Tables(
        cat(first.events, second.events),
        cat(first.instants, second.instants),
        cat(first.flows, second.flows),
        cat(first.meta, second.meta),
        phases,
        first.legacy_categories or second.legacy_categories,
    )
