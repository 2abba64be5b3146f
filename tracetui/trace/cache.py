"""A disk cache of loaded traces: a big trace opened again loads in a fraction of a second.

An entry is keyed by the file's resolved path, size and modification time and tracetui's
version, and holds the model's tables as Arrow IPC plus its facts as JSON, under
``$TRACETUI_CACHE_DIR``, else the user cache folder (platformdirs: ``~/.cache/tracetui`` on Linux).
Only traces of at least ``MIN_BYTES`` of JSON are cached; the newest ``KEEP`` entries are kept.
``TRACETUI_NO_CACHE=1`` turns it off. The cache is best effort: any problem with it means a
normal load, never an error. The trace file itself is never written.

The key and its lookup are free of heavy imports (the CLI checks for a hit before polars loads).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracetui import __version__

if TYPE_CHECKING:
    import polars as pl

    from tracetui.trace.args import RawArgs
    from tracetui.trace.model import TableSink, Trace

MIN_BYTES = int(os.environ.get("TRACETUI_CACHE_MIN_BYTES", 8 << 20))
KEEP = 8
FORMAT = 2
TABLES = ("events", "instants", "flows", "meta_events", "tracks", "anomalies")
LATER = ("launch_shapes",)  # tables computed after load, added to the entry when they are
FACTS = ("format", "gzipped", "truncated", "repairs", "other_phases", "reader")


def directory() -> Path | None:
    """Where entries live (``$TRACETUI_CACHE_DIR``, else the platform's user cache folder), or
    None when caching is off."""
    if os.environ.get("TRACETUI_NO_CACHE"):
        return None
    if root := os.environ.get("TRACETUI_CACHE_DIR"):
        return Path(root)
    import platformdirs  # imported only when no folder is named (a few ms)

    return platformdirs.user_cache_path("tracetui", appauthor=False)


def entry_for(path: Path) -> Path | None:
    """The entry directory for a trace file (existing or not; once a write of it in progress
    has finished); None when caching is off."""
    root = directory()
    if root is None:
        return None
    try:
        stat = path.stat()
        identity = f"{FORMAT}\0{__version__}\0{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"
    except OSError:
        return None
    return _settled(root / hashlib.sha256(identity.encode()).hexdigest()[:32])


def has_entry(path: Path) -> bool:
    """Whether a complete entry exists for ``path`` (cheap: a stat or two)."""
    entry = entry_for(path)
    return entry is not None and (entry / "facts.json").is_file()


def lookup(path: Path, raw_args: RawArgs, on_table: TableSink) -> Trace | None:
    """The cached trace for ``path``, or None. The entry holds no raw args: the trace reads
    them from ``raw_args`` (the loader's), and tells ``on_table`` of the tables it computes."""
    entry = entry_for(path)
    if entry is None or not (entry / "facts.json").is_file():
        return None
    try:
        return _read(entry, path, raw_args, on_table)
    except Exception:  # a damaged or foreign entry is just a miss
        shutil.rmtree(entry, ignore_errors=True)
        return None


def store(trace: Trace, json_bytes: int) -> None:
    """Save ``trace`` (whose file held ``json_bytes`` of JSON) if it is worth caching.

    The entry is written by a background thread, so that a first open does not wait for it
    (~0.15 s for the 90 MB benchmark trace): the thread runs at a lower priority than the
    UI and the tree (Linux), and is not a daemon, so the process finishes the entry before it
    exits. Reading the same entry meanwhile waits for it.
    """
    entry = entry_for(trace.path)
    if entry is None or json_bytes < MIN_BYTES:
        return
    writer = threading.Thread(target=_write, args=(trace, entry), name="tracetui-cache-write")
    with _writers_lock:
        _writers[entry] = writer
    writer.start()


_writers: dict[Path, threading.Thread] = {}
_writers_lock = threading.Lock()


def _settled(entry: Path) -> Path:
    """``entry``, once a write of it in progress has finished."""
    with _writers_lock:
        writer = _writers.get(entry)
    if writer is not None and writer is not threading.current_thread():
        writer.join()
    return entry


def _write(trace: Trace, entry: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):  # Linux nices this thread only
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=entry.parent))
        for name in TABLES:
            getattr(trace, name).write_ipc(staging / f"{name}.arrow")
        facts = {name: getattr(trace, name) for name in FACTS}
        facts |= {"metadata": trace.metadata, "siblings": [str(p) for p in trace.siblings]}
        (staging / "facts.json").write_text(json.dumps(facts))
        shutil.rmtree(entry, ignore_errors=True)
        staging.rename(entry)
        _prune(entry.parent)
    except Exception:
        shutil.rmtree(locals().get("staging", entry.parent / ".none"), ignore_errors=True)
    finally:
        with _writers_lock:
            if _writers.get(entry) is threading.current_thread():
                del _writers[entry]


def _read(entry: Path, path: Path, raw_args: RawArgs, on_table: TableSink) -> Trace:
    import polars as pl

    from tracetui.trace.model import Trace

    facts: dict[str, Any] = json.loads((entry / "facts.json").read_text())
    # keyword arguments of Trace by name (their types are the writer's: see _write)
    tables: dict[str, Any] = {name: pl.read_ipc(entry / f"{name}.arrow") for name in TABLES}
    later: dict[str, Any] = {
        f"_{name}": pl.read_ipc(entry / f"{name}.arrow")
        for name in LATER
        if (entry / f"{name}.arrow").is_file()
    }
    return Trace(
        path=path,
        metadata=facts["metadata"],
        siblings=tuple(Path(p) for p in facts["siblings"]),
        **tables,
        **{name: facts[name] for name in FACTS},
        from_cache=True,
        raw_args=raw_args,
        on_table=on_table,
        **later,
    )


def add_table(path: Path, name: str, frame: pl.DataFrame) -> None:
    """Add a table computed after load to ``path``'s entry, if it has one."""
    entry = entry_for(path)
    if entry is None or not (entry / "facts.json").is_file() or (entry / f"{name}.arrow").is_file():
        return
    try:
        staging = entry / f".{name}.{os.getpid()}"
        frame.write_ipc(staging)
        staging.rename(entry / f"{name}.arrow")
    except Exception:
        with contextlib.suppress(OSError):
            staging.unlink()


def _prune(root: Path) -> None:
    entries = sorted(
        (p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
