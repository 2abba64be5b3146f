"""Raw event args on demand: the model asks a :class:`RawArgs` provider, the loader chose it.

The model keeps as columns what later layers read from args (promoted args, shapes, collective
metadata). Every arg of an event, as written (for the details pane and the export), is read
when first asked for, by event id (the event's index in ``traceEvents``), from the provider
the loader handed to the :class:`~tracetui.trace.model.Trace`; the model never reads a file
itself. Providers:

* :class:`ArgsBlocks`: each event's args as written, deflated block by block as the trace was
  read (about 5% of the JSON, in a temporary file); a block is inflated when one of its events
  is asked for (the last few are kept). Its :meth:`~ArgsBlocks.tables` and
  :meth:`~ArgsBlocks.files` are what a cache stores, and :meth:`ArgsBlocks.from_tables` reads
  them back;
* :class:`Deferred`: a provider the loader opens on first use;
* :data:`NO_ARGS`: none known.

A provider is safe to use from several threads. A new source of args needs only ``raw`` and
``pick``.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, overload

import msgspec

from tracetui.errors import TraceError
from tracetui.trace.layout import ARGS_FILE
from tracetui.trace.schema import RAW_EMPTY

_deflate: ModuleType
try:  # isal deflates ~5x faster than zlib, and releases the GIL
    from isal import isal_zlib as _deflate
except ImportError:  # pragma: no cover - isal is a declared dependency
    _deflate = zlib

LEVEL = 1  # isal: ~11x on trace args at ~1.4 GB/s (level 0: ~9x, ~1.5 GB/s; zlib level 1: ~11x, 0.4 GB/s)
KEEP_BLOCKS = 4  # inflated blocks kept for the next asks
PENDING = 4  # blocks of args waiting to be deflated, at most

if TYPE_CHECKING:
    from pathlib import Path

    import polars as pl


class RawArgs(Protocol):
    """Each event's args object as raw JSON, by event id."""

    def raw(self, ids: Sequence[int]) -> list[msgspec.Raw]:
        """The args of each event in ``ids`` as written (empty: none, or no such event)."""
        ...

    def pick(self, ids: Sequence[int], keys: Mapping[str, str]) -> pl.DataFrame | None:
        """``id`` (UInt32) and, per ``keys`` (column -> args key), the raw JSON text of that arg of
        each event in ``ids`` (null: absent); None when the provider has no fast way (the caller
        then decodes :meth:`raw`)."""
        ...


class NoArgs:
    """No args known: every event's are empty."""

    def raw(self, ids: Sequence[int]) -> list[msgspec.Raw]:
        return [RAW_EMPTY] * len(ids)

    def pick(self, ids: Sequence[int], keys: Mapping[str, str]) -> pl.DataFrame | None:
        return None


NO_ARGS = NoArgs()


class Deferred:
    """The provider ``open`` returns, called on first use (and again after it raised, unless it
    raised a :class:`~tracetui.errors.TraceError`: that answer stands, its source is gone)."""

    def __init__(self, open: Callable[[], RawArgs]) -> None:
        self._open = open
        self._inner: RawArgs | None = None
        self._failed: TraceError | None = None
        self._lock = threading.Lock()

    def _provider(self) -> RawArgs:
        with self._lock:
            if self._failed is not None:
                raise self._failed
            if self._inner is None:
                try:
                    self._inner = self._open()
                except TraceError as exc:
                    self._failed = exc
                    raise
            return self._inner

    def raw(self, ids: Sequence[int]) -> list[msgspec.Raw]:
        return self._provider().raw(ids)

    def pick(self, ids: Sequence[int], keys: Mapping[str, str]) -> pl.DataFrame | None:
        return self._provider().pick(ids, keys)


class ArgsWriter:
    """Collects each event's raw args while a trace is read: the bytes of a run of events,
    deflated as they come (on a worker thread: isal releases the GIL, so it overlaps the scan),
    and at the end every event's length (:class:`ArgsBlocks` reads them). No polars: it runs
    before polars is imported (see :mod:`prefetch`)."""

    def __init__(self) -> None:
        self.firsts: list[int] = []  # per block: its first event
        self.sizes: list[int] = []  # per block: its args' raw bytes
        self.data = Spill()  # per block: its args deflated
        self.events = 0
        self.lengths: Any = None  # every event's length: the scanner's uint32 column, or a list
        self._pending: list[tuple[int, int, Future[None]]] = []
        self._worker: ThreadPoolExecutor | None = None

    def take(self, scanner: Any) -> None:
        """The args the native scanner read since the last take."""
        data = scanner.take_args()
        if data:
            self._add(self.events, data)
        self.events = scanner.events

    def add_run(self, data: bytes, count: int) -> None:
        """The args of the next ``count`` events, read by another scanner (end to end)."""
        if data:
            self._add(self.events, data)
        self.events += count

    def add(self, raws: Sequence[bytes]) -> None:
        """All events' args, read elsewhere (the msgspec path): one bytes each (b"": none)."""
        for start in range(0, len(raws), 1 << 14):
            part = raws[start : start + (1 << 14)]
            data = b"".join(part)
            if data:
                self._add(start, data)
        self.events = len(raws)
        self.lengths = list(map(len, raws))

    def _add(self, first: int, data: bytes) -> None:
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="tracetui-deflate")
        # deflated and kept on the worker, in the order given (one worker)
        self._pending.append((first, len(data), self._worker.submit(self._keep, data)))
        if len(self._pending) > PENDING:  # bounded: the scan waits for the deflate
            self._settle(len(self._pending) - PENDING)

    def _keep(self, data: bytes) -> None:
        self.data.append(_deflate.compress(data, LEVEL if _deflate is not zlib else 1))

    def _settle(self, count: int) -> None:
        for first, size, future in self._pending[:count]:
            future.result()
            self.firsts.append(first)
            self.sizes.append(size)
        del self._pending[:count]

    def finish(self, lengths: Any) -> None:
        """``lengths``: the scanner's per-event lengths (None: those :meth:`add` was given)."""
        self._settle(len(self._pending))
        if self._worker is not None:
            self._worker.shutdown()
            self._worker = None
        if lengths is not None:
            self.lengths = lengths


class Spill(Sequence[bytes]):
    """Deflated blocks, in the order appended, kept in an unlinked temporary file (``TMPDIR``) and
    read back by position, so that what a load keeps of the raw args (~5% of the JSON) costs disk,
    not memory; where no such file can be written (or a write fails), in memory. One writer at a
    time; reads from any thread once written."""

    def __init__(self) -> None:
        self._file: BinaryIO | None = None
        self._spilling = True
        self._end = 0  # bytes written to the file
        self._blocks: list[bytes | tuple[int, int]] = []  # in memory, or (offset, length) in the file

    def append(self, data: bytes) -> None:
        if self._spilling:
            try:
                if self._file is None:
                    # open for as long as the trace lives (closed, and gone, with it)
                    self._file = tempfile.TemporaryFile(prefix="tracetui-args-", buffering=0)  # noqa: SIM115
                    weakref.finalize(self, self._file.close)
                _write_at(self._file.fileno(), data, self._end)
            except OSError:  # no temporary file, or it is full: the rest stays in memory
                self._spilling = False
            else:
                self._blocks.append((self._end, len(data)))
                self._end += len(data)
                return
        self._blocks.append(data)

    @classmethod
    def over(cls, file: BinaryIO, sizes: Sequence[int]) -> Spill:
        """Blocks of ``sizes`` bytes, end to end in ``file`` (open; it is read, never written, kept
        open for as long as the blocks are and closed with them). ValueError if the file does not
        hold exactly those bytes."""
        spill = cls()
        spill._file, spill._spilling = file, False
        weakref.finalize(spill, file.close)
        for size in sizes:
            spill._blocks.append((spill._end, size))
            spill._end += size
        if os.fstat(file.fileno()).st_size != spill._end:
            raise ValueError("the args blocks' file is not the size of its blocks")
        return spill

    def sizes(self) -> list[int]:
        """Each block's bytes, in order (none of them read)."""
        return [len(block) if isinstance(block, bytes) else block[1] for block in self._blocks]

    def __len__(self) -> int:
        return len(self._blocks)

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        block = self._blocks[index]
        if isinstance(block, bytes):
            return block
        offset, length = block
        assert self._file is not None
        data = os.pread(self._file.fileno(), length, offset)
        if len(data) != length:
            raise ValueError("damaged args block")
        return data


def _write_at(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


class ArgsBlocks:
    """Each event's args as written, from deflated blocks of consecutive events' args."""

    def __init__(
        self, firsts: Sequence[int], sizes: Sequence[int], data: Sequence[bytes], lengths: pl.Series
    ):
        self._firsts = list(firsts)
        self._sizes = list(sizes)
        self._data = data if isinstance(data, Spill) else list(data)
        self._lengths = lengths  # UInt32, one per event (0: no args)
        self._inflated: OrderedDict[int, tuple[bytes, list[int]]] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def of(cls, writer: ArgsWriter) -> ArgsBlocks:
        import polars as pl

        lengths = pl.Series("length", writer.lengths, dtype=pl.UInt32)
        return cls(writer.firsts, writer.sizes, writer.data, lengths)

    def tables(self) -> dict[str, pl.DataFrame]:
        """What a cache stores as tables: ``args_blocks`` (per block: its first event, raw and
        deflated sizes) and ``args_lengths`` (every event's length, 0: no args)."""
        import polars as pl

        data = self._data
        stored = data.sizes() if isinstance(data, Spill) else [len(block) for block in data]
        blocks = pl.DataFrame(
            {
                "first": pl.Series(self._firsts, dtype=pl.UInt32),
                "size": pl.Series(self._sizes, dtype=pl.UInt32),
                "stored": pl.Series(stored, dtype=pl.UInt32),
            }
        )
        return {"args_blocks": blocks, "args_lengths": self._lengths.to_frame("length")}

    def files(self) -> dict[str, Callable[[Path], object]]:
        """What a cache stores as a file, by name: each writes itself to the path it is given.
        ``args_data``: the deflated blocks end to end, written one block at a time (the blocks
        are ~5% of the JSON: never all in memory at once)."""
        return {ARGS_FILE: self._write_data}

    def _write_data(self, path: Path) -> None:
        with path.open("wb") as out:
            for index in range(len(self._data)):
                out.write(self._data[index])

    @classmethod
    def from_tables(cls, blocks: pl.DataFrame, lengths: pl.DataFrame, data: BinaryIO) -> ArgsBlocks:
        """The provider of :meth:`tables` and :meth:`files` (as a cache read them back: ``data``
        open on the ``args_data`` file, kept open and read a block at a time; closed with the
        provider). ValueError if ``data`` is not the size the blocks say."""
        stored = blocks["stored"].to_list()
        return cls(
            blocks["first"].to_list(), blocks["size"].to_list(), Spill.over(data, stored), lengths["length"]
        )

    def _block(self, index: int) -> tuple[bytes, list[int]]:
        """Block ``index`` inflated, and the offset of each of its events' args in it."""
        with self._lock:
            found = self._inflated.get(index)
            if found is not None:
                self._inflated.move_to_end(index)
                return found
        first = self._firsts[index]
        stop = self._firsts[index + 1] if index + 1 < len(self._firsts) else len(self._lengths)
        lengths = self._lengths.slice(first, stop - first)
        offsets = (lengths.cum_sum() - lengths).to_list()
        data = _deflate.decompress(self._data[index])
        if len(data) != self._sizes[index]:
            raise ValueError("damaged args block")
        with self._lock:
            self._inflated[index] = (data, offsets)
            while len(self._inflated) > KEEP_BLOCKS:
                self._inflated.popitem(last=False)
        return data, offsets

    def _by_block(self, ids: Sequence[int]) -> Iterator[tuple[int, list[int], list[int], list[int]]]:
        """Per block holding some of ``ids``' args: its index, and the positions in ``ids``, the
        offsets in the inflated block and the lengths of those args."""
        import polars as pl

        count = len(self._lengths)
        if not count or not len(ids):
            return
        wanted = pl.Series("id", ids, dtype=pl.Int64)
        inside = ((wanted >= 0) & (wanted < count)).alias("inside")
        frame = pl.DataFrame(
            {
                "position": pl.int_range(len(wanted), dtype=pl.UInt32, eager=True),
                "id": wanted.clip(0, count - 1),
                "length": self._lengths.gather(wanted.clip(0, count - 1)),
                "inside": inside,
            }
        ).filter(pl.col("inside") & (pl.col("length") > 0))
        firsts = pl.Series(self._firsts, dtype=pl.Int64)
        frame = frame.with_columns(block=(firsts.search_sorted(frame["id"], side="right") - 1).cast(pl.Int64))
        for (index,), part in frame.group_by("block", maintain_order=True):
            _, offsets = self._block(int(index))  # type: ignore[call-overload]
            local = (part["id"] - self._firsts[int(index)]).to_list()  # type: ignore[call-overload]
            yield (
                int(index),  # type: ignore[call-overload]
                part["position"].to_list(),
                [offsets[k] for k in local],
                part["length"].to_list(),
            )

    def raw(self, ids: Sequence[int]) -> list[msgspec.Raw]:
        out = [RAW_EMPTY] * len(ids)
        for index, positions, starts, lengths in self._by_block(ids):
            view = memoryview(self._block(index)[0])
            for position, start, length in zip(positions, starts, lengths, strict=True):
                out[position] = msgspec.Raw(view[start : start + length])
        return out

    def pick(self, ids: Sequence[int], keys: Mapping[str, str]) -> pl.DataFrame | None:
        """``id`` and, per ``keys``, the raw JSON text of that arg of each event in ``ids``, read
        by the native scanner from the inflated blocks; None if it cannot."""
        import polars as pl

        from tracetui.trace import native

        if not native.AVAILABLE:
            return None
        parts = []
        for index, positions, starts, lengths in self._by_block(ids):
            ends = [start + length for start, length in zip(starts, lengths, strict=True)]
            picked = native.pick(self._block(index)[0], starts, ends, keys)
            if picked is None:
                return None
            parts.append(picked.with_columns(pl.Series("position", positions, dtype=pl.UInt32)))
        frame = pl.DataFrame({"position": pl.Series(range(len(ids)), dtype=pl.UInt32)})
        frame = frame.with_columns(pl.Series("id", ids, dtype=pl.UInt32))
        if parts:
            found = pl.concat(parts)
            frame = frame.join(found, on="position", how="left", maintain_order="left")
        else:
            frame = frame.with_columns(pl.lit(None, pl.String).alias(name) for name in keys)
        return frame.drop("position")
