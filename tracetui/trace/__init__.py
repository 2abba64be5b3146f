"""The UI-free trace model. Never imports textual or torch."""

from tracetui.trace.load import load
from tracetui.trace.model import Trace

__all__ = ["Trace", "load"]
