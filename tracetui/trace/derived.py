"""A disk cache of small results derived from one trace file (a rank's tables, its summary), so that a
warm ``tracetui summary DIR`` reads a few KB per rank instead of loading every trace again.

Entries live under the trace cache's directory (:func:`tracetui.trace.cache.directory`), in
``.derived/`` (the trace cache leaves dot-folders alone), and follow its rules: ``TRACETUI_NO_CACHE``
turns them off, any problem is a miss, never an error, and the trace file is never written.

* **Keyed**: the key hashes the kind of result, the code version (a hash of tracetui's own source,
  so it changes whenever what is computed may change), the trace's resolved path, size, inode,
  modification and change times.
* **Verified**: the caller takes the file's identity *before* computing and :func:`store` checks it
  again, so a file that changed meanwhile is not cached; each entry's manifest holds a checksum of
  every part and :func:`lookup` drops an entry whose parts do not match (flipped bytes, a cut write).
* **Atomic**: parts are written to a staging folder renamed into place; staging folders left by a
  killed process are removed after :data:`STALE_S`. At most :data:`KEEP` entries are kept (least
  recently used first out).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from functools import cache
from pathlib import Path

from tracetui import __version__
from tracetui.trace import cache as trace_cache

KEEP = 1024  # entries are small (KB to a few MB): a 1024-rank run fits
STALE_S = 3600.0
MANIFEST = "manifest.json"
_SKIPPED_PACKAGES = ("app",)  # the explorer computes nothing that is cached here


def root() -> Path | None:
    """Where derived entries live, or None when caching is off."""
    base = trace_cache.directory()
    return None if base is None else base / ".derived"


def identity(path: Path) -> str | None:
    """What the key says about the file now (None: it cannot be stat'ed)."""
    try:
        stat = path.stat()
        resolved = path.resolve()
    except OSError:
        return None
    return f"{resolved}\0{stat.st_size}\0{stat.st_ino}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}"


@cache
def code_version() -> str:
    """A hash of tracetui's source (``*.py``, ``*.c``), the explorer's excepted."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(__version__.encode())
    for source in sorted(p for suffix in ("*.py", "*.c") for p in package.rglob(suffix)):
        relative = source.relative_to(package)
        if relative.parts[0] in _SKIPPED_PACKAGES:
            continue
        digest.update(str(relative).encode() + b"\0")
        with contextlib.suppress(OSError):
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def _entry(kind: str, ident: str) -> Path | None:
    base = root()
    if base is None:
        return None
    key = hashlib.sha256(f"{kind}\0{code_version()}\0{ident}".encode()).hexdigest()[:32]
    return base / key


def lookup(path: Path, kind: str) -> dict[str, bytes] | None:
    """The parts stored for ``path`` and ``kind``, each verified; None on a miss."""
    ident = identity(path)
    entry = None if ident is None else _entry(kind, ident)
    if entry is None or not (entry / MANIFEST).is_file():
        return None
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
        if manifest.get("kind") != kind or manifest.get("identity") != ident:
            raise ValueError("foreign entry")
        parts = {}
        for name, checksum in manifest["parts"].items():
            data = (entry / name).read_bytes()
            if hashlib.sha256(data).hexdigest() != checksum:
                raise ValueError(f"{name}: checksum mismatch")
            parts[name] = data
    except Exception:  # damaged, partial or foreign: rebuilt by the caller
        shutil.rmtree(entry, ignore_errors=True)
        return None
    with contextlib.suppress(OSError):
        os.utime(entry)  # recently used
    return parts


def store(path: Path, kind: str, ident: str | None, parts: dict[str, bytes]) -> bool:
    """Save ``parts`` for ``path`` and ``kind`` if the file is still what ``ident`` (taken before
    they were computed) says; True if it was stored."""
    if ident is None or identity(path) != ident:
        return False
    entry = _entry(kind, ident)
    if entry is None:
        return False
    staging: Path | None = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        _clean_stale(entry.parent)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=entry.parent))
        for name, data in parts.items():
            (staging / name).write_bytes(data)
        manifest = {
            "kind": kind,
            "identity": ident,
            "parts": {name: hashlib.sha256(data).hexdigest() for name, data in parts.items()},
        }
        (staging / MANIFEST).write_text(json.dumps(manifest))
        shutil.rmtree(entry, ignore_errors=True)
        staging.rename(entry)
        staging = None
        _prune(entry.parent)
        return True
    except OSError:
        return False
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def _clean_stale(base: Path) -> None:
    """Remove staging folders a killed process left behind."""
    now = time.time()
    for leftover in base.glob(".staging-*"):
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > STALE_S:
                shutil.rmtree(leftover, ignore_errors=True)


def _prune(base: Path) -> None:
    entries = [p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")]
    if len(entries) <= KEEP:
        return
    entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
