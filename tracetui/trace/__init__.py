"""The UI-free trace model. Never imports textual or torch.

``load`` and ``Trace`` are imported on first use, so that light submodules (``source``,
``cache``) can be imported without polars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracetui.trace.loader import load
    from tracetui.trace.model import Trace

__all__ = ["Trace", "load"]


def __getattr__(name: str) -> Any:
    if name == "load":
        from tracetui.trace.loader import load

        return load
    if name == "Trace":
        from tracetui.trace.model import Trace

        return Trace
    raise AttributeError(name)
