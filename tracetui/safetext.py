"""The one neutraliser of text that came from outside: trace names and args, file names,
directory listings, expectation files, error messages that quote any of them.

Two levels, one set of rules:

* :func:`clean` (stored text): what no layer may ever hold. C0 and C1 control characters and DEL
  (escape sequences: ESC, OSC 52 clipboard writes, CSI, …) and lone surrogates (not text: UTF-8
  cannot encode them) become U+FFFD. Applied once where text comes in (trace columns at load,
  with :func:`clean_series`; decoded JSON values; every :class:`~tracetui.errors.TraceError`).
* :func:`shown` (terminal text): :func:`clean`, and every character that is invisible or
  changes the direction of what follows (zero-width spaces and joiners, direction marks, bidi
  embeddings, overrides and isolates, line/paragraph separators, soft hyphen, BOM, invisible
  fillers and tags) written as a visible escape (``\\u200b``), so two names that differ only by
  such a character never look the same and a bidi override cannot reorder a line; and a string
  longer than :data:`MAX_SHOWN` characters is cut, the cut said (``…(+N chars)``). Every
  terminal surface (summary, explorer, diff/check reports, error lines) shows outside text
  through it. ``--json`` and Parquet keep the stored text exactly; CSV, read by people in
  spreadsheets, gets the visible escapes too (:func:`escape_series`, no cut): see docs/reference.md.

Markup safety is separate: outside text reaches the screen only as plain ``Text``/``Content``.
This module imports nothing heavy (the capture path uses it without polars); the ``*_series``
functions take polars series without importing polars.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

REPLACEMENT = "\ufffd"
MAX_SHOWN = 1000  # characters of one outside string a terminal shows before the cut

# C0 controls, DEL, C1 controls (polars strings cannot hold lone surrogates: only Python text).
UNSAFE_CLASS = "[\x00-\x1f\x7f-\x9f]"
# Invisible or direction-changing: Unicode's format characters (Cf), the line and paragraph
# separators, and the fillers that draw nothing.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x0600, 0x0605),
    (0x061C, 0x061C),  # Arabic letter mark
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),  # Mongolian variation selectors, vowel separator
    (0x200B, 0x200F),  # zero-width space, non-joiner, joiner; left-to-right, right-to-left marks
    (0x2028, 0x202E),  # line/paragraph separators; bidi embeddings and overrides
    (0x2060, 0x2064),  # word joiner, invisible operators
    (0x2066, 0x206F),  # bidi isolates; deprecated format characters
    (0x3164, 0x3164),  # Hangul filler
    (0xFEFF, 0xFEFF),  # zero-width no-break space (BOM)
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),  # interlinear annotation
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),  # language tag
    (0xE0020, 0xE007F),  # tag characters
)
INVISIBLE_CLASS = "[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _INVISIBLE_RANGES) + "]"
_UNSAFE = re.compile(UNSAFE_CLASS[:-1] + "\ud800-\udfff]")
_INVISIBLE = re.compile(INVISIBLE_CLASS)
_INVISIBLE_CHARS = [chr(c) for a, b in _INVISIBLE_RANGES for c in range(a, b + 1)]


def clean(text: str) -> str:
    """``text`` with control characters and lone surrogates replaced by U+FFFD."""
    return _UNSAFE.sub(REPLACEMENT, text)


def shown(text: str, limit: int | None = MAX_SHOWN) -> str:
    """``text`` as a terminal may show it: cut past ``limit`` characters (None: never), cleaned,
    invisible and direction-changing characters as visible escapes."""
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"…(+{len(text) - limit:,} chars)"
    return _INVISIBLE.sub(_escape, clean(text))


def _escape(match: re.Match[str]) -> str:
    return escaped(match.group())


def escaped(char: str) -> str:
    """The visible escape of one character: ``\\u200b``, ``\\U000e0001``."""
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def clean_value(value: Any) -> Any:
    """Recursively clean every string (dict keys too) inside decoded JSON."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    if isinstance(value, dict):
        return {clean(str(k)): clean_value(v) for k, v in value.items()}
    return value


def clean_series(series: pl.Series) -> pl.Series:
    """:func:`clean` over a polars string series (no copy when nothing needs replacing)."""
    if series.str.contains(UNSAFE_CLASS).any():
        return series.str.replace_all(UNSAFE_CLASS, REPLACEMENT)
    return series


def escape_series(series: pl.Series) -> pl.Series:
    """:func:`shown`'s visible escapes over a polars string series, without the cut (CSV)."""
    if series.str.contains(INVISIBLE_CLASS).any():
        return series.str.replace_many(_INVISIBLE_CHARS, [escaped(c) for c in _INVISIBLE_CHARS])
    return series
