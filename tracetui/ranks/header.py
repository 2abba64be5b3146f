"""A trace file's top-level metadata (``distributedInfo``, ``deviceProperties`` …), read without its events.

PyTorch writes its metadata keys (``distributedInfo`` among them) before ``traceEvents``; Kineto's
on-demand traces write their ``distributedInfo`` after it. So the head of the file is read (inflated,
for gzip) only until the top-level ``"traceEvents"`` key and what came before it is decoded; when that
has no ``distributedInfo``, the tail is read: a seek for a plain file, for gzip an inflate to the end
that keeps only the last :data:`TAIL_BYTES` (bounded memory, never the whole file). Importing this
module needs neither polars nor the trace model.
"""

from __future__ import annotations

import re
import types
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from tracetui.errors import TraceError
from tracetui.trace.source import GZIP_MAGIC

_inflate_lib: types.ModuleType
try:  # the same inflater as the loader
    from isal import isal_zlib as _inflate_lib
except ImportError:  # pragma: no cover - isal is a declared dependency
    _inflate_lib = zlib

HEAD_LIMIT = 8 << 20  # metadata larger than this before traceEvents is not looked at
TAIL_BYTES = 4 << 20  # enough for a distributedInfo with hundreds of process groups
CHUNK = 64 << 10
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:')
_DIST_KEY = b'"distributedInfo"'
_DECODER = msgspec.json.Decoder(dict[str, Any])


@dataclass(frozen=True)
class Header:
    """What the head (and, if needed, the tail) of a trace file says about it."""

    form: str  # "object" (Kineto), "array" (legacy exporter), or "other" (not a trace)
    metadata: dict[str, Any] = field(default_factory=dict)  # top-level keys other than traceEvents
    distributed_from: str | None = None  # "head", "tail" or None (no distributedInfo)

    @property
    def distributed(self) -> dict[str, Any]:
        """``distributedInfo`` (empty when the trace has none or it is not an object)."""
        info = self.metadata.get("distributedInfo")
        return info if isinstance(info, dict) else {}


def read_header(path: str | Path, tail: bool = True) -> Header:
    """The top-level metadata of ``path``; with ``tail``, ``distributedInfo`` is also looked for
    after ``traceEvents`` when the head has none. Raises :class:`TraceError` if unreadable."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            gzipped = handle.read(2) == GZIP_MAGIC
            handle.seek(0)
            chunks = _inflated(handle) if gzipped else _plain(handle)
            header, head = _head(chunks)
            if tail and header.form == "object" and header.distributed_from is None:
                if gzipped:
                    last = _last_bytes(head, chunks)  # the same stream, inflated on to its end
                else:
                    handle.seek(max(0, path.stat().st_size - TAIL_BYTES))
                    last = handle.read(TAIL_BYTES)
                info = _distributed_in_tail(last)
                if info is not None:
                    return Header(header.form, {**header.metadata, "distributedInfo": info}, "tail")
            return header
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None


def _plain(handle: BinaryIO) -> Iterator[bytes]:
    while chunk := handle.read(CHUNK):
        yield chunk


def _inflated(handle: BinaryIO) -> Iterator[bytes]:
    """The decompressed stream, at most :data:`CHUNK` bytes at a time (however well it compresses),
    across gzip members; stops quietly where it is cut or corrupt (what could be inflated is what
    there is)."""
    inflater = _inflate_lib.decompressobj(wbits=31)
    pending = b""
    while True:
        if not pending:
            pending = handle.read(CHUNK)
            if not pending:
                return
        try:
            out = inflater.decompress(pending, CHUNK)
        except (zlib.error, _inflate_lib.error, OSError):
            return
        pending = inflater.unconsumed_tail
        if out:
            yield out
        if inflater.eof:
            pending = (inflater.unused_data + pending).lstrip(b"\x00")
            if pending and not pending.startswith(GZIP_MAGIC):
                return  # trailing garbage after the last member
            inflater = _inflate_lib.decompressobj(wbits=31)


def _head(chunks: Iterator[bytes]) -> tuple[Header, bytes]:
    """Decode everything before the top-level ``"traceEvents"`` key of the stream; also returns
    the bytes read so far."""
    head = bytearray()
    searched = 0
    for chunk in chunks:
        head += chunk
        start = head[:16].lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
        if start == b"[":
            return Header("array"), bytes(head)
        if start and start != b"{":
            return Header("other"), bytes(head)
        for match in _EVENTS_KEY.finditer(head, max(0, searched - 16)):
            metadata = _object_before(bytes(head[: match.start()]))
            if metadata is not None:
                info = metadata.get("distributedInfo")
                found = "head" if isinstance(info, dict) else None
                return Header("object", metadata, found), bytes(head)
        searched = len(head)
        if len(head) > HEAD_LIMIT:
            break
    return Header("other"), bytes(head)


def _object_before(prefix: bytes) -> dict[str, Any] | None:
    """The top-level keys written before a ``"traceEvents"`` key found at byte ``len(prefix)``,
    or None when that key was not at the top level (inside a string or a nested object)."""
    body = prefix.rstrip(b" \t\r\n")
    if body.endswith(b","):
        body = body[:-1]
    elif not body.endswith(b"{"):
        return None
    try:
        return _DECODER.decode(body.lstrip(b"\xef\xbb\xbf \t\r\n") + b"}")
    except msgspec.MsgspecError:
        return None


def _last_bytes(head: bytes, chunks: Iterator[bytes]) -> bytes:
    """The last :data:`TAIL_BYTES` of ``head`` and the rest of the stream, holding no more than
    about twice that."""
    kept: list[bytes] = [head[-TAIL_BYTES:]]
    size = len(kept[0])
    for chunk in chunks:
        kept.append(chunk)
        size += len(chunk)
        while size - len(kept[0]) >= TAIL_BYTES:
            size -= len(kept.pop(0))
    return b"".join(kept)[-TAIL_BYTES:]


def _distributed_in_tail(tail: bytes) -> dict[str, Any] | None:
    """``distributedInfo`` written among the top-level keys after ``traceEvents``: the object that
    starts at that key and runs to the end of the file decodes as the rest of the top level."""
    at = tail.rfind(_DIST_KEY)
    while at >= 0:
        try:
            info = _DECODER.decode(b"{" + tail[at:].rstrip(b" \t\r\n\x00")).get("distributedInfo")
        except msgspec.MsgspecError:
            info = None
        if isinstance(info, dict):
            return info
        at = tail.rfind(_DIST_KEY, 0, at)
    return None
