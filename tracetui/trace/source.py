"""Read a trace file (or a ``tensorboard_trace_handler`` directory) into JSON bytes.

Gzip is detected by its magic bytes, not the name. A gzip stream that ends early (a
process killed while writing) yields every byte that could be decompressed and is
flagged as truncated; the caller then loads every complete event.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from tracetui.errors import TraceError

_inflate_lib: ModuleType
try:  # igzip is ~2.5x faster than zlib at inflating large traces
    from isal import isal_zlib as _inflate_lib
except ImportError:  # pragma: no cover - isal is a declared dependency
    _inflate_lib = zlib

GZIP_MAGIC = b"\x1f\x8b"
TRACE_PATTERNS = ("*.pt.trace.json", "*.pt.trace.json.gz")
FALLBACK_PATTERNS = ("*.json", "*.json.gz", "*.json.tmp")


@dataclass(frozen=True)
class Source:
    """The bytes of one trace and how they were obtained."""

    path: Path
    data: bytes
    gzipped: bool = False
    gzip_truncated: bool = False
    siblings: tuple[Path, ...] = field(default_factory=tuple)


def locate(path: str | Path) -> tuple[Path, tuple[Path, ...]]:
    """The trace file for ``path`` (a file, or the newest trace of a directory) and the others."""
    path = Path(path)
    if not path.exists():
        raise TraceError(path, "no such file or directory")
    if path.is_dir():
        return _pick_from_directory(path)
    return path, ()


def check_readable(path: str | Path) -> None:
    """Fail early, reading one byte, when ``path`` is missing, unreadable or empty."""
    target, _ = locate(path)
    _read(target, limit=1)


def read_source(path: str | Path) -> Source:
    """Read ``path`` (a file or a trace directory); raise :class:`TraceError` on bad input."""
    path, siblings = locate(path)
    raw = _read(path)
    if raw.startswith(GZIP_MAGIC):
        data, truncated = _gunzip(raw, path)
        return Source(path, _check_json_start(data, path), True, truncated, siblings)
    return Source(path, _check_json_start(raw, path), False, False, siblings)


def _read(path: Path, limit: int = -1) -> bytes:
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit)
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
    if not raw:
        raise TraceError(path, "empty file")
    return raw


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


def _gunzip(raw: bytes, path: Path) -> tuple[bytes, bool]:
    """Inflate every gzip member; return the bytes and whether the stream was cut short."""
    chunks: list[bytes] = []
    rest = raw
    while rest:
        inflater = _inflate_lib.decompressobj(wbits=31)
        try:
            chunks.append(inflater.decompress(rest))
        except (zlib.error, _inflate_lib.error, OSError) as exc:
            if not chunks:
                raise TraceError(path, f"corrupt gzip data ({exc})") from None
            return b"".join(chunks), True
        if not inflater.eof:
            return b"".join(chunks), True
        rest = inflater.unused_data.lstrip(b"\x00")
        if rest and not rest.startswith(GZIP_MAGIC):
            break  # trailing garbage after the last member: ignore it
    return b"".join(chunks), False


def _check_json_start(data: bytes, path: Path) -> bytes:
    """Reject data that cannot be a JSON trace, with a message that says what it is."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    head = data[:4096].lstrip()
    if not head:
        raise TraceError(path, "empty trace (only whitespace)")
    if head[:1] not in (b"{", b"["):
        if b"\x00" in head[:512] or _mostly_binary(head[:512]):
            raise TraceError(path, "not a trace: binary data, not JSON")
        preview = head[:24].decode("utf-8", "replace").splitlines()[0]
        raise TraceError(path, f"not a trace: not JSON (starts with {preview!r})")
    return data


def _mostly_binary(sample: bytes) -> bool:
    text_bytes = sum(1 for b in sample if b >= 0x20 or b in (9, 10, 13))
    return text_bytes < 0.9 * len(sample)
