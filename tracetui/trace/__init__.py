"""The UI-free trace model. Never imports textual or torch.

:func:`load` is the way in. ``Trace`` and the loader are imported on first use, so that light
submodules (``source``, ``cache``, ``prefetch``) can be imported without polars.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracetui.trace.model import Trace

__all__ = ["Trace", "load"]


def load(
    path: str | Path,
    progress: Callable[[str], None] | None = None,
    fraction: Callable[[float], None] | None = None,
    *,
    max_inflate: float | None = None,
    workers: int | None = None,
) -> Trace:
    """Load a trace file or ``tensorboard_trace_handler`` directory.

    Raises :class:`tracetui.errors.TraceError` (one line) for input that is not a trace.
    ``progress`` is called with the name of each stage as it starts, ``fraction`` with how much
    of the ``reading`` stage is done (0 to 1; a file's bytes read, not a pipe's). Gzip data may
    inflate to at most 256 MB plus ``max_inflate`` times its size (0: no cap; None: the setting
    ``TRACETUI_MAX_INFLATE``, else 100). The file is scanned on ``workers`` cores (None:
    ``TRACETUI_WORKERS``, else the cores there are; at most 16). A trace loaded
    before (unchanged) comes from the disk cache (:mod:`tracetui.trace.cache`); one whose load a
    command started early (:mod:`tracetui.trace.prefetch`) is waited for.
    """
    from tracetui.trace import prefetch

    prefetched = prefetch.take(path, progress, fraction)
    if prefetched is not None:
        return prefetched
    from tracetui.trace.loader import load_now

    return load_now(path, progress, fraction=fraction, max_inflate=max_inflate, workers=workers)


def __getattr__(name: str) -> Any:
    if name == "Trace":
        from tracetui.trace.model import Trace

        return Trace
    raise AttributeError(name)
