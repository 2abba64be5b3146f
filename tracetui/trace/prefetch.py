"""Start loading a trace on a background thread while the command imports the rest.

A command calls :func:`start` first thing. The thread reads and gunzips the file and runs the
native scan (both release the GIL) while the main thread imports rich or textual, then imports
polars and builds the model. :func:`tracetui.trace.load` takes the result with :func:`take`
(waiting for it, replaying the progress stages it missed) and raises what the load raised.
Importing this module imports neither polars nor the UI. ``TRACETUI_TIMING`` turns it off, so
that the stage timings it prints are those of a plain load.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tracetui.trace import cache, native
from tracetui.trace.source import Source, locate, read_source

if TYPE_CHECKING:
    from tracetui.trace.model import Trace

Progress = Callable[[str], None]


class _Job:
    """One background load: its stages so far, its listener, and its outcome."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stages: list[str] = []
        self.listener: Progress | None = None
        self.trace: Trace | None = None
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def say(self, stage: str) -> None:
        with self.lock:
            self.stages.append(stage)
            listener = self.listener
        if listener is not None:
            listener(stage)

    def listen(self, progress: Progress | None) -> None:
        with self.lock:
            seen = list(self.stages)
            self.listener = progress
        if progress is not None:
            for stage in seen:
                progress(stage)


_pending: dict[str, _Job] = {}


def start(path: str | Path) -> None:
    """Begin loading ``path`` in the background (once; errors are left to :func:`take`)."""
    key = str(path)
    if key in _pending or os.environ.get("TRACETUI_TIMING"):
        return
    job = _Job()
    job.thread = threading.Thread(target=_run, args=(path, job), name="tracetui-prefetch", daemon=True)
    _pending[key] = job
    job.thread.start()


def take(path: str | Path, progress: Progress | None = None) -> Trace | None:
    """The trace loaded in the background for ``path`` (None if none was started). Raises what
    the load raised. ``progress`` hears every stage, the earlier ones at once."""
    job = _pending.pop(str(path), None)
    if job is None or job.thread is None:
        return None
    job.listen(progress)
    job.thread.join()
    job.listen(None)
    if job.error is not None:
        raise job.error
    return job.trace


def _run(path: str | Path, job: _Job) -> None:
    try:
        source: Source | None = None
        raw: native.RawScan | None = None
        ident: str | None = None
        target = locate(path)[0]
        if native.AVAILABLE and not cache.has_entry(target):
            ident = cache.identity(target)  # before the read (see cache.store)
            source = read_source(path)  # gunzip and scan without the GIL, before polars is imported
            raw = native.scan_raw(source.data)
            if source.path != target:
                ident = None
        from tracetui.trace.loader import load_now

        job.trace = load_now(path, job.say, source, raw, ident)
    except BaseException as exc:  # handed to the caller of take()
        job.error = exc
