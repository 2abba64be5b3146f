"""Start loading a trace on a background thread while the command imports the rest.

A command calls :func:`start` first thing. The thread reads, inflates and scans the file block
by block (all three release the GIL) while the main thread imports rich or textual, then imports
polars and builds the model. :func:`tracetui.trace.load` takes the result with :func:`take`
(waiting for it, replaying the progress stages it missed) and raises what the load raised.
Importing this module imports neither polars nor the UI. ``TRACETUI_TIMING``
(:data:`tracetui.settings.TIMING`) turns it off, so that the stage timings it prints are those of a
plain load.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tracetui import settings
from tracetui.trace import cache, stream
from tracetui.trace.source import open_source, read_fraction

if TYPE_CHECKING:
    from tracetui.trace.model import Trace

Progress = Callable[[str], None]


class _Job:
    """One background load: its stages so far, its listener, and its outcome."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stages: list[str] = []
        self.listener: Progress | None = None
        self.done: float | None = None  # the reading stage's last fraction
        self.fraction_listener: Callable[[float], None] | None = None
        self.trace: Trace | None = None
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def say(self, stage: str) -> None:
        with self.lock:
            self.stages.append(stage)
            listener = self.listener
        if listener is not None:
            listener(stage)

    def fraction(self, done: float) -> None:
        with self.lock:
            self.done = done
            listener = self.fraction_listener
        if listener is not None:
            listener(done)

    def listen(self, progress: Progress | None, fraction: Callable[[float], None] | None = None) -> None:
        with self.lock:
            seen = list(self.stages)
            done = self.done
            self.listener = progress
            self.fraction_listener = fraction
        if progress is not None:
            for stage in seen:
                progress(stage)
        if fraction is not None and done is not None and seen and seen[-1] == "reading":
            fraction(done)


_pending: dict[str, _Job] = {}


def start(path: str | Path, max_inflate: float | None = None, workers: int | None = None) -> None:
    """Begin loading ``path`` (gzip inflated within ``max_inflate``: :func:`open_source`; scanned on
    ``workers`` cores: :func:`stream.scanners_for`) in the background (once; errors are left to
    :func:`take`)."""
    key = str(path)
    if key in _pending or settings.TIMING.value():
        return
    job = _Job()
    job.thread = threading.Thread(
        target=_run, args=(path, job, max_inflate, workers), name="tracetui-prefetch", daemon=True
    )
    _pending[key] = job
    job.thread.start()


def take(
    path: str | Path, progress: Progress | None = None, fraction: Callable[[float], None] | None = None
) -> Trace | None:
    """The trace loaded in the background for ``path`` (None if none was started). Raises what
    the load raised. ``progress`` hears every stage, the earlier ones at once; ``fraction`` how
    much of the reading is done."""
    job = _pending.pop(str(path), None)
    if job is None or job.thread is None:
        return None
    job.listen(progress, fraction)
    job.thread.join()
    job.listen(None)
    if job.error is not None:
        raise job.error
    return job.trace


def _run(path: str | Path, job: _Job, max_inflate: float | None, workers: int | None) -> None:
    try:
        read = None
        source, blocks = open_source(path, max_inflate)
        if not (source.regular and cache.has_entry(source.path)):
            ident = cache.identity(source.path) if source.regular else None  # before the read
            job.say("reading")  # inflate and scan without the GIL, before polars is imported
            on_block = read_fraction(source, job.fraction)
            read = source, stream.read(source.path, blocks, on_block=on_block, workers=workers), ident
        from tracetui.trace.loader import load_now

        job.trace = load_now(path, job.say, read, max_inflate=max_inflate, workers=workers)
    except BaseException as exc:  # handed to the caller of take()
        job.error = exc
