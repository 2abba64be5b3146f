"""Read a trace's JSON block by block into tables, in memory bounded by what is kept.

The native scanner (:mod:`native`) reads each block and keeps only what it makes of it: the
tables, the top-level keys, and each event's raw args, which this module deflates block by
block (:class:`~tracetui.trace.args.ArgsBlocks` reads them back on demand). Where the scanner
cannot read an event (broken or unusual JSON), that part alone, up to the next point from
which events read cleanly again, is decoded by msgspec with every repair and coercion
(:func:`decode.decode_region`), and the scan goes on after it: a big file with one defect
still streams. Only a file whose top level (outside ``traceEvents``) the scanner refuses, or
an install without the extension, is read whole and decoded by msgspec.

Importing this module (and :func:`read`) needs no polars: a command runs it on a second core
while it imports the rest (:mod:`prefetch`).
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracetui import settings
from tracetui.errors import TraceError
from tracetui.trace import limits, native, repair, timing
from tracetui.trace.args import ArgsWriter

if TYPE_CHECKING:
    from tracetui.trace.decoded import Decoded

AHEAD = 2  # blocks read ahead of the scan
PROBE = 4  # events that must read cleanly after a damaged part for the scan to resume there
REGION_CAP = 64 << 20  # bytes of a damaged part read before it is decoded anyway
# where a damaged part may end: after an event's closing brace, or at the array's closing bracket
_CANDIDATE = re.compile(rb"\}(?=[ \t\r\n]*[,\]])|(?=\])")
# where a block may be split between two scanners: an object's start after "}," (the scan of the
# part before it shows whether that was between two events, or inside one)
_SPLIT = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*(?=\{)")


@dataclass
class Streamed:
    """What a read of a trace's JSON gave, before polars: the scanned tables (in segments, in
    event order), the top-level keys, the raw args, and what the read had to do."""

    form: str  # "object" (Kineto) or "array" (legacy exporter)
    top: list[tuple[str, bytes | None]]  # top-level keys in file order, values as JSON (traceEvents: None)
    lanes: list[tuple[bytes | None, bytes | None]]  # the (pid, tid) of each lane
    segments: list[tuple[str, Any]]  # ("native", native.RawTables) or ("decoded", Decoded of a part)
    args: ArgsWriter
    truncated: bool = False
    repairs: list[str] = field(default_factory=list)
    whole: Any = None  # the Decoded of the whole document, when msgspec read it whole
    adopted: int = 0  # parts read by the other scanners and adopted
    cuts: list[limits.Cut] = field(default_factory=list)  # values cut, args not kept, by event


def read(
    path: Path,
    blocks: Iterator[bytes],
    block_of: int = 0,
    on_block: Callable[[], None] | None = None,
    workers: int | None = None,
) -> Streamed:
    """Read ``blocks`` (the JSON of ``path``); ``on_block`` is called as each is taken. ``block_of``:
    for tests, re-cut the blocks into pieces of this many bytes. The scan runs on ``workers``
    cores (:func:`scanners_for`: ``TRACETUI_WORKERS``, else the cores there are, at most
    :data:`MAX_SCANNERS`), each run of that many blocks in as many parts (the tables are the same
    either way).
    Raises :class:`TraceError` for input that is not a trace."""
    if block_of:
        blocks = _recut(blocks, block_of)
    scanner = native.scanner()
    if scanner is None:
        return _whole(path, b"", blocks)
    scanners = scanners_for(workers)
    ahead = Ahead(blocks)  # the next blocks are read and inflated while this one is scanned
    pool = ThreadPoolExecutor(scanners - 1, thread_name_prefix="tracetui-scan") if scanners > 1 else None
    try:
        with timing.span("read"):
            return _Reader(path, ahead, scanner, on_block, pool, scanners).run()
    finally:
        ahead.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)


MAX_SCANNERS = 16  # each holds a 4 MB block and the next run's: at most 128 MB of JSON in flight


def scanners_for(workers: int | None = None) -> int:
    """The scanners of a read: :func:`settings.workers` (``workers``, ``TRACETUI_WORKERS``, else the
    cores), at most :data:`MAX_SCANNERS` (one thread inflates a gzip'd trace, ~1.7 GB/s here, and one
    scanner reads ~0.5 GB/s: more would hold memory, not time)."""
    return min(settings.workers(workers), MAX_SCANNERS)


class _Reader:
    def __init__(
        self,
        path: Path,
        blocks: Iterator[bytes],
        scanner: Any,
        on_block: Callable[[], None] | None,
        pool: ThreadPoolExecutor | None = None,
        scanners: int = 1,
    ) -> None:
        self.path = path
        self.pool = pool  # scans the parts after the first of each run of blocks
        self.scanners = scanners  # the parts of a run of blocks (one per scanner)
        self.on_block = on_block
        self.blocks = blocks
        self.scanner = scanner
        self.buffer = b""
        self.exhausted = False  # the blocks have all been taken
        self.pending: _Round | None = None  # the next run of blocks, its parts' scans under way
        self.offset = 0  # bytes of JSON before self.buffer
        self.head: list[bytes] | None = []  # what was consumed before the events began
        self.segments: list[tuple[str, Any]] = []
        self.args = ArgsWriter()
        self.repairs: list[str] = []
        self.truncated = False
        self.adopted = 0
        self.cuts: list[limits.Cut] = []  # those of the parts msgspec read

    @property
    def final(self) -> bool:
        """Whether the buffer holds the rest of the input."""
        return self.exhausted and self.pending is None

    def more(self) -> bool:
        """Append the next block to the buffer (a run read ahead first: its parts' scans are dropped),
        and more until the buffer's size doubles: a unit longer than a block (an event with a 300 MB
        name) is scanned again a few times, not once a block; False at the end of the input."""
        want = 2 * len(self.buffer)
        pieces = [self.buffer]
        size = len(self.buffer)
        while True:
            if self.pending is not None:
                run, self.pending = self.pending, None
                run.cancel()
                pieces += run.blocks
                size += sum(map(len, run.blocks))
            else:
                block = self.next_block()
                if block is None:
                    break
                pieces.append(block)
                size += len(block)
            if size >= want:
                break
        if len(pieces) == 1:
            return False
        self.buffer = pieces[1] if len(pieces) == 2 and not self.buffer else b"".join(pieces)
        return True

    def next_block(self) -> bytes | None:
        """The next block of the input; None at its end."""
        if self.exhausted:
            return None
        block = next(self.blocks, None)
        if self.on_block is not None:
            self.on_block()
        if block is None:
            self.exhausted = True
        return block

    def consume(self, count: int) -> None:
        if self.head is not None:
            self.head.append(self.buffer[:count])
        self.buffer = self.buffer[count:]
        self.offset += count

    def run(self) -> Streamed:
        scanner = self.scanner
        self.more()
        while True:
            if self.pool is not None and self.head is None and scanner.state == "events":
                outcome = self.split_scan()
                if outcome is None:
                    continue
                status, consumed, why = outcome
            else:
                status, consumed, why = self.feed()
            if status == native.MORE:
                self.consume(consumed)
                self.more()
            elif status == native.EVENT:
                self.consume(consumed)
                self.damaged()
            elif status in (native.TRUNCATED, native.DOCUMENT) and scanner.state in ("start", "header"):
                return self.whole()
            elif status == native.TRUNCATED:
                self.truncated = True
                break
            elif status == native.DOCUMENT:
                if why == "no traceEvents":
                    raise TraceError(self.path, "JSON that is not a trace: no 'traceEvents' array")
                rest = self.buffer[consumed:]  # where it starts: past the whitespace, in any blocks
                at = self.offset + consumed + len(rest) - len(rest.lstrip(b" \t\r\n"))
                self.repairs.append(f"ignored what follows the events ({why} at byte {at})")
                break
            else:
                break
        if scanner.trailing_commas:
            self.repairs.append(f"removed {scanner.trailing_commas} trailing commas")
        if not scanner.events and (self.repairs or self.truncated):  # damaged, and nothing in it
            raise TraceError(self.path, "invalid JSON: no complete trace event could be read")
        form, top, lengths, lanes = scanner.finish()
        self.segments.append(("native", scanner.flush()))
        self.args.finish(lengths)
        repairs = repair.merged_reports(self.repairs)
        cuts = sorted([*((at, limits.KINDS[kind], n) for at, kind, n in scanner.cuts), *self.cuts])
        return Streamed(
            form,
            top,
            lanes,
            self.segments,
            self.args,
            self.truncated,
            repairs,
            adopted=self.adopted,
            cuts=cuts,
        )

    def split_scan(self) -> tuple[int, int, str | None] | None:
        """Read the next run of blocks on every core: this thread scans the buffer and the run up
        to its first split (an object's start after ``},`` in its second block), while the other
        scanners read the parts after it (each from a split to the next, queued while the run
        before it is read). Each part is adopted, in order, where the scan before it ended exactly
        at its start, between events; from the first that is not (a split inside an event, or a
        damaged event: the serial path reads it), the rest of the run is read by this scanner.
        None: the run was read; else the feed's outcome for :attr:`buffer`."""
        if self.pending is None:
            self.pending = self.speculate()
        if self.pending is None:
            return self.feed()
        run = self.pending
        self.pending = self.speculate()  # the next run's parts are queued behind this one's
        if not run.parts:  # no split: read serially
            self.buffer = b"".join((self.buffer, *run.blocks))
            return self.feed()
        region = b"".join((self.buffer, *run.head))
        with timing.span("read: scan"):
            status, consumed, why = self.scanner.feed(region, False)
        self.args.take(self.scanner)
        if not (status == native.MORE and consumed == len(region)):
            run.cancel()
            self.buffer = b"".join((region, *run.tail(0)))  # the serial path goes on from the scan's outcome
            return status, consumed, why
        self.offset += len(region)
        for index, (part, size, job) in enumerate(run.parts):
            with timing.span("read: waiting for the parts"):
                part_status, used, part_args = job.result()
            last = index == len(run.parts) - 1
            count = part.events
            with timing.span("read: adopt"):
                whole = part_status == native.MORE and (last or used == size)
                adopted = whole and self.scanner.adopt(part)
            if not adopted:  # read serially from this part's start on
                run.cancel(index + 1)
                self.buffer = b"".join(run.tail(index))
                return self.feed()
            self.args.add_run(part_args, count)
            self.adopted += 1
            self.offset += used
            if last:
                self.buffer = run.rest(used)
        return None

    def speculate(self) -> _Round | None:
        """The next run of blocks (one per scanner), with the scans of its parts after the first
        started; None at the end of the input."""
        blocks: list[bytes] = []
        while len(blocks) < self.scanners:
            block = self.next_block()
            if block is None:
                break
            blocks.append(block)
        if not blocks:
            return None
        run = _Round(blocks)
        if self.pool is not None:
            run.start(self.pool)
        return run

    def feed(self) -> tuple[int, int, str | None]:
        """The scanner's read of the buffer (to its end where it is final), its args taken."""
        outcome = self.scanner.feed(self.buffer, self.final)
        self.args.take(self.scanner)
        if self.head is not None and self.scanner.state not in ("start", "header"):
            self.head = None
        return outcome

    def whole(self) -> Streamed:
        """The scanner refused the top level: msgspec reads the whole document."""
        head = b"".join(self.head or [])
        return _whole(self.path, head + self.buffer, self.blocks)

    def damaged(self) -> None:
        """The scanner could not read the event at the start of the buffer: decode the part up
        to where events read cleanly again with msgspec, then go on after it."""
        from tracetui.trace.decode import decode_region
        from tracetui.trace.frames import assign_lanes

        start = self.offset
        first = self.buffer.lstrip()[:1]
        if first and (first < b" " or first >= b"\x80"):  # not JSON outside a string: stop here
            at = start + len(self.buffer) - len(self.buffer.lstrip())
            raise TraceError(self.path, f"not a trace: binary data at byte {at}, not JSON")
        end, closed = self.resync()
        part = self.buffer[:end]
        decoded = decode_region(part, closed, self.path, start)
        assign_lanes(decoded.chunks, self.scanner.add_lane)
        self.consume(end)
        scanner = self.scanner
        self.segments.append(("native", scanner.flush()))
        self.segments.append(("decoded", (decoded, scanner.events)))
        self.cuts += decoded.cuts(scanner.events)
        scanner.skip_events(decoded.args_bytes)
        self.repairs.extend(decoded.repairs)
        self.truncated |= decoded.truncated

    def resync(self) -> tuple[int, bool]:
        """Where the damaged part at the start of the buffer ends: just after an event's closing
        brace from which :data:`PROBE` events (or the end of the array) read cleanly; else, at
        the end of the input, all of it; else, past :data:`REGION_CAP`, the last event end
        before it. Also whether the part ends at such a brace (True) or at the end (False)."""
        searched, last = 1, None
        while True:
            short = False
            for match in _CANDIDATE.finditer(self.buffer, searched):
                end = match.end()
                if end > REGION_CAP and last is not None:
                    return last, True
                answer = self.scanner.probe(self.buffer, end, PROBE, self.final)
                if answer == native.PROBE_OK:
                    return end, True
                if answer == native.PROBE_SHORT:
                    short = True
                    break
                searched = end + 1
                if match.group():  # after a closing brace: a place to cut a long damaged part
                    last = end
            if self.final and not short:
                return len(self.buffer), False
            if len(self.buffer) > REGION_CAP:
                if last is not None:
                    return last, True
                kind = "binary data" if b"\x00" in self.buffer[:REGION_CAP] else "unreadable data"
                raise TraceError(self.path, f"not a trace: {kind} from byte {self.offset}")
            self.more()


class _Round:
    """A run of blocks read in parts: the first part (up to the first split: an object's start
    after ``},`` in the second block) is this thread's; each later block holds the start of one
    part, which runs to the next block's split (the last: to the run's end), read by a scanner of
    its own from that object's start (:meth:`Scanner.resume_events`) on another core."""

    def __init__(self, blocks: list[bytes]) -> None:
        self.blocks = blocks
        self.cuts: list[tuple[int, int]] = []  # per part after the first: (its block, where it starts)
        for index in range(1, len(blocks)):
            match = _SPLIT.search(blocks[index])
            if match is not None:
                self.cuts.append((index, match.end()))
        self.parts: list[tuple[Any, int, Future[tuple[int, int, bytes]]]] = []  # scanner, bytes, scan

    @property
    def head(self) -> list[bytes | memoryview]:
        """The first part: the blocks up to the first split (all of them: no split)."""
        if not self.cuts:
            return list(self.blocks)
        index, at = self.cuts[0]
        return [*self.blocks[:index], memoryview(self.blocks[index])[:at]]

    def pieces(self, part: int) -> list[bytes | memoryview]:
        """The blocks' pieces of part ``part`` (0: the one after the first)."""
        index, at = self.cuts[part]
        if part + 1 == len(self.cuts):
            return [memoryview(self.blocks[index])[at:], *self.blocks[index + 1 :]]
        end_index, end = self.cuts[part + 1]
        return [
            memoryview(self.blocks[index])[at:],
            *self.blocks[index + 1 : end_index],
            memoryview(self.blocks[end_index])[:end],
        ]

    def tail(self, part: int) -> list[bytes | memoryview]:
        """The run from the start of part ``part`` on (0: the one after the first)."""
        if part >= len(self.cuts):
            return []
        index, at = self.cuts[part]
        return [memoryview(self.blocks[index])[at:], *self.blocks[index + 1 :]]

    def rest(self, used: int) -> bytes:
        """What follows the last part's first ``used`` bytes: the run's unread end."""
        out = []
        for piece in self.tail(len(self.cuts) - 1):
            if used < len(piece):
                out.append(piece[used:])
            used = max(0, used - len(piece))
        return b"".join(out)

    def start(self, pool: ThreadPoolExecutor) -> None:
        """Queue the scans of the parts after the first, each by a new scanner."""
        for part in range(len(self.cuts)):
            pieces = self.pieces(part)
            size = sum(len(piece) for piece in pieces)
            scanner = native.scanner()
            scanner.resume_events()
            self.parts.append((scanner, size, pool.submit(_scan_part, scanner, pieces)))

    def cancel(self, first: int = 0) -> None:
        """Drop the scans of the parts from ``first`` on (those not started are not run)."""
        for _, _, job in self.parts[first:]:
            job.cancel()


def _scan_part(scanner: Any, pieces: list[bytes | memoryview]) -> tuple[int, int, bytes]:
    """A resumed scanner's read of one part (on another core): status, bytes used, raw args."""
    data = pieces[0] if len(pieces) == 1 else b"".join(pieces)  # a big join releases the GIL
    status, used, _ = scanner.feed(data, False)
    return status, used, scanner.take_args()


def _whole(path: Path, head: bytes, blocks: Iterator[bytes]) -> Streamed:
    """msgspec decodes the whole document (what the scanner cannot stream)."""
    from tracetui.trace.decode import decode_whole
    from tracetui.trace.frames import assign_lanes, lane_numbers

    data = head + b"".join(blocks)
    decoded = decode_whole(data, path)
    lane_of, lanes = lane_numbers()
    assign_lanes(decoded.chunks, lane_of)
    args = ArgsWriter()
    args.add(decoded.args_bytes)
    args.finish(None)
    return Streamed(
        decoded.form,
        [],
        lanes,
        [],
        args,
        decoded.truncated,
        list(decoded.repairs),
        whole=decoded,
        cuts=decoded.cuts(),
    )


class Ahead(Iterator[bytes]):
    """The items of an iterator, produced by a thread up to :data:`AHEAD` items ahead of the
    consumer (reading and inflating release the GIL: they overlap the scan). Its exceptions are
    raised here, in order."""

    def __init__(self, items: Iterator[bytes]) -> None:
        self._queue: queue.Queue[tuple[bytes | None, BaseException | None]] = queue.Queue(AHEAD)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._produce, args=(items,), name="tracetui-read", daemon=True
        )
        self._thread.start()

    def _produce(self, items: Iterator[bytes]) -> None:
        try:
            for item in items:
                if not self._put((item, None)):
                    return
            self._put((None, None))
        except BaseException as exc:  # handed to the consumer
            self._put((None, exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def _put(self, entry: tuple[bytes | None, BaseException | None]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __next__(self) -> bytes:
        if self._stop.is_set():
            raise StopIteration
        item, error = self._queue.get()
        if error is not None:
            self._stop.set()
            raise error
        if item is None:
            self._stop.set()
            raise StopIteration
        return item

    def close(self) -> None:
        """Stop the producer (it finishes the item in hand)."""
        self._stop.set()


def _recut(blocks: Iterator[bytes], size: int) -> Iterator[bytes]:
    for block in blocks:
        for start in range(0, len(block), size):
            yield block[start : start + size]


def decode(data: bytes, path: Path, block: int = 0, workers: int | None = None) -> Decoded:
    """Decode the JSON ``data`` in one go (as a load of a file holding it would, read in blocks of
    ``block`` bytes by ``workers`` scanners); raise :class:`TraceError` if it is not a trace."""
    return finish(read(path, iter([data] if data else []), block, workers=workers))


def finish(streamed: Streamed) -> Decoded:
    """The tables, top-level keys and raw args of a read (needs polars)."""
    import polars as pl

    from tracetui.trace.args import ArgsBlocks
    from tracetui.trace.decode import decode_top_value
    from tracetui.trace.fields import TABLE_NAMES
    from tracetui.trace.frames import chunk_tables
    from tracetui.trace.native import lanes_of, tables_of

    parts: dict[str, list[pl.DataFrame]] = {name: [] for name in TABLE_NAMES}
    whole = streamed.whole
    segments: list[tuple[str, Any]] = list(streamed.segments)
    if whole is not None:
        segments = [("decoded", (whole, 0))]
    for kind, segment in segments:
        if kind == "native":
            tables = tables_of(segment)
        else:
            part, offset = segment
            tables = chunk_tables(part.chunks, offset)
        for name, table in tables.items():
            if len(table) or not parts[name]:
                parts[name].append(table)
    tables = {name: _without_null_buffers(_concat(frames)) for name, frames in parts.items()}
    repairs = streamed.repairs
    if whole is not None:
        top, top_keys, decoder = whole.top, whole.top_keys, "msgspec"
    else:
        top, fixes = {}, []
        for key, raw in streamed.top:
            if raw is not None:
                top[key], fixed = decode_top_value(raw)
                fixes += fixed
        repairs = repair.merged_reports([*repairs, *fixes]) if fixes else repairs
        top_keys, decoder = [key for key, _ in streamed.top], "native"
    events = streamed.args.events
    repairs = [*repairs, *limits.report(streamed.cuts)]
    from tracetui.trace.decoded import Decoded

    return Decoded(
        tables,
        top,
        streamed.form,
        ArgsBlocks.of(streamed.args),
        lanes_of(streamed.lanes),
        top_keys,
        streamed.truncated,
        repairs,
        decoder,
        events,
        streamed.cuts,
    )


def _without_null_buffers(frame: Any) -> Any:
    """``frame`` with each column that holds only nulls made anew as nulls of its type: the scan
    gives such a column its full width, written (a text column 16 bytes a row); made anew, a text
    column has no buffer and a number column's zeroed one takes no memory until written. A trace
    without collectives has a dozen such columns (27 MB of 240k GPU events at 1 GB)."""
    rows = frame.height
    empty = [column.clear(rows) for column in frame.get_columns() if rows and column.null_count() == rows]
    return frame.with_columns(empty) if empty else frame


def _concat(frames: list[Any]) -> Any:
    import polars as pl

    if len(frames) == 1:
        return frames[0]
    schema = frames[0].schema
    return pl.concat([frame.cast(schema) for frame in frames], rechunk=False)  # type: ignore[arg-type]
