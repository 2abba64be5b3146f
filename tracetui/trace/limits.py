"""How long a text value or an args object of an event may be; what a longer one becomes.

A hostile or broken trace may hold a 300 MB ``name``: kept whole it would be copied into every
column, dictionary and frame it passes through, and a load under a memory cap would die in
polars. Both readers (the native scanner, given these through :func:`fields.scan_spec`, and the
msgspec path, :func:`cut_values` and :func:`kept_args`) keep instead the first :data:`MAX_TEXT`
bytes of such a value (on a character's end), marked ``…[cut from N bytes]``, and put a note in
place of an args object over :data:`MAX_ARGS` bytes; the model counts each as an anomaly
(``long_string``, ``long_args``) and says so in its repairs. The real traces' longest values are
a few KB (5,050 bytes: a ``name`` of mlp_train_eager_default; args objects under 1 KB).
Free of polars (the native scan starts before polars is imported).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_
from typing import Any

MAX_TEXT = 64 << 10  # bytes (UTF-8) of a text value kept in a column
MAX_ARGS = 1 << 20  # bytes (JSON) of an event's args object kept
TEXT_MARK = ("…[cut from ", " bytes]")  # after the kept part of a cut value, around its length
ARGS_NOTE = ('{"[args not kept]":"', ' bytes of JSON"}')  # in place of an args object, around its length
LONG_STRING, LONG_ARGS = "long_string", "long_args"  # the anomalies' kinds
KINDS = (LONG_STRING, LONG_ARGS)  # by the native scanner's code (0, 1)

Cut = tuple[int, str, int]  # (event id, kind, original length in bytes)


def spec() -> tuple[object, ...]:
    """The limits as the native scanner reads them (the last member of its spec)."""
    text = tuple(part.encode() for part in TEXT_MARK)
    args = tuple(part.encode() for part in ARGS_NOTE)
    return (MAX_TEXT, text, MAX_ARGS, args)


def cut_text(value: bytes) -> bytes:
    """``value`` (UTF-8, over :data:`MAX_TEXT` bytes) cut as the native scanner cuts it."""
    end = MAX_TEXT
    while end and value[end] & 0xC0 == 0x80:  # not inside a character
        end -= 1
    return value[:end] + TEXT_MARK[0].encode() + str(len(value)).encode() + TEXT_MARK[1].encode()


def _cut(value: Any) -> tuple[Any, int] | None:
    """A text (str) or raw JSON (bytes) value cut, and its length in bytes; None if short enough."""
    if value.__class__ is bytes:
        return (cut_text(value), len(value)) if len(value) > MAX_TEXT else None
    if len(value) * 4 <= MAX_TEXT:  # at most 4 bytes a character
        return None
    if value.isascii():  # (no copy of a long ASCII value)
        if len(value) <= MAX_TEXT:
            return None
        return value[:MAX_TEXT] + TEXT_MARK[0] + str(len(value)) + TEXT_MARK[1], len(value)
    data = value.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_TEXT:
        return None
    return cut_text(data).decode("utf-8", "surrogatepass"), len(data)


def cut_values(values: list[Any]) -> list[tuple[int, int]]:
    """Cut, in place, the values of a column (text, raw JSON bytes, numbers or None) over
    :data:`MAX_TEXT` bytes; returns (position, original length) of each."""
    # the longest text or bytes, in C-level passes (no Python code per value)
    try:
        longest = max(map(len, filter(None, values)), default=0)  # text or bytes, and None
    except TypeError:  # numbers too (names, ids): raw JSON is all bytes, never mixed
        longest = _longest(values, str)
    if longest * 4 <= MAX_TEXT:
        return []
    found = []
    for at, value in enumerate(values):
        if value.__class__ is str or value.__class__ is bytes:
            cut = _cut(value)
            if cut is not None:
                values[at], length = cut
                found.append((at, length))
    return found


def _longest(values: list[Any], kind: type) -> int:
    """The length of the longest value of type ``kind`` (0: none)."""
    return max(map(len, compress(values, map(is_, map(type, values), repeat(kind)))), default=0)


def kept_args(args: Sequence[bytes]) -> tuple[list[bytes], list[tuple[int, int]]]:
    """Each event's raw args, those over :data:`MAX_ARGS` bytes replaced by a note (as the native
    scanner replaces them), and (position, original length) of each replaced."""
    if max(map(len, args), default=0) <= MAX_ARGS:
        return list(args), []
    kept, found = list(args), []
    for at, value in enumerate(kept):
        if len(value) > MAX_ARGS:
            kept[at] = args_note(len(value))
            found.append((at, len(value)))
    return kept, found


def args_note(length: int) -> bytes:
    """What replaces an args object of ``length`` bytes over :data:`MAX_ARGS`."""
    return f"{ARGS_NOTE[0]}{length}{ARGS_NOTE[1]}".encode()


def report(cuts: Sequence[Cut]) -> list[str]:
    """The repairs that say what was cut: one line per kind, with the count and the longest."""
    lines = []
    for kind, what in (
        (
            LONG_STRING,
            f"cut {{}} text values to {MAX_TEXT >> 10} KiB (marked '{TEXT_MARK[0]}N{TEXT_MARK[1]}')",
        ),
        (LONG_ARGS, f"replaced {{}} args objects over {MAX_ARGS >> 20} MiB by a note (not kept)"),
    ):
        lengths = [length for _, k, length in cuts if k == kind]
        if lengths:
            lines.append(what.format(f"{len(lengths):,}") + f"; the longest was {max(lengths):,} bytes")
    return lines
