"""Recover what can be recovered from broken trace JSON.

Real traces break in known ways (see ../shared/docs/trace-format.md §7): a process killed
while writing leaves an unterminated ``traceEvents`` array (``.tmp`` files, cut gzip
streams); Kineto before 2.13 wrote unescaped ``"`` inside names and raw control characters;
Python's ``json.dump`` writes NaN and Infinity; third-party tools leave trailing commas,
invalid UTF-8 and lone surrogates. These are the recovery techniques, pure functions of the
bytes: :func:`patch_known_defects` repairs each broken token where it stands (never across an
event, so it works on any run of whole events), :func:`count_events` counts the event objects
plainly so that a repair can be checked to have kept them all. :mod:`decode` chooses among
them and reports what it did. The user's file is never modified.
"""

from __future__ import annotations

import json
import math
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


# ---- token repairs ---------------------------------------------------------------------------
# A lexer that stops at the first token a strict JSON decoder would refuse: a run of valid tokens
# is one regex match (C speed); each stop is repaired by hand, where it stands.
_WS = rb"[ \t\n\r]*+"
_UTF8 = (  # one well-formed multi-byte UTF-8 sequence (RFC 3629)
    rb"(?:[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
    rb"|\xf4[\x80-\x8f][\x80-\xbf]{2})"
)
_ESCAPE = (  # a valid escape; a \u surrogate only as a high-low pair
    rb'\\(?:["\\/bfnrt]|u(?![dD][89a-fA-F])[0-9a-fA-F]{4}'
    rb"|u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_STRING = rb'"(?:[\x20\x21\x23-\x5b\x5d-\x7f]++|' + _UTF8 + rb"|" + _ESCAPE + rb')*+"'
_KEY_LIKE = rb'"(?:[^"\\\n]++|\\.)*+"'
# Where a string can end: a value in an object before a comma and the next key, or before the
# object's end and what may follow an object; any other string before a structural character.
# Raw control characters count as the whitespace they stand in (they are repaired on their own).
_GAP = rb"[\x00-\x20]*+"
_VALUE_END = rb"(?=" + _GAP + rb"(?:," + _GAP + _KEY_LIKE + _GAP + rb":|\}" + _GAP + rb"(?:[,}\]]|\Z)))"
_OTHER_END = rb"(?=" + _GAP + rb"(?:[,:\]}]|\Z))"
_NUMBER = rb"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]{1,2}(?![0-9]))?(?![0-9.eE])"
_VALID_RUN = re.compile(
    rb"(?:[ \t\n\r]++|[\[\]{}]|,(?!" + _GAP + rb"[\]}])"
    rb"|:" + _WS + rb"(?:" + _STRING + _VALUE_END + rb'|(?!"))'
    rb"|" + _STRING + _OTHER_END + rb"|" + _NUMBER + rb"|(?:true|false|null)(?![A-Za-z0-9_]))*+"
)
_STRING_ENDS = {"value": re.compile(_VALUE_END), "other": re.compile(_OTHER_END)}
_TO_QUOTE = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)  # up to the next unescaped quote
_EVENT_BOUNDARY = re.compile(rb"\}" + _GAP + rb"," + _GAP + rb"\{" + _GAP + rb'"')
_WHITESPACE = re.compile(_WS)
_NOT_A_NUMBER = re.compile(rb"-?(?:NaN|Infinity)(?![A-Za-z0-9_])")
_NUMBER_LIKE = re.compile(rb"-?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?")
_TRAILING_COMMA = re.compile(rb"," + _GAP + rb"[\]}]")
_IN_STRING = re.compile(  # 1: valid escape, 2: lone surrogate, 3: stray backslash, 4: quote, 5: control
    r"(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u(?![dD][89a-fA-F])[0-9a-fA-F]{4}"
    r'|\\["\\/bfnrt])|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})|(\\)|(")|([\x00-\x1f])'
)
MAX_QUOTES = 1024  # candidate ends of one broken string tried before it is left as it is

FIXES = {  # kind of repair -> what the report says
    "constant": "replaced {} NaN/Infinity values with null",
    "range": "replaced {} out-of-range numbers with null",
    "control": "escaped {} raw control characters",
    "utf8": "replaced {} invalid UTF-8 sequences with U+FFFD",
    "surrogate": "replaced {} lone surrogates with U+FFFD",
    "quote": "escaped {} stray quotes in strings",
    "backslash": "escaped {} stray backslashes",
    "comma": "removed {} trailing commas",
}


_COUNTED = [
    (template, re.compile(re.escape(template).replace(r"\{\}", r"(\d+)") + "$"))
    for template in (*FIXES.values(), "skipped {} unreadable events")
]


def merged_reports(reports: list[str]) -> list[str]:
    """Repair reports of several parts of one file as one list: counted repairs of one kind
    summed (``replaced 1 …`` twice: ``replaced 2 …``), in order of first appearance."""
    out: list[str] = []
    totals: dict[str, int] = {}
    for report in reports:
        found = next(((t, m) for t, pattern in _COUNTED if (m := pattern.match(report))), None)
        if found is None:
            out.append(report)
            continue
        template, match = found
        if template not in totals:
            out.append(template)
        totals[template] = totals.get(template, 0) + int(match.group(1))
    return [template.format(totals[template]) if template in totals else template for template in out]


def patch_known_defects(data: bytes) -> tuple[bytes, list[str]]:
    """Repair each token of ``data`` that a strict JSON decoder refuses, where it stands.

    NaN/Infinity and numbers beyond a double become ``null``; in a string, raw control
    characters are escaped, invalid UTF-8 and lone surrogates become U+FFFD, stray quotes and
    backslashes are escaped (a string ends at the first quote the JSON around it allows, never
    past an event boundary); trailing commas go. No repair reaches past its token, so events
    are never joined or split, and ``data`` may be any run of whole events (a block). Returns
    the patched bytes (``data`` itself when nothing needed repair) and a line per kind of fix.
    """
    counts = dict.fromkeys(FIXES, 0)
    out: list[bytes] = []
    pos = done = 0
    end = len(data)
    while True:
        match = _VALID_RUN.match(data, pos)
        assert match is not None  # the pattern matches the empty string
        pos = match.end()
        if pos >= end:
            break
        replacement, after = _repair_at(data, pos, counts)
        if replacement is not None:
            out += (data[done:pos], replacement)
            done = after
        pos = after
    if not out:
        return data, []
    out.append(data[done:])
    return b"".join(out), [FIXES[kind].format(n) for kind, n in counts.items() if n]


def _repair_at(data: bytes, pos: int, counts: dict[str, int]) -> tuple[bytes | None, int]:
    """The repair of the token at ``pos`` (None: none known) and where the token ends."""
    byte = data[pos : pos + 1]
    if byte == b":":  # a string value that does not end where it should
        start = _skip(data, pos + 1)
        if data[start : start + 1] != b'"':
            return None, start
        string, after = _string(data, start, "value", counts)
        return (None if string is None else data[pos:start] + string), after
    if byte == b'"':
        return _string(data, pos, "other", counts)
    if byte == b"," and _TRAILING_COMMA.match(data, pos):
        counts["comma"] += 1
        return b"", pos + 1
    if match := _NOT_A_NUMBER.match(data, pos):
        counts["constant"] += 1
        return b"null", match.end()
    if match := _NUMBER_LIKE.match(data, pos):
        if math.isinf(float(match.group())):
            counts["range"] += 1
            return b"null", match.end()
        return None, match.end()
    if byte < b" ":  # a control character between tokens
        counts["control"] += 1
        return b" ", pos + 1
    return None, pos + 1  # not a defect this knows: left for the decoder to refuse


def _skip(data: bytes, pos: int) -> int:
    match = _WHITESPACE.match(data, pos)
    return pos if match is None else match.end()


def _string(data: bytes, start: int, context: str, counts: dict[str, int]) -> tuple[bytes | None, int]:
    """The repaired string token that opens at ``start`` (None: unchanged) and where it ends.

    It ends at the first unescaped quote that the JSON around it allows (``context``: "value"
    in an object, "other" elsewhere); quotes before that one are stray. A string that would
    reach past an event boundary, or that no quote ends, ends at its first quote (unrepaired).
    """
    ends = _STRING_ENDS[context]
    first = close = -1
    pos = start + 1
    for _ in range(MAX_QUOTES):
        match = _TO_QUOTE.match(data, pos)
        assert match is not None
        quote = match.end()
        if quote >= len(data) or _EVENT_BOUNDARY.search(data, max(pos - 8, start), quote + 1):
            break
        first = quote if first < 0 else first
        if ends.match(data, quote + 1):
            close = quote
            break
        pos = quote + 1
    if close < 0:
        if first < 0:
            return None, len(data) if quote >= len(data) else quote
        close = first
    body = data[start + 1 : close]
    fixed = _fix_body(body, counts)
    return (None if fixed == body else b'"' + fixed + b'"'), close + 1


def _fix_body(body: bytes, counts: dict[str, int]) -> bytes:
    """The body of a string with every defect inside it repaired."""
    text = body.decode("utf-8", "replace")
    if "\ufffd" in text:
        counts["utf8"] += text.count("\ufffd") - body.count("\ufffd".encode())

    def fix(match: re.Match[str]) -> str:
        kind = match.lastindex or 1
        if kind == 1:
            return match.group()
        counts[("surrogate", "backslash", "quote", "control")[kind - 2]] += 1
        if kind == 2:
            return "\\ufffd"
        if kind == 5:
            return f"\\u{ord(match.group()):04x}"
        return "\\" + match.group()

    return _IN_STRING.sub(fix, text).encode()


_NEXT_ELEMENT = re.compile(rb"\}" + _WS + rb"," + _WS + rb"\{")
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
PREFIX_WINDOW = 1 << 20  # bytes before a broken token searched for the end of the last whole event
PREFIX_TRIES = 3


def whole_events_before(data: bytes, start: int, limit: int) -> int:
    """Where the run of whole, valid events that opens the array at ``start`` (its ``[``) ends, at
    or before byte ``limit`` (a broken token a decoder found there): the repair of the bytes
    after it is the repair of the whole (repairs are local). Checked by a decode of the run, so
    never inside a string or an event; ``start`` when no such end is found."""
    low = max(start, limit - PREFIX_WINDOW)
    ends = [m.start() + 1 for m in _NEXT_ELEMENT.finditer(data, low, limit)]
    for end in reversed(ends[-PREFIX_TRIES:]):
        try:
            _RAW_LIST.decode(data[start:end] + b"]")
        except msgspec.DecodeError:
            continue
        return end
    return start


# ---- counting and event-by-event reading --------------------------------------------------------
_PHASE_KEY = re.compile(rb'"ph"' + _WS + rb":")
_ESCAPED_PHASE_KEY = re.compile(rb'\\"ph"' + _WS + rb":")  # inside a string: not a key


def count_events(data: bytes, start: int = 0, end: int | None = None) -> int:
    """A plain structural count of the event objects in ``data[start:end]``: their ``"ph"`` keys
    (independent of any repair, to check that a repair kept every event)."""
    stop = len(data) if end is None else end
    return len(_PHASE_KEY.findall(data, start, stop)) - len(_ESCAPED_PHASE_KEY.findall(data, start, stop))


def stream_events(data: bytes, form: str) -> tuple[list[Event], int, bool, bytes]:
    """Decode events one by one, skipping unreadable ones. Slow; only for broken files.

    Returns the events, how many events the skipped stretches held (by :func:`count_events`, at
    least one a stretch), whether the array was complete, and JSON of the events read.
    """
    text = data.decode("utf-8", "replace")
    decoder = json.JSONDecoder(strict=False, parse_constant=lambda _: None)
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
        except (json.JSONDecodeError, RecursionError):
            boundary = _NEXT_EVENT.search(text, pos + 1)
            stretch = text[pos : boundary.end() - 1 if boundary else length].encode("utf-8", "replace")
            skipped += max(1, count_events(stretch))
            if boundary is None:  # the last event: the array is complete if it closes after it
                end = _value_end(text, pos)
                complete = end is not None and text[end:].lstrip(" \t\r\n,")[:1] == "]"
                break
            pos = boundary.end() - 1
    events, _, events_json = coerce_events(items)
    return events, skipped, complete, events_json


_NEXT_EVENT = re.compile(r"\}[ \t\n\r]*,[ \t\n\r]*\{")
# a string (one that the text ends inside runs to its end), or a bracket
_STRUCTURE = re.compile(r'"[^"\\]*+(?:\\(?:.|\Z)[^"\\]*+)*+(?:"|\Z)|[{}\[\]]', re.DOTALL)


def _value_end(text: str, pos: int) -> int | None:
    """Where the object or array that opens at ``pos`` closes (just after its bracket), by its
    brackets outside strings (an unreadable number or word inside does not matter); None when the
    text ends first (a cut file) or a bracket does not match."""
    depth = 0
    for match in _STRUCTURE.finditer(text, pos):
        token = match.group()
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
            if depth <= 0:
                return match.end() if depth == 0 else None
    return None
