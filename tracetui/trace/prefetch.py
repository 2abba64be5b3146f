"""Read and scan a trace on a background thread while the command imports the rest.

A CLI command calls :func:`start` first thing; the gunzip and the native scan release the GIL,
so they run on a second core while polars, rich or textual are imported. :func:`load` then
picks the result up with :func:`take`. Anything unusual (a cached trace, no native decoder,
an unreadable file) means no prefetch: ``load`` does the work itself and reports errors.
Importing this module imports neither polars nor the UI.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from tracetui.trace import cache, native
from tracetui.trace.source import Source, locate, read_source


@dataclass
class Prefetched:
    """The file's bytes and the native scanner's raw result for them."""

    source: Source
    raw: native.RawScan


_pending: dict[str, tuple[threading.Thread, list[Prefetched]]] = {}


def start(path: str | Path) -> None:
    """Begin reading and scanning ``path`` in the background, when it will help."""
    key = str(path)
    if not native.AVAILABLE or key in _pending:
        return
    try:
        if cache.has_entry(locate(path)[0]):
            return
    except Exception:  # a bad path: load reports it
        return
    done: list[Prefetched] = []
    thread = threading.Thread(target=_work, args=(path, done), name="tracetui-prefetch", daemon=True)
    _pending[key] = (thread, done)
    thread.start()


def take(path: str | Path) -> Prefetched | None:
    """The prefetched result for ``path`` (waiting for it), or None if there is none."""
    pending = _pending.pop(str(path), None)
    if pending is None:
        return None
    thread, done = pending
    thread.join()
    return done[0] if done else None


def _work(path: str | Path, done: list[Prefetched]) -> None:
    try:
        source = read_source(path)
        done.append(Prefetched(source, native.scan_raw(source.data)))
    except Exception:  # load redoes the work and reports the error properly
        pass
