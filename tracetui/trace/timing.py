"""Where a load's time goes, stage by stage, while ``TRACETUI_TIMING`` is on.

:func:`span` times a named piece of work (its wall time, summed over every time it runs: the scan's
adoptions, the build's placements); :func:`begin` starts a load's record and :func:`taken` hands
it over, in the order the names first ran. Off (the default), :func:`span` costs one check. No
polars: the read runs before polars is imported (:mod:`prefetch`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tracetui import settings

_lock = threading.Lock()
_record: dict[str, float] | None = None


def begin() -> None:
    """Start recording (when ``TRACETUI_TIMING`` is on): what ran before is forgotten."""
    global _record
    with _lock:
        _record = {} if settings.TIMING.value() else None


def taken() -> list[tuple[str, float]]:
    """The seconds of each named span since :func:`begin`, in the order they first ran; recording
    stops."""
    global _record
    with _lock:
        found, _record = _record, None
    return list((found or {}).items())


@contextmanager
def span(name: str) -> Iterator[None]:
    """Time the work inside under ``name`` (added to what ran under it before)."""
    if _record is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        add(name, time.perf_counter() - start)


def add(name: str, seconds: float) -> None:
    """Count ``seconds`` under ``name`` (while recording)."""
    with _lock:
        if _record is not None:
            _record[name] = _record.get(name, 0.0) + seconds
