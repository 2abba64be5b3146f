"""A disk cache of loaded traces: a trace opened again comes back in a fraction of a second.

**Where.** ``$TRACETUI_CACHE_DIR``, else the user cache folder (platformdirs; on Linux
``$XDG_CACHE_HOME/tracetui``, else ``~/.cache/tracetui``); ``TRACETUI_NO_CACHE=1`` turns it off.
That folder may be any folder, a user's own or a shared one: the cache keeps everything in one
subfolder of it that it tagged as its own, ``tracetui-cache/`` (:mod:`tracetui.trace.cache_files`),
and removes only entries it wrote there (each carries its marker), never anything else. Only
traces of at least ``TRACETUI_CACHE_MIN_BYTES`` (default 8 MiB) of JSON are stored; this user's
entries take at most ``TRACETUI_CACHE_MAX`` (default 4G) in all, the least recently used removed
first. The trace file itself is never written.

**Keyed** so that it never serves wrong data: an entry's key is a digest of the trace file's identity
(resolved path, device, inode, size, modification and change times: :func:`identity`), of the code
that computed it (:func:`code_version`: tracetui's version, the entry format, the compiled scanner's
digest) and of :data:`SALT`. The loader takes the identity *before* it reads the file, and a digest
of the bytes it reads as it reads them (:class:`~tracetui.trace.cache_files.Digest`: their count,
CRC-32, head and tail); the entry is written only if the file still has that identity after the
load, so a file that grew, was rewritten or renamed over meanwhile is not cached.

**Verified** on every read: each file of an entry carries its CRC-32 in its name; opening an entry
checks every table and file (a streamed CRC, no big allocation), each table's schema against the
manifest, and the file's head and tail against the entry's digest; a table is checked again when it
is read (its CRC and rows). A damaged, partial, foreign or stale entry is not used (this user's is
removed) and the trace is loaded from its file.

**Trusted** only as far as its files are. Threat: a cache folder that others can write (shared, or
someone else's), where another user plants an entry under a trace's key (keys are computed from
what anyone who can ``stat`` the file sees) so that it reports another trace's data. An entry is
trusted when its folder and every file of it read are this user's and nobody else may write them
(:func:`cache_files.owned`; the cache makes them so, whatever the umask): nobody else can have
planted or changed it, and a reopen checks the file's identity and the digest of its head and tail
(two 64 KiB reads). Any other entry (another user's, or one others may write) is used only if the
digest of *every* byte of the file, read again now, matches the one it records (once per file per
process: the 90 MB trace's 6 MB file, a few ms; a 1 GB one's ~100 MB, ~0.05 s), and its results
likewise. That stops an entry made from another file, or planted by anyone who has not read this
trace; it cannot stop a writer of the folder who has read this trace (or its digest, in its own
entry) and forges tables under its digest: share a cache folder only with people you would let
edit your traces. Other users' entries are never removed.

**Lazy**: an entry holds the model's tables (Arrow IPC, zstd), its raw args' file and facts; each
is written straight to its file (never whole in memory beside the model); the trace it gives reads
each table on first use (:class:`EntryTables`, through :func:`tracetui.trace.model.read_table`),
and results computed from the trace later (a table computed after load, the summary, a rank's
tables: :func:`derived`) are files of the entry too, keyed and verified the same way.

**Best effort, and visible**: a read-only or full disk, a missing entry, an entry not to be used are
expected, and mean a normal load (nothing left behind). Any other exception in the cache is a
failure: counted (:func:`counts`, in ``summary --json``), told once per process on stderr
(``TRACETUI_DEBUG=1``: with its traceback, every time), and the load goes on without the cache.

Free of heavy imports: the CLI checks for an entry before polars is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from functools import cache, partial
from io import BufferedReader
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracetui import __version__, settings
from tracetui.errors import TraceError
from tracetui.trace import cache_files as files

if TYPE_CHECKING:
    import polars as pl

    from tracetui.trace.args import RawArgs
    from tracetui.trace.model import PartStore, TableSource, Trace

FORMAT = files.FORMAT
SALT = ""  # part of every key: a test that needs entries no other code wrote sets it
SETTLE_S = 120.0  # how long a process that exits waits for its entry to be written


def directory() -> Path | None:
    """The cache folder (``$TRACETUI_CACHE_DIR``, else the platform's user cache folder), or None
    when caching is off. The cache keeps its files in one subfolder of it (:data:`files.STORE`)."""
    if settings.NO_CACHE.value():
        return None
    if root := settings.CACHE_DIR.get():
        return root
    import platformdirs  # imported only when no folder is named (a few ms)

    return platformdirs.user_cache_path("tracetui", appauthor=False)


def max_bytes() -> int:
    """This user's entries' total size cap: ``TRACETUI_CACHE_MAX`` (a size), else 4 GiB."""
    return settings.CACHE_MAX.value()


def min_bytes() -> int:
    """The JSON a trace must hold to be cached: ``TRACETUI_CACHE_MIN_BYTES`` (a size), else 8 MiB."""
    return settings.CACHE_MIN_BYTES.value()


def debug() -> bool:
    """Whether ``TRACETUI_DEBUG`` asks for tracebacks."""
    return settings.DEBUG.value()


def identity(path: Path) -> str | None:
    """What the key says about the file now (None: it cannot be stat'ed)."""
    try:
        stat = path.stat()
        resolved = path.resolve()
    except OSError:
        return None
    return f"{resolved}\0{stat.st_dev}\0{stat.st_ino}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}"


@cache
def code_version() -> str:
    """What the key says of the code that computed an entry: tracetui's version, the entry
    :data:`FORMAT` and :func:`scanner_abi`. A change to what the model or a cached result computes
    comes with a new version or, between releases, a new :data:`FORMAT`: editing the sources
    otherwise (a comment, a docstring, the explorer) keeps the users' entries."""
    return f"{__version__}/{FORMAT}/{scanner_abi()}"


def scanner_abi() -> str:
    """The compiled scanner the tables were read with: a digest of its file (a rebuilt scanner may
    read a trace otherwise), or ``none`` (the msgspec path, where it is not built)."""
    try:
        spec = importlib.util.find_spec("tracetui.trace._scan")
        if spec is None or spec.origin is None:
            return "none"
        return hashlib.blake2b(Path(spec.origin).read_bytes(), digest_size=8).hexdigest()
    except (OSError, ImportError, ValueError):
        return "none"


def key(ident: str) -> str:
    return hashlib.blake2b(f"{code_version()}\0{SALT}\0{ident}".encode(), digest_size=16).hexdigest()


# ---- what the cache did: counted, failures told ------------------------------------------------------
_counts = {"hits": 0, "misses": 0, "rejected": 0, "failures": 0}
_counts_lock = threading.Lock()


def counts() -> dict[str, Any]:
    """This process's use of the cache (``summary --json``'s ``cache``): whether it is on; trace
    lookups that found an entry (``hits``), none (``misses``), one not to be used (``rejected``:
    damaged, stale, not made from the file's bytes; results too); ``failures``: unexpected errors of
    the cache's own, each of which left the work to a normal load."""
    with _counts_lock:
        counted = dict(_counts)
    return {"enabled": not settings.NO_CACHE.value(), **counted}


def _count(what: str) -> None:
    with _counts_lock:
        _counts[what] += 1


def _failed(doing: str) -> None:
    """In an ``except`` block: an unexpected error of the cache while ``doing``. Counted; the first
    of the process is one line on stderr; ``TRACETUI_DEBUG`` prints each one's traceback. A bad
    setting is not the cache's failure: it goes on (one line, exit 2)."""
    error = sys.exc_info()[1]
    if isinstance(error, settings.SettingError):
        raise error
    with _counts_lock:
        _counts["failures"] += 1
        first = _counts["failures"] == 1
    if first:
        words = (str(error).splitlines() or [""])[0][:200]
        hint = "" if debug() else " (TRACETUI_DEBUG=1 shows the traceback)"
        with contextlib.suppress(Exception):
            sys.stderr.write(
                f"tracetui: the trace cache failed {doing} ({type(error).__name__}: {words}); "
                f"traces are loaded from their files instead{hint}\n"
            )
    if debug():
        with contextlib.suppress(Exception):
            traceback.print_exc()


# ---- where an entry is -------------------------------------------------------------------------------------
def entry_for(path: Path) -> Path | None:
    """The entry folder for a trace file as it is now (existing or not; once a write of it in
    progress in this process has finished); None when caching is off."""
    ident = identity(path)
    return None if ident is None else _entry(ident)


def _entry(ident: str) -> Path | None:
    root = directory()
    return None if root is None else _settled(root / files.STORE / key(ident))


def has_entry(path: Path) -> bool:
    """Whether a complete entry exists for ``path`` (cheap: a stat and a listing). Where the cache is
    on and there is none, a miss is counted: the caller loads the file."""
    try:
        entry = entry_for(path)
        found = entry is not None and bool(files.parts(entry, "manifest", "json"))
    except Exception:
        _failed("looking for an entry")
        return False
    if entry is not None and not found:
        _count("misses")
    return found


def _folder_owned(entry: Path) -> bool:
    try:
        return files.owned(entry.lstat())
    except OSError:
        return False


# ---- reading --------------------------------------------------------------------------------------
def lookup(
    path: Path, siblings: tuple[Path, ...], raw_args: Callable[[TableSource, str], RawArgs]
) -> Trace | None:
    """The cached trace of ``path`` (its file as it is now), or None. The trace reads its tables
    on first use, its raw args from the provider ``raw_args(tables, identity)`` gives (the
    loader's: from the entry's tables where the trace stored its provider's, else the file), and
    keeps what it computes later in the entry. An entry not to be used is a miss (this user's is
    removed)."""
    try:
        return _lookup(path, siblings, raw_args)
    except Exception:
        _failed("reading an entry")
        return None


def _lookup(
    path: Path, siblings: tuple[Path, ...], raw_args: Callable[[TableSource, str], RawArgs]
) -> Trace | None:
    ident = identity(path)
    entry = None if ident is None else _entry(ident)
    if ident is None or entry is None:
        return None
    if not files.parts(entry, "manifest", "json") or not files.is_entry(entry):
        _count("misses")
        return None
    tables: EntryTables | None = None
    try:
        found = files.read_manifest(entry)
        if found is None:
            _count("misses")
            return None
        manifest = _checked_manifest(found[0], ident)
        trusted = found[1] and _folder_owned(entry)  # else: every byte checked before a table is opened
        if not files.matches(path, manifest["source"], whole=not trusted):
            raise files.Damaged("not made from this file's bytes")
        tables = EntryTables(path, entry, manifest["tables"], manifest["files"])
        if trusted and not tables.owned and not files.matches(path, manifest["source"], whole=True):
            raise files.Damaged("not made from this file's bytes")
        from tracetui.trace.model import Trace

        try:
            args = raw_args(tables, ident)
            parts = EntryParts(path, ident)
            trace = Trace.restored(path, siblings, tables, manifest["facts"], args, parts)
        except (KeyError, TypeError) as exc:  # facts of another shape
            raise files.Damaged(f"facts: {exc}") from None
    except files.Damaged:
        _close(tables)
        files.remove_entry(entry)
        _count("rejected")
        return None
    except OSError:  # removed meanwhile, unreadable: a miss
        _close(tables)
        _count("misses")
        return None
    except BaseException:
        _close(tables)
        raise
    _count("hits")
    _digests[ident] = manifest["source"]
    files.touch(entry)
    return trace


def _close(tables: EntryTables | None) -> None:
    if tables is not None:
        tables.close()


def _checked_manifest(body: dict[str, Any], ident: str) -> dict[str, Any]:
    """``body`` if it is a manifest of this code's entries for the file at ``ident``, else
    :class:`files.Damaged`."""
    expected = (files.ENTRY_MAGIC, FORMAT, code_version(), ident)
    if tuple(body.get(name) for name in ("magic", "format", "code", "identity")) != expected:
        raise files.Damaged("another trace's entry, or another code's")
    if not all(isinstance(body.get(name), dict) for name in ("tables", "files", "facts")):
        raise files.Damaged("manifest of another shape")
    files.checked_record(body.get("source"))
    return body


class EntryTables:
    """The tables of an entry (a :class:`~tracetui.trace.model.TableSource`), each read (and
    checked) on first use. Every file is opened and checked when the entry is opened, and read later
    through that handle: an entry removed or replaced meanwhile (by another process) is still read
    whole and unchanged. ``owned``: every file is this user's alone (:func:`files.owned`)."""

    def __init__(self, path: Path, entry: Path, listed: dict[str, Any], listed_files: dict[str, Any]) -> None:
        import polars as pl

        self.path = path
        self.entry = entry
        self.names = tuple(listed)
        self.files = tuple(listed_files)
        self.owned = True
        self._files: dict[str, str] = {}
        self._schemas: dict[str, list[list[str]]] = {}
        self._heights: dict[str, int] = {}
        self._handles: dict[str, BufferedReader] = {}
        self._lock = threading.Lock()
        try:
            for name, table in listed.items():
                if not isinstance(table, dict) or not {"file", "schema", "rows"} <= set(table):
                    raise files.Damaged(f"table {name}")
                file, schema, rows = str(table["file"]), table["schema"], table["rows"]
                if not files.is_part(file, name) or type(rows) is not int:
                    raise files.Damaged(file)
                handle = self._open(file, name)
                handle.seek(0)
                try:
                    found = _schema(pl.read_ipc_schema(handle))
                except Exception:  # its checksum holds: not an Arrow file, or another one
                    raise files.Damaged(f"{file}: not an Arrow file") from None
                if found != schema:
                    raise files.Damaged(f"{file}: not the table the manifest lists")
                self._files[name], self._schemas[name], self._heights[name] = file, schema, rows
            for name, file in listed_files.items():
                if not isinstance(file, str) or not files.is_part(file, name) or name in listed:
                    raise files.Damaged(str(file))
                self._open(file, name)
        except BaseException:
            self.close()
            raise

    def _open(self, file: str, name: str) -> BufferedReader:
        self._handles[name] = handle = files.open_part(self.entry / file)
        self.owned = self.owned and files.owned(os.fstat(handle.fileno()))
        files.checked(handle, file)
        return handle

    def scan(self, name: str) -> pl.LazyFrame:
        """Table ``name``: its file read now (and checked again: its CRC), decompressed when
        collected, only the columns selected."""
        import polars as pl

        with self._lock:
            handle = self._handles.get(name)
            if handle is None or name not in self._files:  # a file, not a table
                raise KeyError(name)
            try:
                data = files.read_checked(handle, self._files[name])
            except (OSError, files.Damaged):
                raise self.damaged(f"table {name}") from None
        return pl.scan_ipc(data)

    def file(self, name: str) -> BufferedReader:
        """File ``name``, open and checked when the entry was opened; the caller closes it."""
        with self._lock:
            if name not in self.files or name not in self._handles:
                raise KeyError(name)
            return self._handles.pop(name)

    def damaged(self, what: str) -> TraceError:
        """Remove the entry (``what`` of it was found damaged while in use); the error to raise."""
        files.remove_entry(self.entry)
        _count("rejected")
        return TraceError(self.path, f"its cache entry was damaged while in use ({what}); open it again")

    def columns(self, name: str) -> list[str]:
        """The columns of table ``name``, in order (as the manifest lists them)."""
        return [column for column, _ in self._schemas[name]]

    def height(self, name: str) -> int:
        """The rows of table ``name`` (as the manifest lists them; checked when it is read)."""
        return self._heights[name]

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        for handle in self._handles.values():
            with contextlib.suppress(OSError):
                handle.close()
        self._handles.clear()


def _schema(schema: Any) -> list[list[str]]:
    return [[name, str(dtype)] for name, dtype in schema.items()]


# ---- results computed from a trace --------------------------------------------------------------------
_digests: dict[str, dict[str, Any]] = {}  # by file identity: the digest of the bytes a load read
_whole_checked: dict[tuple[str, bytes], bool] = {}  # by identity and digest: every byte matched


class EntryParts:
    """The model's :class:`~tracetui.trace.model.PartStore` for a trace loaded from (or stored to)
    the entry of ``path`` at identity ``ident``: results it computes later are kept there."""

    def __init__(self, path: Path, ident: str) -> None:
        self.path = path
        self.ident = ident

    def get(self, kind: str) -> dict[str, bytes] | None:
        return _result(self.path, self.ident, kind)  # files of their own: no waiting for the writer

    def put(self, kind: str, parts: dict[str, bytes]) -> None:
        store_derived(self.path, kind, self.ident, parts)


def derived(path: Path, kind: str) -> dict[str, bytes] | None:
    """The parts stored for ``path`` (its file as it is now) and ``kind``, checked; None on a miss."""
    ident = identity(path)
    return None if ident is None else _result(path, ident, kind)


def _result(path: Path, ident: str, kind: str) -> dict[str, bytes] | None:
    try:
        root = directory()
        entry = None if root is None else root / files.STORE / key(ident)
        if entry is None or not files.is_entry(entry):
            return None
        trusted = _folder_owned(entry)
        for part in files.parts(entry, files.kind_stem(kind), "parts"):
            found = _part(path, ident, kind, part, trusted)
            if found is not None:
                files.touch(entry)
                return found
    except Exception:
        _failed("reading a result")
    return None


def _part(path: Path, ident: str, kind: str, part: Path, trusted: bool) -> dict[str, bytes] | None:
    """Result ``part`` of the entry of ``path`` (at ``ident``), if it is good to use."""
    try:
        with files.open_part(part) as handle:
            trusted = trusted and files.owned(os.fstat(handle.fileno()))
            found = files.unpack(files.read_checked(handle, part.name))
        if found.pop(".kind", None) != kind.encode() or found.pop(".identity", None) != ident.encode():
            raise files.Damaged("another kind, or another file's")
        record = found.pop(".digest", None)
        if not trusted and not _whole_matches(path, ident, record):
            raise files.Damaged("not made from this file's bytes")
    except files.Damaged:
        files.remove_part(part)
        _count("rejected")
        return None
    except OSError:  # removed meanwhile, unreadable
        return None
    return found


def _whole_matches(path: Path, ident: str, record: bytes | None) -> bool:
    """Whether every byte of ``path`` (at ``ident``) is what the digest ``record`` says (JSON; read
    once per file and digest in a process)."""
    if record is None:
        return False
    memo = (ident, record)
    if memo not in _whole_checked:
        try:
            checked = files.checked_record(json.loads(record))
        except (ValueError, files.Damaged):
            return False
        _whole_checked[memo] = files.matches(path, checked, whole=True)
    return _whole_checked[memo]


# ---- writing ----------------------------------------------------------------------------------------
def store_derived(path: Path, kind: str, ident: str | None, parts: dict[str, bytes]) -> bool:
    """Keep ``parts``, computed from ``path`` as it was at ``ident`` (taken before they were
    computed), if the file still is; True if they were stored."""
    try:
        return _store_derived(path, kind, ident, parts)
    except Exception:
        _failed("keeping a result")
        return False


def _store_derived(path: Path, kind: str, ident: str | None, parts: dict[str, bytes]) -> bool:
    root = directory()
    if root is None or ident is None or identity(path) != ident:
        return False
    store = files.store(root, create=True)
    if store is None:
        return False
    found = {".kind": kind.encode(), ".identity": ident.encode()}
    if (record := _digests.get(ident)) is not None:  # what another user's process needs to trust it
        found[".digest"] = json.dumps(record, sort_keys=True).encode()
    try:
        entry = files.entry_folder(store, key(ident), create=True)
        if entry is None:
            return False
        files.write_part(entry, files.kind_stem(kind), files.pack({**found, **parts}), "parts")
    except OSError:  # a read-only or full disk, another user's entry
        return False
    files.touch(entry)
    written = _unswept.get(store, 0) + sum(len(part) for part in parts.values())
    cap = max_bytes()
    if store not in _unswept or written > min(SWEEP_EVERY, cap // 64):  # a pass lists every entry
        written = 0
        files.sweep(store, cap, keep=entry)
    _unswept[store] = written
    return True


SWEEP_EVERY = 16 << 20  # results kept since the last sweep before the next one (or 1/64 of the cap)
_unswept: dict[Path, int] = {}  # per store, since this process last swept it (none yet: it sweeps)


def store(trace: Trace, json_bytes: int, ident: str | None, digest: files.Digest | None) -> None:
    """Save ``trace`` (whose file held ``json_bytes`` of JSON, had identity ``ident`` before it was
    read, and whose bytes the load read have ``digest``) if it is worth caching.

    The entry is written by a background thread, so that a first open does not wait for it: the
    thread runs at a lower priority than the UI (Linux). A process that leaves through
    ``os._exit`` calls :func:`settle` first; one killed meanwhile leaves a staging folder that the
    next write removes. Reading the same entry meanwhile waits for it.
    """
    root = directory()
    if root is None or ident is None or digest is None or json_bytes < min_bytes():
        return
    cap = max_bytes()  # read here: a bad value is said, not lost in the writer
    try:
        entry = root / files.STORE / key(ident)
        args = (trace, ident, entry, digest.record(), cap)
        writer = threading.Thread(target=_write, args=args, name="tracetui-cache-write")
        with _writers_lock:
            _writers[entry] = writer
        writer.start()
    except Exception:
        _failed("starting an entry's write")


_writers: dict[Path, threading.Thread] = {}
_staging: dict[Path, threading.Thread] = {}  # each write's staging folder, and its writer
_writers_lock = threading.Lock()
_abort = threading.Event()


class _Stop(Exception):
    """The write stops: the process is leaving, or the file changed during the load."""


def _settled(entry: Path) -> Path:
    """``entry``, once a write of it in progress has finished."""
    with _writers_lock:
        writer = _writers.get(entry)
    if writer is not None and writer is not threading.current_thread():
        writer.join()
    return entry


def settle(timeout: float = SETTLE_S) -> None:
    """Before the process leaves without running its threads out (``os._exit``): wait for the
    entries being written, at most ``timeout`` seconds, then stop the writes and remove what
    they left."""
    deadline = time.monotonic() + timeout
    with _writers_lock:
        writers = list(_writers.values())
    for writer in writers:
        writer.join(max(0.0, deadline - time.monotonic()))
    if not any(writer.is_alive() for writer in writers):
        return  # each write removed its own staging folder (one begun since is left to run)
    _abort.set()
    for writer in writers:
        writer.join(5.0)
    with _writers_lock:
        leftovers = [staging for staging, writer in _staging.items() if writer in writers]
    for staging in leftovers:
        files.discard(staging)
    _abort.clear()


def _write(trace: Trace, ident: str, entry: Path, record: dict[str, Any], cap: int) -> None:
    with contextlib.suppress(OSError, AttributeError):  # Linux nices this thread only
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    staging: Path | None = None
    try:
        store = files.store(entry.parent.parent, create=True)
        if store is None:
            return  # the folder of the store's name is someone else's
        files.sweep(store, cap)
        if files.parts(entry, "manifest", "json"):
            return  # another process wrote it
        staging = files.new_folder(store)
        with _writers_lock:
            _staging[staging] = threading.current_thread()
        tables = {}
        for name, frame in trace.stored_tables().items():
            if _abort.is_set():
                raise _Stop
            # straight to the file: a buffer and its copy were 2x the biggest table's bytes at once
            written = files.write_part_with(
                staging, name, partial(frame.write_ipc, compression="zstd"), "arrow"
            )
            tables[name] = {"file": written.name, "schema": _schema(frame.schema), "rows": frame.height}
            del frame  # one table at a time (a table the load kept on disk is read for this alone)
        stored_files = {}
        for name, write in trace.stored_files().items():
            if _abort.is_set():
                raise _Stop
            stored_files[name] = files.write_part_with(staging, name, write, "bin").name
        if identity(trace.path) != ident:
            raise _Stop  # the file changed since the load began: what was read may be neither
        manifest = {
            "magic": files.ENTRY_MAGIC,
            "format": FORMAT,
            "code": code_version(),
            "identity": ident,
            "source": record,
            "facts": trace.stored_facts(),
            "tables": tables,
            "files": stored_files,
        }
        files.write_part(staging, "manifest", files.manifest_bytes(manifest), "json")
        _install(staging, entry)
        files.sweep(store, cap, keep=entry)
    except (OSError, _Stop):  # a read-only or full disk, a changed file: no entry, nothing left
        pass
    except Exception:
        _failed("writing an entry")
    finally:
        if staging is not None:
            files.discard(staging)
            with _writers_lock:
                _staging.pop(staging, None)
        with _writers_lock:
            if _writers.get(entry) is threading.current_thread():
                del _writers[entry]


def _install(staging: Path, entry: Path) -> None:
    """Move a written entry into place: the folder at once, or, where results were stored for it
    already (an entry of this user's), file by file with the manifest last."""
    try:
        staging.rename(entry)
        return
    except OSError:
        if not files.is_entry(entry) or not _folder_owned(entry) or files.parts(entry, "manifest", "json"):
            raise
    names = sorted(os.listdir(staging), key=lambda name: name.startswith("manifest."))
    for name in names:
        (staging / name).rename(entry / name)


def parts_for(path: Path, ident: str | None, json_bytes: int, digest: files.Digest | None) -> PartStore:
    """Where a trace just loaded from ``path`` (at identity ``ident``, its bytes read having
    ``digest``) keeps what it computes later: its entry, when it is worth caching."""
    from tracetui.trace.model import NO_PARTS

    if ident is None or directory() is None or json_bytes < min_bytes():
        return NO_PARTS
    try:
        if digest is not None:
            _digests[ident] = digest.record()
        return EntryParts(path, ident)
    except Exception:
        _failed("keeping a result")
        return NO_PARTS
