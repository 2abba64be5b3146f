"""The files of the trace cache: its store, its entries and their parts, and what it may remove.

**The store.** The cache folder (:func:`tracetui.trace.cache.directory`) may be any folder, a
user's own included (``.``, ``~/.cache``, a folder of traces): the cache keeps everything in one
subfolder of it, the store (:data:`STORE`), and never writes or removes anything else there. The
store is made whole with its ``CACHEDIR.TAG`` (the Cache Directory Tagging Specification: backup
tools skip it) naming tracetui, a folder renamed into place; a file or folder of that name without
the tag is someone else's, and the cache does not use it (:func:`store`).

**Entries.** An entry is a folder of the store named by its key (32 hex digits) that holds a
marker, ``entry.<crc>.mark`` (JSON: :data:`ENTRY_MAGIC` and the :data:`FORMAT` number). An entry
folder is made whole, marker first, as a staging folder renamed into place (:func:`entry_folder`),
so a folder without a marker was not made by the cache. Every other file of an entry is a part
named ``<stem>.<crc32>.<suffix>``: the CRC-32 of the whole file is in its name, so a part is
written once (to a temporary name, then renamed into place) and checked on every read.

* ``manifest.<crc>.json``: :data:`ENTRY_MAGIC`, the format, the key's inputs (code version, the
  trace file's identity), the digest of the file's bytes the load read (:class:`Digest`), the
  trace's facts, and the stored tables with their files and schemas; present only when every table
  it lists was written (it is written last).
* ``<table>.<crc>.arrow``: one table of the trace, Arrow IPC, zstd-compressed.
* ``<file>.<crc>.bin``: a file of the trace's (``args_data``: its raw args' deflated blocks end to
  end, read back a block at a time).
* ``<kind digest>.<crc>.parts``: a result computed from the trace (a table computed after load,
  the summary, a rank's tables): named byte strings packed in one file (:func:`pack`), with the
  trace file's identity and digest.

Files and entry folders are made without write permission for group and others, whatever the
umask: an entry that anyone else could change is not this user's to trust (:func:`owned`).

**What is removed**, ever: an entry of the store that carries its marker and is owned by this user
(:func:`remove_entry`: only the files of the cache's naming in it; a folder that holds anything
else keeps it, and stays where it is); a part of such an entry found damaged; a write in progress
whose process is gone or that is older than :data:`STALE_S`, this user's: a ``.staging-<pid>-<hex>``
folder of the store that carries a marker (or is empty), a ``.tmp-<pid>-<hex>`` file of such a
folder or of an entry, a ``.tracetui-cache-<pid>-<hex>`` folder of the cache folder that holds only
the tag (:func:`sweep`, :func:`store`). Nothing else is removed, renamed or emptied. No polars here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import struct
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from io import BufferedReader
from pathlib import Path
from typing import Any, BinaryIO

from isal import isal_zlib

FORMAT = 11  # the layout of an entry (this module's and the cache's); the code version covers the rest
# 8: the summary kept with an entry reads copies by their roofs, memory by allocating op, devices' arch
# 9: the anomalies count bad durations (bad_duration)
# 10: counter samples ("C") kept in a counters table (they were only counted among other phases)
# 11: text values over limits.MAX_TEXT are cut, args over MAX_ARGS not kept (long_string, long_args)
STORE = "tracetui-cache"
TAG = "CACHEDIR.TAG"
TAG_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"
TAG_TEXT = TAG_SIGNATURE + (
    b"\n# This file is a cache directory tag created by tracetui: this folder holds its trace cache,\n"
    b"# which it may empty at any time (see https://bford.info/cachedir/).\n"
)
ENTRY_MAGIC = "tracetui-cache-entry"
MARK = "entry"  # the marker's stem (suffix: "mark")
STALE_S = 3600.0  # a leftover of a live process older than this is removed anyway (pid reuse)
CHUNK = 1 << 20
QUICK = 64 << 10  # bytes of a trace file's head, and of its tail, in its quick digest
MAGIC = b"TTUIPART"
MANIFEST_LIMIT = 64 << 20  # a manifest is a few KB: a bigger one is not read
_PART = re.compile(r"^(?P<stem>[^.]+)\.(?P<crc>[0-9a-f]{8})\.(?P<suffix>[a-z]+)\Z")
_LEFTOVER = re.compile(r"^\.(?P<kind>staging|tmp)-(?P<pid>[0-9]+)-[0-9a-f]+\Z")
_STORE_LEFTOVER = re.compile(rf"^\.{STORE}-(?P<pid>[0-9]+)-[0-9a-f]+\Z")
_KEY = re.compile(r"^[0-9a-f]{32}\Z")
_NOT_THEIRS = 0o022  # write permission for group and others


class Damaged(Exception):
    """A part whose bytes do not match its name's checksum, a manifest that does not parse or is not
    this trace's, an entry not made from this file's bytes."""


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


# ---- the digest of a trace file's bytes ------------------------------------------------------------
@dataclass
class Digest:
    """What a load read of a trace file, taken as it reads (:meth:`update`, on each chunk): how many
    bytes, their CRC-32, and the first and last :data:`QUICK` of them. An entry records it
    (:meth:`record`); a reopen checks the quick digest (head and tail: two small reads), and for an
    entry it cannot trust, the whole (:func:`matches`)."""

    size: int = 0
    crc: int = 0
    head: bytes = b""
    tail: bytes = field(default=b"", repr=False)

    def update(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self.crc = crc32(chunk, self.crc)
        if len(self.head) < QUICK:
            self.head += chunk[: QUICK - len(self.head)]
        self.tail = chunk[-QUICK:] if len(chunk) >= QUICK else (self.tail + chunk)[-QUICK:]

    def record(self) -> dict[str, Any]:
        """As an entry's manifest keeps it (JSON values)."""
        return {"bytes": self.size, "crc32": f"{self.crc:08x}", "quick": _quick(self.head, self.tail)}


def _quick(head: bytes, tail: bytes) -> str:
    return f"{crc32(head):08x}{crc32(tail):08x}"


def checked_record(value: object) -> dict[str, Any]:
    """A digest's record as read from an entry (:class:`Damaged` if it is not one)."""
    if not isinstance(value, dict) or set(value) != {"bytes", "crc32", "quick"}:
        raise Damaged("no digest of the file")
    size, crc, quick = value["bytes"], value["crc32"], value["quick"]
    if type(size) is not int or size < 0 or not isinstance(crc, str) or not isinstance(quick, str):
        raise Damaged("no digest of the file")
    return value


def matches(path: Path, record: dict[str, Any], whole: bool) -> bool:
    """Whether the file at ``path`` now starts with the bytes ``record`` is the digest of: its head
    and tail (``whole``: every byte, read in chunks: no big allocation)."""
    size = record["bytes"]
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        if os.fstat(fd).st_size < size:
            return False
        head = os.pread(fd, min(QUICK, size), 0)
        start = max(0, size - QUICK)
        if _quick(head, os.pread(fd, size - start, start)) != record["quick"]:
            return False
        if not whole:
            return True
        value, done = 0, 0
        while done < size:
            chunk = os.pread(fd, min(CHUNK, size - done), done)
            if not chunk:
                return False
            value, done = crc32(chunk, value), done + len(chunk)
        return f"{value:08x}" == record["crc32"]
    except OSError:
        return False
    finally:
        os.close(fd)


# ---- trust -------------------------------------------------------------------------------------------
def owned(status: os.stat_result) -> bool:
    """Whether a file or folder is this user's and nobody else may write it: an entry made of such
    files, in such a folder, is one this user's tracetui wrote, unchanged since (no other user can
    have planted or altered it)."""
    return status.st_uid == os.geteuid() and not status.st_mode & _NOT_THEIRS


def _mine(path: Path) -> os.stat_result | None:
    """``path``'s status (not following a link) when it is this user's, else None."""
    try:
        status = path.lstat()
    except OSError:
        return None
    return status if status.st_uid == os.geteuid() else None


def open_part(path: Path) -> BufferedReader:
    """A file of the store opened for reading: a regular file, not a link (a planted link or FIFO is
    never followed, never waited on: :class:`Damaged`)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Damaged(f"{path.name}: not a file")
    return os.fdopen(fd, "rb")


# ---- the store -----------------------------------------------------------------------------------------
def store(root: Path, create: bool = False) -> Path | None:
    """The store under the cache folder ``root`` (None: there is none, or the folder of its name is not
    the cache's); ``create``: made if missing, whole with its tag (a folder of ``root`` named as the
    cache names its writes, renamed into place). Raises nothing."""
    folder = root / STORE
    if tagged(folder):
        return folder
    if not create or os.path.lexists(folder):
        return None  # a file or folder of someone else's has the name: never used, never changed
    try:
        root.mkdir(parents=True, exist_ok=True)
        _remove_stale_stores(root)
        staging = temporary(root, STORE)
        os.mkdir(staging)  # as the umask says: a store may be shared (each entry is its owner's alone)
    except OSError:
        return None
    try:
        with _created(staging / TAG) as handle:
            handle.write(TAG_TEXT)
        staging.rename(folder)
    except OSError:  # another process made it meanwhile, or a read-only folder
        pass
    finally:
        _discard_store(staging)
    return folder if tagged(folder) else None


def _discard_store(staging: Path) -> None:
    """Remove a store being made that was not renamed into place: its tag, then the folder (only
    when it holds nothing else)."""
    with contextlib.suppress(OSError):
        if tagged(staging):
            (staging / TAG).unlink()
        staging.rmdir()


def _remove_stale_stores(root: Path) -> None:
    """Stores being made (in ``root``, a folder of the user's) whose process is gone: of the cache's
    naming, this user's, holding only the tag."""
    now = time.time()
    for name in os.listdir(root):
        if _STORE_LEFTOVER.match(name) and stale(root / name, now) and _mine(root / name) is not None:
            _discard_store(root / name)


def tagged(folder: Path) -> bool:
    """Whether ``folder`` is a folder (not a link) with tracetui's cache tag."""
    try:
        if not stat.S_ISDIR(folder.lstat().st_mode):
            return False
        with open_part(folder / TAG) as handle:
            return handle.read(len(TAG_TEXT) + 1) == TAG_TEXT
    except (OSError, Damaged):
        return False


def write_part_at(target: Path, data: bytes) -> None:
    """``data`` at ``target``: written to a temporary name beside it and renamed into place."""
    scratch = temporary(target.parent)
    try:
        with _created(scratch) as handle:
            handle.write(data)
        scratch.rename(target)
    finally:
        with contextlib.suppress(OSError):
            scratch.unlink()


@contextlib.contextmanager
def _created(path: Path) -> Iterator[BinaryIO]:
    """A new file at ``path``, writable by this user only (readable as the umask allows)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as handle:
        yield handle


# ---- entries -------------------------------------------------------------------------------------------
def marker_bytes() -> bytes:
    return json.dumps({"magic": ENTRY_MAGIC, "format": FORMAT}, sort_keys=True).encode()


def marked(folder: Path) -> bool:
    """Whether ``folder`` carries an entry's marker (of any format: entries of other versions are the
    cache's too)."""
    for part in parts(folder, MARK, "mark"):
        try:
            with open_part(part) as handle:
                body = json.loads(read_checked(handle, part.name, limit=4096))
        except (OSError, ValueError, Damaged):
            continue
        if isinstance(body, dict) and body.get("magic") == ENTRY_MAGIC and type(body.get("format")) is int:
            return True
    return False


def is_entry(folder: Path) -> bool:
    """Whether ``folder`` is an entry: a key's name, a folder (not a link), with its marker."""
    try:
        is_folder = stat.S_ISDIR(folder.lstat().st_mode)
    except OSError:
        return False
    return is_folder and _KEY.match(folder.name) is not None and marked(folder)


def new_folder(store: Path) -> Path:
    """A staging folder of ``store`` for a write of this process: this user's only to write, its
    marker in it."""
    staging = temporary(store, "staging")
    os.mkdir(staging, 0o755)  # the umask may take more; group and others never write
    try:
        write_part(staging, MARK, marker_bytes(), "mark")
    except BaseException:
        _empty(staging)
        raise
    return staging


def entry_folder(store: Path, key: str, create: bool = False) -> Path | None:
    """The entry folder of ``key`` (None: there is none, or the folder of its name is not an entry);
    ``create``: made whole, with its marker, if missing."""
    entry = store / key
    if is_entry(entry):
        return entry
    if not create or os.path.lexists(entry):
        return None
    staging = new_folder(store)
    try:
        staging.rename(entry)
    except OSError:  # another process made it meanwhile
        _empty(staging)
    return entry if is_entry(entry) else None


def entries(store: Path) -> Iterator[Path]:
    """This user's entries in ``store`` (another user's are theirs to keep and to remove)."""
    try:
        names = os.listdir(store)
    except OSError:
        return
    for name in names:
        if _KEY.match(name) and _mine(store / name) is not None and is_entry(store / name):
            yield store / name


def _ours(name: str) -> bool:
    """Whether a file's name in an entry is of the cache's naming (a part, a write in progress)."""
    return _PART.match(name) is not None or _LEFTOVER.match(name) is not None


def remove_entry(entry: Path) -> None:
    """Remove an entry of this user's (anything else: left as it is). It is renamed aside first (one
    atomic step; never what another process installs under the name meanwhile), then its files
    removed, the marker last; an entry holding anything not of the cache's naming loses only the
    cache's files, in place."""
    if _mine(entry) is None or not is_entry(entry):
        return
    try:
        names = os.listdir(entry)
    except OSError:
        return
    if not all(_ours(name) for name in names):
        _empty(entry)  # its parts go, the folder stays (no longer an entry) with what is not the cache's
        return
    aside = temporary(entry.parent, "staging")
    try:
        entry.rename(aside)
    except OSError:  # gone already, or a read-only cache: emptied in place, as before
        aside = entry
    _empty(aside)


def remove_part(part: Path) -> None:
    """Remove a part of an entry (a damaged one) if it is this user's."""
    if _mine(part) is not None:
        with contextlib.suppress(OSError):
            part.unlink()


def discard(staging: Path) -> None:
    """Remove a staging folder of this process's (what a write it stopped left)."""
    _empty(staging)


def _empty(folder: Path) -> None:
    """Remove the files of the cache's naming in ``folder`` (the marker last: a removal cut short
    leaves a folder still known as the cache's), then the folder if nothing else is left."""
    try:
        names = sorted(os.listdir(folder), key=lambda name: name.startswith(f"{MARK}."))
    except OSError:
        return
    for name in names:
        if not _ours(name):
            continue
        with contextlib.suppress(OSError):
            if not stat.S_ISDIR((folder / name).lstat().st_mode):
                (folder / name).unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when empty: a file of someone else's keeps it


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
    """Whether ``path`` is a write in progress (by its name) whose process is gone, or one older than
    :data:`STALE_S`."""
    match = _LEFTOVER.match(path.name) or _STORE_LEFTOVER.match(path.name)
    if match is None:
        return False
    if not _alive(int(match["pid"])):
        return True
    try:
        return now - path.lstat().st_mtime > STALE_S
    except OSError:
        return False


def _remove_leftover(path: Path) -> None:
    """A stale staging folder of the store: the cache's (its marker, or nothing in it: made, then
    killed before its marker was written) and this user's. Anything else is left."""
    status = _mine(path)
    if status is None or not stat.S_ISDIR(status.st_mode) or not path.name.startswith(".staging-"):
        return
    if marked(path):
        _empty(path)
    else:
        with contextlib.suppress(OSError):
            path.rmdir()  # only when empty


def size_of(entry: Path, now: float | None = None) -> int:
    """The bytes ``entry`` takes (removing, when ``now`` is given, the writes in it whose process is
    gone)."""
    total = 0
    with contextlib.suppress(OSError):
        for name in os.listdir(entry):
            path = entry / name
            if now is not None and stale(path, now) and _LEFTOVER.match(name)["kind"] == "tmp":  # type: ignore[index]
                remove_part(path)
                continue
            with contextlib.suppress(OSError):
                total += path.lstat().st_size
    return total


def sweep(store: Path, cap: int, keep: Path | None = None) -> None:
    """One pass over the store: remove the writes in progress whose process is gone (or very old
    ones), then this user's least recently used entries until they take at most ``cap`` bytes
    (``keep``, the one just written, goes last: only when it alone is over the cap)."""
    if not tagged(store):
        return
    now = time.time()
    with contextlib.suppress(OSError):
        for name in os.listdir(store):
            if stale(store / name, now):
                _remove_leftover(store / name)
    sized = []
    for entry in entries(store):
        with contextlib.suppress(OSError):
            sized.append((entry == keep, entry.stat().st_mtime, size_of(entry, now), entry))
    total = sum(size for _, _, size, _ in sized)
    for _, _, size, entry in sorted(sized, key=lambda item: item[:2]):
        if total <= cap:
            break
        remove_entry(entry)
        total -= size


def touch(entry: Path) -> None:
    """Mark ``entry`` as recently used (a read-only cache, another user's entry: as it is)."""
    with contextlib.suppress(OSError):
        os.utime(entry)


# ---- parts -----------------------------------------------------------------------------------------------
def temporary(folder: Path, what: str = "tmp") -> Path:
    """A fresh name for a write in progress in ``folder``, owned by this process."""
    return folder / f".{what}-{os.getpid()}-{os.urandom(6).hex()}"


def write_part(folder: Path, stem: str, data: bytes, suffix: str) -> Path:
    """``data`` as a part of ``folder``, written to a temporary name and renamed into place."""
    target = folder / part_name(stem, data, suffix)
    write_part_at(target, data)
    return target


def write_part_with(folder: Path, stem: str, write: Callable[[Path], object], suffix: str) -> Path:
    """A part of ``folder`` that ``write(path)`` writes to a temporary file (made first, this user's
    only to write), then named by its checksum, read back in chunks: the part's bytes are never held
    in memory."""
    scratch = temporary(folder)
    try:
        with _created(scratch):
            pass
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


def read_checked(handle: BufferedReader, name: str, limit: int = -1) -> bytes:
    """The whole part ``handle`` (named ``name``), checked against its checksum (``limit``: at most
    that many bytes, else :class:`Damaged`)."""
    handle.seek(0)
    data = handle.read(limit if limit < 0 else limit + 1)
    match = _PART.match(name)
    if match is None or (limit >= 0 and len(data) > limit) or crc32(data) != int(match["crc"], 16):
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
    try:
        offsets = json.loads(data[start : start + length])
    except ValueError:
        raise Damaged("parts header") from None
    body = memoryview(data)[start + length :]
    found = {}
    for name, (at, size) in offsets.items():
        if at < 0 or at + size > len(body):
            raise Damaged("parts out of range")
        found[name] = bytes(body[at : at + size])
    return found


def manifest_bytes(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True).encode()


def read_manifest(entry: Path) -> tuple[dict[str, Any], bool] | None:
    """The entry's manifest, and whether its file is :func:`owned` (None: there is none);
    :class:`Damaged` if it is bad."""
    found = parts(entry, "manifest", "json")
    if not found:
        return None
    with open_part(found[0]) as handle:
        mine = owned(os.fstat(handle.fileno()))
        try:
            body = json.loads(read_checked(handle, found[0].name, limit=MANIFEST_LIMIT))
        except ValueError:
            raise Damaged("manifest does not parse") from None
    if not isinstance(body, dict):
        raise Damaged("manifest is not an object")
    return body, mine
