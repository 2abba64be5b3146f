"""tracetui: a terminal explorer for PyTorch profiler (Kineto) Chrome traces.

The UI-free core lives in :mod:`tracetui.trace`; ``tracetui.load(path)`` returns a
:class:`tracetui.trace.Trace`. Heavy modules are imported lazily so that the capture
path (``tracetui capture``) needs nothing but torch and click.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from tracetui.trace import Trace, load

__all__ = ["Trace", "__version__", "load"]


def __getattr__(name: str) -> Any:
    if name in ("load", "Trace"):
        from tracetui import trace

        return getattr(trace, name)
    raise AttributeError(name)
