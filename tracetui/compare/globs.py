"""Shell-style globs over trace names (``triton_poi_fused_*gelu_mul*``), checked before use.

``*`` matches any run of characters, ``?`` one character, ``[abc]`` / ``[!abc]`` a set; matching is
case-sensitive and covers the whole name. A literal ``[`` is written ``[[]``.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


def glob_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a usable glob, or ``None`` when it is."""
    if not pattern:
        return "the glob is empty"
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            end = _set_end(pattern, i)
            if end < 0:
                return f"unclosed '[' at character {i + 1} of {pattern!r} (write [[] for a literal '[')"
            i = end
        i += 1
    return None


def _set_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the set opened at ``start``, or -1 (fnmatch's rules)."""
    j = start + 1
    if j < len(pattern) and pattern[j] == "!":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    return j if j < len(pattern) else -1


def matching(names: Iterable[str], pattern: str) -> list[str]:
    """The distinct names the glob matches, in first-seen order."""
    return [n for n in dict.fromkeys(names) if fnmatchcase(n, pattern)]
