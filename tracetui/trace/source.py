"""Read a trace file (or a ``tensorboard_trace_handler`` directory) as a stream of JSON blocks.

The file is opened once and read in blocks: a regular file, or a pipe (a FIFO, ``<(zcat …)``,
``/dev/stdin``), which is read exactly once, as it comes. Devices (``/dev/zero``,
``/dev/urandom``) and sockets are refused at once. Gzip is detected by its magic bytes, not
the name, and inflated block by block (every member); a stream that ends early (a process
killed while writing) yields every byte that could be inflated and is flagged as truncated.

Nothing is trusted: the first block must start like JSON (binary data and other text are
refused with one line before anything else is inflated), and inflation is capped at
:data:`tracetui.settings.MAX_INFLATE` (100: JSON traces deflate 10-20x, a bomb ~1000x) times the
compressed bytes read so far (plus :data:`FLOOR`), so a gzip bomb
is refused early in bounded memory; ``--max-inflate`` or ``TRACETUI_MAX_INFLATE`` sets another ratio
(``0``: no cap).
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import BinaryIO

from tracetui import settings
from tracetui.errors import TraceError
from tracetui.trace.cache_files import Digest

_inflate_lib: ModuleType
try:  # igzip is ~2.5x faster than zlib at inflating large traces, and releases the GIL
    from isal import isal_zlib as _inflate_lib
except ImportError:  # pragma: no cover - isal is a declared dependency
    _inflate_lib = zlib

GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
TRACE_PATTERNS = ("*.pt.trace.json", "*.pt.trace.json.gz")
FALLBACK_PATTERNS = ("*.json", "*.json.gz", "*.json.tmp")
BLOCK = 4 << 20  # bytes of JSON per block
READ = 1 << 20  # bytes read from the file at a time
FLOOR = 256 << 20  # inflated bytes always allowed, whatever the ratio


@dataclass
class Source:
    """One trace being read: where from, and what the read found out (filled in as it goes)."""

    path: Path
    regular: bool  # a regular file (not a pipe): it can be read again and cached
    max_inflate: float  # the inflation cap: at most FLOOR + this ratio times the bytes read (0: none)
    siblings: tuple[Path, ...] = field(default_factory=tuple)
    gzipped: bool = False
    gzip_truncated: bool = False
    json_bytes: int = 0  # bytes of JSON read so far
    file_bytes: int = 0  # bytes read from the file so far
    digest: Digest = field(default_factory=Digest, repr=False)  # of those bytes (the cache's check)


def locate(path: str | Path) -> tuple[Path, tuple[Path, ...]]:
    """The trace file for ``path`` (a file, or the newest trace of a directory) and the others.
    Devices and sockets are refused here (before anything reads them)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise TraceError(path, "no such file or directory") from None
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        return _pick_from_directory(path)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise TraceError(path, "not a trace: a device, not a file")
    if stat.S_ISSOCK(mode):
        raise TraceError(path, "not a trace: a socket, not a file")
    return path, ()


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (a pipe is not: it can be read only once)."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def check_readable(path: str | Path) -> None:
    """Fail early when ``path`` is missing, a device, unreadable or empty. A pipe is only checked
    for permission: reading from it would take its data (it is read once, by the load)."""
    target, _ = locate(path)
    if not is_regular(target):
        if not os.access(target, os.R_OK):
            raise TraceError(target, "cannot read: permission denied")
        return
    try:
        with target.open("rb") as handle:
            first = handle.read(1)
    except OSError as exc:
        raise TraceError(target, f"cannot read: {exc.strerror or exc}") from None
    if not first:
        raise TraceError(target, "empty file")


def open_source(path: str | Path, max_inflate: float | None = None) -> tuple[Source, Iterator[bytes]]:
    """``path``'s source and its JSON, block by block (each about :data:`BLOCK` bytes), inflated
    within ``max_inflate`` (None: the setting, :data:`tracetui.settings.MAX_INFLATE`).

    Raises :class:`TraceError` (from the iterator too) for input that cannot be a trace.
    """
    ratio = settings.MAX_INFLATE.value() if max_inflate is None else max_inflate
    target, siblings = locate(path)
    source = Source(target, is_regular(target), ratio, siblings)
    return source, _blocks(source)


def read_fraction(source: Source, report: Callable[[float], None] | None) -> Callable[[], None] | None:
    """A callback that tells ``report`` how much of ``source``'s file was read (None: nothing to
    tell, for a pipe)."""
    if report is None or not source.regular:
        return None
    try:
        size = source.path.stat().st_size
    except OSError:
        return None
    if not size:
        return None
    told = -1

    def tell() -> None:
        nonlocal told
        percent = min(100 * source.file_bytes // size, 100)
        if percent != told:  # at most a hundred reports
            told = percent
            report(percent / 100)

    return tell


def _open(path: Path) -> BinaryIO:
    try:
        return path.open("rb", buffering=0)
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None


def _reads(source: Source, handle: BinaryIO) -> Iterator[bytes]:
    """The file's bytes as they come, :data:`READ` at a time."""
    while True:
        try:
            chunk = handle.read(READ)
        except OSError as exc:
            raise TraceError(source.path, f"cannot read: {exc.strerror or exc}") from None
        if not chunk:
            return
        source.file_bytes += len(chunk)
        source.digest.update(chunk)
        yield chunk


def _blocks(source: Source) -> Iterator[bytes]:
    handle = _open(source.path)
    try:
        reads = _reads(source, handle)
        first = b""
        for chunk in reads:  # a pipe may give one byte at a time: two tell gzip
            first += chunk
            if len(first) >= len(GZIP_MAGIC):
                break
        if not first:
            raise TraceError(source.path, "empty file")
        if first.startswith(GZIP_MAGIC):
            source.gzipped = True
            blocks = _inflated(source, first, reads)
        else:
            blocks = _plain(first, reads)
        yield from _checked(source, blocks)
    finally:
        handle.close()


def _plain(first: bytes, reads: Iterator[bytes]) -> Iterator[bytes]:
    """Blocks of about :data:`BLOCK` bytes from the reads."""
    pending = [first]
    size = len(first)
    for chunk in reads:
        pending.append(chunk)
        size += len(chunk)
        if size >= BLOCK:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def _inflated(source: Source, first: bytes, reads: Iterator[bytes]) -> Iterator[bytes]:
    """Every gzip member inflated, :data:`BLOCK` bytes at a time, within the inflation cap."""
    ratio = source.max_inflate
    inflater = _inflate_lib.decompressobj(wbits=31)
    pending = first
    out = 0
    between = False  # after a member's end: only NULs or another member may follow
    while True:
        if between:
            pending = pending.lstrip(b"\x00")
            if len(pending) < 2:
                more = next(reads, None)
                if more is None:
                    return  # the end (a lone byte after the last member is ignored)
                pending += more
                continue
            if not pending.startswith(GZIP_MAGIC):
                return  # trailing garbage after the last member: ignored
            inflater = _inflate_lib.decompressobj(wbits=31)
            between = False
        if not pending:
            more = next(reads, None)
            if more is None:
                source.gzip_truncated = True  # the stream ended inside a member
                return
            pending = more
        try:
            block = inflater.decompress(pending, BLOCK)
        except (zlib.error, _inflate_lib.error, OSError) as exc:
            if not out:
                raise TraceError(source.path, f"corrupt gzip data ({exc})") from None
            source.gzip_truncated = True
            return
        pending = inflater.unconsumed_tail
        if block:
            out += len(block)
            if ratio and out > FLOOR + ratio * (source.file_bytes - len(pending)):
                raise TraceError(
                    source.path,
                    f"gzip data inflating over {ratio:g}x (a gzip bomb?): refused after "
                    f"{out >> 20} MB; set {settings.MAX_INFLATE.name}=0 (no cap) or a higher ratio "
                    "to read it",
                )
            yield block
        if inflater.eof:
            pending = inflater.unused_data
            between = True


def _checked(source: Source, blocks: Iterator[bytes]) -> Iterator[bytes]:
    """The blocks, once the first shows JSON (a byte-order mark dropped); counts the bytes."""
    head = b""
    for block in blocks:
        if head is not None:
            head += block
            if head.startswith(BOM):
                head = head[3:]
            stripped = head.lstrip()
            if not stripped and len(head) < BLOCK:
                continue  # only whitespace so far
            _check_json_start(stripped, source.path)
            block, head = head, None  # type: ignore[assignment]
        source.json_bytes += len(block)
        yield block
    if head is not None:
        raise TraceError(source.path, "empty trace (only whitespace)" if head else "empty file")


def _check_json_start(head: bytes, path: Path) -> None:
    """Reject data that cannot be a JSON trace, with a message that says what it is."""
    if not head:
        raise TraceError(path, "empty trace (only whitespace)")
    if head[:1] not in (b"{", b"["):
        sample = head[:512]
        if b"\x00" in sample or _mostly_binary(sample):
            raise TraceError(path, "not a trace: binary data, not JSON")
        preview = head[:24].decode("utf-8", "replace").splitlines()[0]
        raise TraceError(path, f"not a trace: not JSON (starts with {preview!r})")


def _mostly_binary(sample: bytes) -> bool:
    text_bytes = sum(1 for b in sample if b >= 0x20 or b in (9, 10, 13))
    return text_bytes < 0.9 * len(sample)


def read_all(path: str | Path) -> tuple[Source, bytes]:
    """The whole JSON of ``path`` in memory (for the few callers that need it whole)."""
    source, blocks = open_source(path)
    return source, b"".join(blocks)


def _pick_from_directory(directory: Path) -> tuple[Path, tuple[Path, ...]]:
    """The newest trace file in ``directory`` and the others, newest first."""
    found: list[Path] = []
    for patterns in (TRACE_PATTERNS, FALLBACK_PATTERNS):
        found = sorted({p for pattern in patterns for p in directory.glob(pattern) if p.is_file()})
        if found:
            break
    if not found:
        raise TraceError(directory, "directory holds no trace (*.pt.trace.json[.gz] or *.json[.gz])")
    found.sort(key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)
    return found[0], tuple(found[1:])
