"""The files of a cache entry: parts named by their checksum, the manifest, and the space they take.

An entry is a folder named by its key (:func:`tracetui.trace.cache.key`). Every file in it is a
*part* named ``<stem>.<crc32>.<suffix>``: the CRC-32 of the whole file is in its name, so a part
is written once (to a temporary name, then renamed into place) and checked on every read.

* ``manifest.<crc>.json``: the key's inputs (format, code version, the file's identity), the
  trace's facts, and the stored tables with their files and schemas; present only when every
  table it lists was written (it is written last).
* ``<table>.<crc>.arrow``: one table of the trace, Arrow IPC, zstd-compressed.
* ``<file>.<crc>.bin``: a file of the trace's (``args_data``: its raw args' deflated blocks end to
  end, read back a block at a time).
* ``<kind digest>.<crc>.parts``: a result computed from the trace (a table computed after load,
  the summary, a rank's tables): named byte strings packed in one file (:func:`pack`).

Writes in progress live in ``.staging-<pid>-…`` folders and ``.tmp-<pid>-…`` files, removed by
whoever finds them when their process is gone or after :data:`STALE_S`. No polars here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import struct
import time
from collections.abc import Callable, Iterator, Mapping
from io import BufferedReader
from pathlib import Path
from typing import Any

from isal import isal_zlib

STALE_S = 3600.0  # a leftover of a live process older than this is removed anyway (pid reuse)
CHUNK = 1 << 20
MAGIC = b"TTUIPART"
_PART = re.compile(r"^(?P<stem>[^.]+)\.(?P<crc>[0-9a-f]{8})\.(?P<suffix>[a-z]+)\Z")
_LEFTOVER = re.compile(r"^\.(?:staging|tmp)-(?P<pid>[0-9]+)-")


class Damaged(Exception):
    """A part whose bytes do not match its name's checksum, or a manifest that does not parse."""


def crc32(data: bytes | memoryview, value: int = 0) -> int:
    return int(isal_zlib.crc32(data, value)) & 0xFFFFFFFF


def part_name(stem: str, data: bytes, suffix: str) -> str:
    return f"{stem}.{crc32(data):08x}.{suffix}"


def is_part(file: str, stem: str) -> bool:
    """Whether ``file`` is a part's name, of ``stem``, and a plain name in its folder (a manifest's
    listing is read as data: no other folder, no other part's file)."""
    found = _PART.match(file)
    return found is not None and found["stem"] == stem and not any(sep in stem for sep in "/\\")


def kind_stem(kind: str) -> str:
    """The file stem of a result's kind (any text: a digest of it)."""
    return hashlib.blake2b(kind.encode(), digest_size=8).hexdigest()


def temporary(folder: Path, what: str = "tmp") -> Path:
    """A fresh name for a write in progress in ``folder``, owned by this process."""
    return folder / f".{what}-{os.getpid()}-{os.urandom(6).hex()}"


def write_part(folder: Path, stem: str, data: bytes, suffix: str) -> Path:
    """``data`` as a part of ``folder``, written to a temporary name and renamed into place."""
    target = folder / part_name(stem, data, suffix)
    scratch = temporary(folder)
    try:
        scratch.write_bytes(data)
        scratch.rename(target)
    finally:
        with contextlib.suppress(OSError):
            scratch.unlink()
    return target


def write_part_with(folder: Path, stem: str, write: Callable[[Path], object], suffix: str) -> Path:
    """A part of ``folder`` that ``write(path)`` writes to a temporary file, then named by its
    checksum, read back in chunks: the part's bytes are never held in memory."""
    scratch = temporary(folder)
    try:
        write(scratch)
        with scratch.open("rb") as handle:
            target = folder / f"{stem}.{_crc_of(handle):08x}.{suffix}"
        scratch.rename(target)
    finally:
        with contextlib.suppress(OSError):
            scratch.unlink()
    return target


def _crc_of(handle: BufferedReader) -> int:
    """The CRC-32 of the open file ``handle``, read in chunks from its start."""
    handle.seek(0)
    value = 0
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    while count := handle.readinto(buffer):
        value = crc32(view[:count], value)
    return value


def checked(handle: BufferedReader, name: str) -> None:
    """Raise :class:`Damaged` unless the open part ``handle`` (named ``name``) matches its checksum;
    reads it in chunks (no big allocation)."""
    match = _PART.match(name)
    if match is None or _crc_of(handle) != int(match["crc"], 16):
        raise Damaged(name)


def read_checked(handle: BufferedReader, name: str) -> bytes:
    """The whole part ``handle`` (named ``name``), checked against its checksum."""
    handle.seek(0)
    data = handle.read()
    match = _PART.match(name)
    if match is None or crc32(data) != int(match["crc"], 16):
        raise Damaged(name)
    return data


def parts(folder: Path, stem: str, suffix: str) -> list[Path]:
    """The parts of ``folder`` with this stem and suffix (a result may have been written more than
    once, by processes that raced)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        match = _PART.match(name)
        if match is not None and match["stem"] == stem and match["suffix"] == suffix:
            found.append(folder / name)
    return found


def pack(parts: Mapping[str, bytes]) -> bytes:
    """Named byte strings in one buffer: magic, header length, JSON header, the bytes."""
    offsets: dict[str, list[int]] = {}
    at = 0
    for name, data in parts.items():
        offsets[name] = [at, len(data)]
        at += len(data)
    header = json.dumps(offsets).encode()
    return b"".join([MAGIC, struct.pack("<Q", len(header)), header, *parts.values()])


def unpack(data: bytes) -> dict[str, bytes]:
    if not data.startswith(MAGIC):
        raise Damaged("not a parts file")
    (length,) = struct.unpack_from("<Q", data, len(MAGIC))
    start = len(MAGIC) + 8
    offsets = json.loads(data[start : start + length])
    body = memoryview(data)[start + length :]
    found = {}
    for name, (at, size) in offsets.items():
        if at < 0 or at + size > len(body):
            raise Damaged("parts out of range")
        found[name] = bytes(body[at : at + size])
    return found


def manifest_bytes(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True).encode()


def read_manifest(entry: Path) -> tuple[dict[str, Any], Path] | None:
    """The entry's manifest and its file (None: there is none); :class:`Damaged` if it is bad."""
    found = parts(entry, "manifest", "json")
    if not found:
        return None
    with found[0].open("rb") as handle:
        body = json.loads(read_checked(handle, found[0].name))
    if not isinstance(body, dict):
        raise Damaged("manifest is not an object")
    return body, found[0]


def remove(path: Path) -> None:
    """Remove a folder or a file, whatever is left of it. A folder is first renamed aside (one
    atomic step; a write in progress of this process, should it stop here): a removal that takes a
    file at a time never deletes what another process installs under the name meanwhile."""
    if path.is_dir() and not path.is_symlink():
        aside = temporary(path.parent, "staging")
        try:
            path.rename(aside)
        except OSError:  # gone already, or a read-only cache: removed in place, as before
            aside = path
        shutil.rmtree(aside, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def stale(path: Path, now: float) -> bool:
    """Whether ``path`` is a write in progress whose process is gone, or one older than
    :data:`STALE_S`."""
    match = _LEFTOVER.match(path.name)
    if match is None:
        return False
    if not _alive(int(match["pid"])):
        return True
    try:
        return now - path.lstat().st_mtime > STALE_S
    except OSError:
        return False


def entries(root: Path) -> Iterator[Path]:
    """The entry folders under ``root``."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if not name.startswith(".") and (root / name).is_dir():
            yield root / name


def size_of(entry: Path, now: float | None = None) -> int:
    """The bytes ``entry`` takes (removing, when ``now`` is given, the writes in it whose process is
    gone)."""
    total = 0
    with contextlib.suppress(OSError):
        for name in os.listdir(entry):
            if now is not None and name.startswith(".") and stale(entry / name, now):
                remove(entry / name)
                continue
            with contextlib.suppress(OSError):
                total += (entry / name).lstat().st_size
    return total


def sweep(root: Path, cap: int, keep: Path | None = None) -> None:
    """One pass over the cache: remove the writes in progress whose process is gone (or very old
    ones), then the least recently used entries until all take at most ``cap`` bytes (``keep``,
    the one just written, goes last: only when it alone is over the cap)."""
    now = time.time()
    with contextlib.suppress(OSError):
        for name in os.listdir(root):
            if name.startswith(".") and stale(root / name, now):
                remove(root / name)
    sized = []
    for entry in entries(root):
        with contextlib.suppress(OSError):
            sized.append((entry == keep, entry.stat().st_mtime, size_of(entry, now), entry))
    total = sum(size for _, _, size, _ in sized)
    for _, _, size, entry in sorted(sized, key=lambda item: item[:2]):
        if total <= cap:
            break
        remove(entry)
        total -= size


def touch(entry: Path) -> None:
    """Mark ``entry`` as recently used (a read-only cache stays as it is)."""
    with contextlib.suppress(OSError):
        os.utime(entry)
