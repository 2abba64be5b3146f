"""A disk cache of loaded traces: a trace opened again comes back in a fraction of a second.

Keyed so that it never serves wrong data: an entry's key is a digest of the trace file's identity
(resolved path, device, inode, size, modification and change times: :func:`identity`), of the code
that computed it (:func:`code_version`, a digest of tracetui's own files, so any change to what
the model computes starts new entries) and of the entry format. The loader takes the identity
*before* it reads the file; the entry is written only if the file still has it after the load, so
a file that grew, was rewritten or renamed over meanwhile is not cached.

Verified on every read: each file of an entry carries its CRC-32 in its name
(:mod:`tracetui.trace.cache_files`); opening an entry checks every table and file (a streamed CRC,
no big allocation) and each table's schema against the manifest, and a table is checked again when it is
read (its CRC, schema and rows: the manifest lists each table's rows, so a trace counts its events
without reading them). A damaged, partial, foreign or stale entry is removed and the trace loaded
from its file.

Lazy: an entry holds the model's tables (Arrow IPC, zstd), its raw args' file and facts; each
is written straight to its file (never whole in memory beside the model); the trace it gives reads each
table on first use (:class:`EntryTables`), and results computed from the trace later (a table
computed after load, the summary, a rank's tables: :func:`derived`) are entries' parts too, keyed
and verified the same way.

Where: ``$TRACETUI_CACHE_DIR``, else the user cache folder (platformdirs; on Linux
``$XDG_CACHE_HOME/tracetui``, else ``~/.cache/tracetui``);
``TRACETUI_NO_CACHE=1`` turns it off. Only traces of at least ``TRACETUI_CACHE_MIN_BYTES`` (8 MiB)
of JSON are stored; the entries take at most ``TRACETUI_CACHE_MAX`` (default 4 GiB) in all, the least
recently used removed first. The cache is best effort: a read-only or full disk means a normal load, never an
error, and nothing left behind. The trace file itself is never written.

Free of heavy imports: the CLI checks for an entry before polars is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import threading
import time
from collections.abc import Callable, Sequence
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

FORMAT = 5  # the layout of an entry (this module's and cache_files'); the code version covers the rest
SETTLE_S = 120.0  # how long a process that exits waits for its entry to be written
_CODE_SUFFIXES = (".py", ".c", ".so", ".pyd")
_NOT_CODE = ("app",)  # the explorer's widgets compute nothing that is cached


def directory() -> Path | None:
    """Where entries live (``$TRACETUI_CACHE_DIR``, else the platform's user cache folder), or
    None when caching is off."""
    if settings.NO_CACHE.value():
        return None
    if root := settings.CACHE_DIR.get():
        return root
    import platformdirs  # imported only when no folder is named (a few ms)

    return platformdirs.user_cache_path("tracetui", appauthor=False)


def max_bytes() -> int:
    """The entries' total size cap: ``TRACETUI_CACHE_MAX`` (a size), else 4 GiB."""
    return settings.CACHE_MAX.value()


def min_bytes() -> int:
    """The JSON a trace must hold to be cached: ``TRACETUI_CACHE_MIN_BYTES`` (a size), else 8 MiB."""
    return settings.CACHE_MIN_BYTES.value()


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
    """A digest of tracetui's own files (sources and the compiled scanner; the explorer's
    widgets excepted): it changes whenever what the model or a cached result computes may."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(__version__.encode(), digest_size=16)
    found = []
    for folder, subfolders, names in os.walk(package):
        relative = Path(folder).relative_to(package)
        if relative.parts and relative.parts[0] in _NOT_CODE:
            subfolders.clear()
            continue
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        found += [relative / name for name in names if name.endswith(_CODE_SUFFIXES)]
    for relative in sorted(found):
        digest.update(str(relative).encode() + b"\0")
        with contextlib.suppress(OSError):
            digest.update((package / relative).read_bytes())
    return digest.hexdigest()


def key(ident: str) -> str:
    return hashlib.blake2b(f"{FORMAT}\0{code_version()}\0{ident}".encode(), digest_size=16).hexdigest()


def entry_for(path: Path) -> Path | None:
    """The entry folder for a trace file as it is now (existing or not; once a write of it in
    progress in this process has finished); None when caching is off."""
    ident = identity(path)
    return None if ident is None else _entry(ident)


def _entry(ident: str) -> Path | None:
    root = directory()
    return None if root is None else _settled(root / key(ident))


def has_entry(path: Path) -> bool:
    """Whether a complete entry exists for ``path`` (cheap: a stat and a listing)."""
    entry = entry_for(path)
    return entry is not None and bool(files.parts(entry, "manifest", "json"))


# ---- reading --------------------------------------------------------------------------------------
def lookup(
    path: Path, siblings: tuple[Path, ...], raw_args: Callable[[TableSource, str], RawArgs]
) -> Trace | None:
    """The cached trace of ``path`` (its file as it is now), or None. The trace reads its tables
    on first use, its raw args from the provider ``raw_args(tables, identity)`` gives (the
    loader's: from the entry's tables where the trace stored its provider's, else the file), and
    keeps what it computes later in the entry. A bad entry is removed (a miss)."""
    ident = identity(path)
    entry = None if ident is None else _entry(ident)
    if ident is None or entry is None or not files.parts(entry, "manifest", "json"):
        return None
    tables: EntryTables | None = None
    try:
        found = files.read_manifest(entry)
        if found is None:
            return None
        manifest = found[0]
        if (manifest.get("format"), manifest.get("code"), manifest.get("identity")) != (
            FORMAT,
            code_version(),
            ident,
        ):
            raise files.Damaged("foreign entry")
        tables = EntryTables(path, entry, manifest["tables"], manifest["files"])
        from tracetui.trace.model import Trace

        facts, parts = manifest["facts"], EntryParts(path, ident)
        trace = Trace.restored(path, siblings, tables, facts, raw_args(tables, ident), parts)
    except Exception:  # damaged, partial, foreign or of another shape: loaded again from the file
        if tables is not None:
            tables.close()
        files.remove(entry)
        return None
    files.touch(entry)
    return trace


class EntryTables:
    """The tables of an entry, each read (and checked) on first use. Every file is opened and
    checked when the entry is opened, and read later through that handle: an entry removed or
    replaced meanwhile (by another process) is still read whole and unchanged."""

    def __init__(self, path: Path, entry: Path, listed: dict[str, Any], listed_files: dict[str, Any]) -> None:
        import polars as pl

        self.path = path
        self.entry = entry
        self.names = tuple(listed)
        self.files = tuple(listed_files)
        self._files: dict[str, str] = {}
        self._schemas: dict[str, list[list[str]]] = {}
        self._heights: dict[str, int] = {}
        self._handles: dict[str, BufferedReader] = {}
        self._lock = threading.Lock()
        try:
            for name, table in listed.items():
                file, schema, rows = str(table["file"]), table["schema"], table["rows"]
                if not files.is_part(file, name) or type(rows) is not int:
                    raise files.Damaged(file)
                handle = (entry / file).open("rb")
                self._handles[name] = handle
                files.checked(handle, file)
                handle.seek(0)
                if _schema(pl.read_ipc_schema(handle)) != schema:
                    raise files.Damaged(f"{file}: not the table the manifest lists")
                self._files[name], self._schemas[name], self._heights[name] = file, schema, rows
            for name, file in listed_files.items():
                if not isinstance(file, str) or not files.is_part(file, name) or name in listed:
                    raise files.Damaged(str(file))
                self._handles[name] = handle = (entry / file).open("rb")
                files.checked(handle, file)
        except BaseException:
            self.close()
            raise

    def table(self, name: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """Table ``name``, read now (checked again: its CRC and schema); ``columns``: only those
        (only they are decompressed; the file stays open for the rest)."""
        import polars as pl

        with self._lock:
            handle = self._handles.get(name)
            if handle is None or name not in self._files:  # not read yet, and a table (not a file)
                raise KeyError(name)
            try:
                if columns is None:
                    frame = pl.read_ipc(io.BytesIO(files.read_checked(handle, self._files[name])))
                    wanted = self._schemas[name]
                else:
                    data = io.BytesIO(files.read_checked(handle, self._files[name]))
                    frame = pl.read_ipc(data, columns=list(columns))
                    listed = {column: dtype for column, dtype in self._schemas[name]}
                    wanted = [[column, listed.get(column, "")] for column in columns]
                if _schema(frame.schema) != wanted or frame.height != self._heights[name]:
                    raise files.Damaged(name)
            except Exception:
                raise self.damaged(f"table {name}") from None
            if columns is None:
                handle.close()
                del self._handles[name]
            return frame

    def file(self, name: str) -> BufferedReader:
        """File ``name``, open and checked when the entry was opened; the caller closes it."""
        with self._lock:
            if name not in self.files or name not in self._handles:
                raise KeyError(name)
            return self._handles.pop(name)

    def damaged(self, what: str) -> TraceError:
        """Remove the entry (``what`` of it was found damaged while in use); the error to raise."""
        files.remove(self.entry)
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


class EntryParts:
    """The model's :class:`~tracetui.trace.model.PartStore` for a trace loaded from (or stored to)
    the entry of ``path`` at identity ``ident``: results it computes later are kept there."""

    def __init__(self, path: Path, ident: str) -> None:
        self.path = path
        self.ident = ident

    def get(self, kind: str) -> dict[str, bytes] | None:
        root = directory()  # results are files of their own: no waiting for the entry's writer
        return None if root is None else _result(root / key(self.ident), kind)

    def put(self, kind: str, parts: dict[str, bytes]) -> None:
        store_derived(self.path, kind, self.ident, parts)


def derived(path: Path, kind: str) -> dict[str, bytes] | None:
    """The parts stored for ``path`` (its file as it is now) and ``kind``, checked; None on a miss."""
    ident, root = identity(path), directory()
    return None if ident is None or root is None else _result(root / key(ident), kind)


def _result(entry: Path, kind: str) -> dict[str, bytes] | None:
    for part in files.parts(entry, files.kind_stem(kind), "parts"):
        try:
            with part.open("rb") as handle:
                found = files.unpack(files.read_checked(handle, part.name))
            if found.pop(".kind", None) != kind.encode():
                raise files.Damaged("another kind")
        except FileNotFoundError:
            continue
        except Exception:
            files.remove(part)
            continue
        files.touch(entry)
        return found
    return None


# ---- writing ----------------------------------------------------------------------------------------
def store_derived(path: Path, kind: str, ident: str | None, parts: dict[str, bytes]) -> bool:
    """Keep ``parts``, computed from ``path`` as it was at ``ident`` (taken before they were
    computed), if the file still is; True if they were stored."""
    root = directory()
    if root is None or ident is None or identity(path) != ident:
        return False
    entry = root / key(ident)
    try:
        entry.mkdir(parents=True, exist_ok=True)
        files.write_part(entry, files.kind_stem(kind), files.pack({".kind": kind.encode(), **parts}), "parts")
    except OSError:
        return False
    files.touch(entry)
    files.sweep(root, max_bytes(), keep=entry)
    return True


def store(trace: Trace, json_bytes: int, ident: str | None) -> None:
    """Save ``trace`` (whose file held ``json_bytes`` of JSON and had identity ``ident`` before it
    was read) if it is worth caching.

    The entry is written by a background thread, so that a first open does not wait for it: the
    thread runs at a lower priority than the UI (Linux). A process that leaves through
    ``os._exit`` calls :func:`settle` first; one killed meanwhile leaves a staging folder that the
    next write removes. Reading the same entry meanwhile waits for it.
    """
    root = directory()
    if root is None or ident is None or json_bytes < min_bytes():
        return
    entry = root / key(ident)
    cap = max_bytes()  # read here: a bad value is said, not lost in the writer
    writer = threading.Thread(target=_write, args=(trace, ident, entry, cap), name="tracetui-cache-write")
    with _writers_lock:
        _writers[entry] = writer
    writer.start()


_writers: dict[Path, threading.Thread] = {}
_staging: set[Path] = set()
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
    if any(writer.is_alive() for writer in writers):
        _abort.set()
        for writer in writers:
            writer.join(5.0)
    with _writers_lock:
        leftovers = list(_staging)
    for staging in leftovers:
        files.remove(staging)
    _abort.clear()


def _write(trace: Trace, ident: str, entry: Path, cap: int) -> None:
    with contextlib.suppress(OSError, AttributeError):  # Linux nices this thread only
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    staging: Path | None = None
    try:
        root = entry.parent
        root.mkdir(parents=True, exist_ok=True)
        files.sweep(root, cap)
        if files.parts(entry, "manifest", "json"):
            return  # another process wrote it
        staging = files.temporary(root, "staging")
        with _writers_lock:
            _staging.add(staging)
        staging.mkdir()
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
            "format": FORMAT,
            "code": code_version(),
            "identity": ident,
            "facts": trace.stored_facts(),
            "tables": tables,
            "files": stored_files,
        }
        files.write_part(staging, "manifest", files.manifest_bytes(manifest), "json")
        _install(staging, entry)
        files.sweep(root, cap, keep=entry)
    except Exception:  # a read-only or full disk, a changed file: no entry, nothing left
        pass
    finally:
        if staging is not None:
            files.remove(staging)
            with _writers_lock:
                _staging.discard(staging)
        with _writers_lock:
            if _writers.get(entry) is threading.current_thread():
                del _writers[entry]


def _install(staging: Path, entry: Path) -> None:
    """Move a written entry into place: the folder at once, or, where results were stored for it
    already, file by file with the manifest last."""
    try:
        staging.rename(entry)
        return
    except OSError:
        if not entry.is_dir() or files.parts(entry, "manifest", "json"):
            raise
    names = sorted(os.listdir(staging), key=lambda name: name.startswith("manifest."))
    for name in names:
        (staging / name).rename(entry / name)


def parts_for(path: Path, ident: str | None, json_bytes: int) -> PartStore:
    """Where a trace just loaded from ``path`` (at identity ``ident``) keeps what it computes
    later: its entry, when it is worth caching."""
    from tracetui.trace.model import NO_PARTS

    if directory() is None or ident is None or json_bytes < min_bytes():
        return NO_PARTS
    return EntryParts(path, ident)
