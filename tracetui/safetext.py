"""Neutralise control characters in text that came from a trace or the user.

Trace names reach terminals. Escape bytes (ESC, OSC 52 clipboard writes, …), other C0/C1
controls and bidirectional overrides are replaced by U+FFFD so no later layer can leak
them. This module has no dependencies so error messages on the capture path can use it.
Markup safety is separate: trace text is rendered only as plain ``Text``/``Content``.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
# C0 controls, DEL, C1 controls, bidi embeddings/overrides/isolates.
UNSAFE_CLASS = "[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
_UNSAFE = re.compile(UNSAFE_CLASS)


def clean(text: str) -> str:
    """Return ``text`` with unsafe characters replaced by U+FFFD."""
    return _UNSAFE.sub(REPLACEMENT, text)


def clean_value(value: Any) -> Any:
    """Recursively clean every string (dict keys too) inside decoded JSON."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    if isinstance(value, dict):
        return {clean(str(k)): clean_value(v) for k, v in value.items()}
    return value
