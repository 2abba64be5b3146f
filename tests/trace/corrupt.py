"""Write a trace in the layouts real files come in, with one token of one event broken.

Layouts: ``compact`` (``separators=(",", ":")``, HTA's trace filter), ``json.dump`` (Python's
default: one line, ``", "`` and ``": "``; NaN is what it writes for a float nan) and ``indented``
(several lines per event, like Kineto's own output). Corruptions: each is one token of the
kind real traces break with (trace-format.md §7) or a writer produces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

LAYOUTS: dict[str, dict[str, Any]] = {
    "compact": {"separators": (",", ":")},
    "json.dump": {},
    "indented": {"indent": 2},
}
# Repaired in place: the event loads, the repair is reported.
REPAIRABLE = (
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "control",
    "tab",
    "utf8",
    "surrogate",
    "quote",
    "backslash",
    "comma",
    "control between",
)
CORRUPTIONS = (*REPAIRABLE, "garbage")  # garbage: not JSON at all; that event may be skipped (reported)

_NUMBER_VALUE = re.compile(rb'(?<!\\)":[ ]?(-?[0-9][0-9.eE+-]*)')  # a number after a key
_STRING = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_UNIT = re.compile(rb"\\u[0-9a-fA-F]{4}|\\.|.", re.DOTALL)  # one character of a string body
_INVALID_UTF8 = (b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xe2\x82", b"\x80\x80")
_CONTROLS = bytes(range(0x20))

Choose = Callable[[int], int]  # n -> a choice in range(n)


def document(doc: dict[str, Any], layout: str, broken: dict[int, bytes] | None = None) -> bytes:
    """``doc`` as bytes in ``layout``; ``broken``: the text of some events, by index, instead."""
    options = LAYOUTS[layout]
    events = [event_text(e, layout) for e in doc["traceEvents"]]
    for index, text in (broken or {}).items():
        events[index] = text
    top = {k: v for k, v in doc.items() if k != "traceEvents"}
    head = json.dumps(top, **options).encode()[:-1].rstrip()
    head += (b"," if top else b"") + (
        b"\n  " if layout == "indented" else b" " if layout == "json.dump" else b""
    )
    head += b'"traceEvents":' + (b"" if layout == "compact" else b" ") + b"["
    if layout == "indented":
        return head + b"\n" + b",\n".join(events) + b"\n  ]\n}"
    separator = b"," if layout == "compact" else b", "
    return head + separator.join(events) + b"]}"


def event_text(event: dict[str, Any], layout: str) -> bytes:
    text = json.dumps(event, **LAYOUTS[layout]).encode()
    if layout == "indented":
        text = b"\n".join(b"    " + line for line in text.split(b"\n"))
    return text


def corrupt(text: bytes, kind: str, choose: Choose) -> bytes | None:
    """``text`` (one event) with one token broken by ``kind``; None if it has no such token."""
    if kind in ("NaN", "Infinity", "-Infinity", "1e400"):
        numbers = list(_NUMBER_VALUE.finditer(text))
        if not numbers:
            return None
        number = numbers[choose(len(numbers))]
        return text[: number.start(1)] + kind.encode() + text[number.end(1) :]
    outside = _STRING.sub(lambda m: b"_" * len(m.group()), text)  # same offsets, strings masked
    if kind == "comma":
        closers = [
            m.start() for m in re.finditer(rb"[ \n]*[}\]]", outside) if outside[m.start() - 1] not in b"{["
        ]
        at = closers[choose(len(closers))]
        return text[:at] + b"," + text[at:]
    if kind == "control between":  # a raw control character where whitespace may stand
        gaps = [m.start() for m in re.finditer(rb"[,:{\[]", outside)]
        at = gaps[choose(len(gaps))] + 1
        controls = _CONTROLS.translate(None, b"\t\n\r")  # those three are JSON whitespace there
        return text[:at] + controls[choose(len(controls))].to_bytes(1, "big") + text[at:]
    if kind == "garbage":
        colons = [m.start() for m in re.finditer(rb":", outside)]
        at = colons[choose(len(colons))]
        return text[:at] + b";" + text[at + 1 :]
    strings = list(_STRING.finditer(text))
    string = strings[choose(len(strings))]
    units = [m.end() for m in _UNIT.finditer(text, string.start(1), string.end(1))]
    at = ([string.start(1), *units])[choose(len(units) + 1)]
    inserted = {
        "control": lambda: _CONTROLS[choose(len(_CONTROLS))].to_bytes(1, "big"),
        "tab": lambda: b"\t",
        "utf8": lambda: _INVALID_UTF8[choose(len(_INVALID_UTF8))],
        "surrogate": lambda: (b"\\ud800", b"\\udbff", b"\\udc00", b"\\udfff")[choose(4)],
        "quote": lambda: b'"',
        "backslash": lambda: b"\\q",
    }[kind]()
    return text[:at] + inserted + text[at:]
