"""Recover what can be recovered from broken trace JSON.

Real traces break in known ways (see ../shared/docs/trace-format.md §7): a process killed
while writing leaves an unterminated ``traceEvents`` array (``.tmp`` files, cut gzip
streams); Kineto before 2.13 wrote unescaped ``"`` inside names, raw control characters
and, via third-party tools, trailing commas. These are the recovery techniques (pure
functions of the bytes); :mod:`decode` chooses among them, keeps every complete event and
reports what it did. The user's file is never modified.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec

from tracetui.errors import TraceError
from tracetui.safetext import clean_value
from tracetui.trace.schema import ARG_KEYS, EVENTS_DECODER, SHAPE_KEYS, Event

MAX_CUT_ATTEMPTS = 12
_SCALAR = (int, float, str, type(None))
_EVENT_FIELDS = {
    "ph": (str,),
    "cat": (str, type(None)),
    "name": _SCALAR,
    "pid": _SCALAR,
    "tid": _SCALAR,
    "ts": _SCALAR,
    "dur": _SCALAR,
    "id": _SCALAR,
    "bp": (str, type(None)),
    "s": (str, type(None)),
}
_RAW_ARGS = {ARG_KEYS["grid"], ARG_KEYS["block"], *SHAPE_KEYS.values()}
_TYPED_ARGS = set(ARG_KEYS.values())


def coerce_events(items: list[Any]) -> tuple[list[Event], list[str], bytes]:
    """Typed events from generic JSON, dropping fields whose type makes no sense."""
    cleaned: list[dict[str, Any]] = []
    dropped = 0
    for item in items:
        if not isinstance(item, dict):
            dropped += 1
            continue
        event = {k: v for k, v in item.items() if k in _EVENT_FIELDS and _is(v, _EVENT_FIELDS[k])}
        dropped += len([k for k in item if k in _EVENT_FIELDS]) - len(event)
        args = item.get("args")
        if isinstance(args, dict):
            event["args"] = {k: v for k, v in args.items() if k not in _TYPED_ARGS or _arg_ok(k, v)}
            dropped += len(args) - len(event["args"])
        cleaned.append(event)
    events_json = msgspec.json.encode(cleaned)
    return (
        EVENTS_DECODER.decode(events_json),
        [f"ignored {dropped} malformed fields"] if dropped else [],
        events_json,
    )


def _arg_ok(key: str, value: Any) -> bool:
    return key in _RAW_ARGS or _is(value, _SCALAR)


def _is(value: Any, types: tuple[type, ...]) -> bool:
    """``isinstance``, except that a bool is not a number (the typed decoder rejects it)."""
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def events_array_start(data: bytes, form: str, path: Path) -> int:
    """Byte offset of the ``[`` that opens the events array."""
    if form == "array":
        return data.index(b"[")
    key = data.find(b'"traceEvents"')
    bracket = data.find(b"[", key) if key >= 0 else -1
    if key < 0 or bracket < 0:
        raise TraceError(path, "invalid JSON with no 'traceEvents' array")
    return bracket


def header(data: bytes, start: int) -> dict[str, Any]:
    """Top-level keys written before ``traceEvents`` (recoverable from a cut file)."""
    key = data.rfind(b'"traceEvents"', 0, start)
    head = data[:key].rstrip().rstrip(b",") + b"}"
    try:
        value = msgspec.json.decode(head)
    except msgspec.DecodeError:
        return {}
    return clean_value(value) if isinstance(value, dict) else {}


def cut_at_last_complete_event(data: bytes, start: int) -> tuple[list[Event], bytes] | None:
    """Decode the events up to the last ``}`` that closes an array element."""
    end = len(data)
    for _ in range(MAX_CUT_ATTEMPTS):
        pos = data.rfind(b"}", start, end)
        if pos < 0:
            return None
        follow = data[pos + 1 : pos + 64].lstrip()
        end = pos
        if follow and follow[:1] not in (b",", b"]"):
            continue
        events_json = data[start : pos + 1] + b"]"
        try:
            return EVENTS_DECODER.decode(events_json), events_json
        except msgspec.ValidationError:
            events, _, events_json = coerce_events(msgspec.json.decode(events_json))
            return events, events_json
        except msgspec.DecodeError:
            continue
    return None


_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_TRAILING_COMMA = re.compile(rb",(\s*[\]}])")
# Kineto writes `"name": "…", "pid":` on one line; quotes inside the name were not escaped.
_NAME_LINE = re.compile(rb'("name": ")(.*)(", "pid": )')


def patch_known_defects(data: bytes) -> tuple[bytes, list[str]]:
    fixes: list[str] = []
    patched, n = _CONTROL.subn(rb"\\ufffd", data)
    if n:
        fixes.append(f"replaced {n} raw control characters")
    quoted = _NAME_LINE.sub(_escape_name_quotes, patched)
    if quoted != patched:
        fixes.append("escaped stray quotes in names")
    patched = quoted
    patched, n = _TRAILING_COMMA.subn(rb"\1", patched)
    if n:
        fixes.append(f"removed {n} trailing commas")
    return patched, fixes


def _escape_name_quotes(match: re.Match[bytes]) -> bytes:
    inner = re.sub(rb'(?<!\\)"', rb'\\"', match.group(2))
    return match.group(1) + inner + match.group(3)


def stream_events(text: str, form: str) -> tuple[list[Event], int, bool, bytes]:
    """Decode events one by one, skipping unreadable ones. Slow; only for broken files."""
    decoder = json.JSONDecoder(strict=False)
    items: list[Any] = []
    skipped = 0
    key = 0 if form == "array" else text.find('"traceEvents"')
    pos = text.find("[", max(key, 0)) + 1
    length = len(text)
    complete = False
    while pos < length:
        while pos < length and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= length:
            break
        if text[pos] == "]":
            complete = True
            break
        try:
            item, pos = decoder.raw_decode(text, pos)
            items.append(item)
        except json.JSONDecodeError:
            nxt = text.find("\n  {", pos + 1)
            if nxt < 0:
                break
            skipped += 1
            pos = nxt
    events, _, events_json = coerce_events(items)
    return events, skipped, complete, events_json
