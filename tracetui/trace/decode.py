"""Decode trace bytes into events and top-level metadata, tolerating broken files.

Fast path: the native scanner (:mod:`native`) reads well-formed traces straight into
columns. Otherwise one typed msgspec decode; odd field types are coerced per event. When the
JSON is broken, :func:`decode` recovers with the techniques of :mod:`repair`: every complete
event of a truncated file, or each broken token repaired where it stands (NaN, unescaped quotes,
raw control characters, invalid UTF-8, lone surrogates, trailing commas…) and the patched bytes
decoded again, or event by event; says what it did, and checks against a plain count of the
file's event objects that no event was lost on the way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from tracetui.errors import TraceError
from tracetui.safetext import clean_value
from tracetui.trace import native, repair
from tracetui.trace.args import JsonArgs
from tracetui.trace.decoded import Decoded
from tracetui.trace.frames import Chunk, transpose
from tracetui.trace.release import drop_later
from tracetui.trace.schema import EVENTS_DECODER, TOP_DECODER, Event


def decode(data: bytes, path: Path, scanned_raw: native.RawScan | None = None) -> Decoded:
    """Decode ``data``; raise :class:`TraceError` if it is not a trace at all.

    ``scanned_raw``: the native scanner's result for ``data`` when it already ran (prefetch).
    """
    scanned = native.scan(data, scanned_raw)
    if not isinstance(scanned, str):
        return _from_scan(data, scanned)
    try:
        return _decode_with_msgspec(data, path)
    except RecursionError:  # msgspec (and the repairs' json module) stop at ~1,000 levels
        raise TraceError(path, "JSON nested too deeply to read (a value over 1,000 levels deep)") from None


def _decode_with_msgspec(data: bytes, path: Path) -> Decoded:
    """The fallback for what the native scanner refuses: msgspec, coercions and repairs."""
    form = "array" if data[:4096].lstrip()[:1] == b"[" else "object"
    invalid = _first_invalid_utf8(data)
    if invalid is not None:  # msgspec does not check the text it skips (unread args)
        return _recover(data, form, f"invalid UTF-8 (byte {invalid})", path)
    try:
        top_raw: dict[str, msgspec.Raw] = {}
        events_json: bytes | msgspec.Raw = data
        if form == "object":
            top_raw = TOP_DECODER.decode(data)
            if "traceEvents" not in top_raw:
                raise TraceError(path, "JSON that is not a trace: no 'traceEvents' array")
            events_json = top_raw["traceEvents"]
        chunks, repairs, events_json = _decode_events(events_json)
    except msgspec.DecodeError as exc:
        return _recover(data, form, str(exc), path)
    except msgspec.ValidationError:
        raise TraceError(path, "JSON that is not a trace: the top level is not an object or array") from None
    except NotAList:
        raise TraceError(path, "JSON that is not a trace: 'traceEvents' is not a list") from None
    top = {key: _decode_value(raw) for key, raw in top_raw.items() if key != "traceEvents"}
    return Decoded(chunks, top, form, JsonArgs(events_json), list(top_raw), repairs=repairs)


def _from_scan(data: bytes, scanned: native.Scanned) -> Decoded:
    view = memoryview(data)
    top_raw = {key: msgspec.Raw(view[start:end]) for key, start, end in scanned.top}
    top = {key: _decode_value(raw) for key, raw in top_raw.items() if key != "traceEvents"}
    args = native.ArgsSpans(data, scanned.args_start, scanned.args_end)
    return Decoded(scanned.columns, top, scanned.form, args, list(top_raw), decoder="native")


def _recover(data: bytes, form: str, error: str, path: Path) -> Decoded:
    """Decode broken JSON: cut at the last complete event of a cut file, or repair the broken
    tokens and decode again, or read event by event. ``error``: msgspec's message for the
    failed fast decode. Every way checks that it read as many events as the file holds."""
    start = repair.events_array_start(data, form, path)
    header = repair.header(data, start) if form == "object" else {}
    closer = b"}" if form == "object" else b"]"
    if "truncated" in error and not data.rstrip().endswith(closer):
        cut = repair.cut_at_last_complete_event(data, start)
        if cut is not None:
            events, events_json = cut
            _check_count(len(events), 0, repair.count_events(events_json), path)
            return Decoded(
                [_columns_of(events)], header, form, JsonArgs(events_json), list(header), truncated=True
            )
    expected = repair.count_events(data, start)
    broken_at = _BYTE.search(error)  # a strict decoder's first refusal: the events before are whole
    skip = repair.whole_events_before(data, start, int(broken_at.group(1))) if broken_at else 0
    tail, fixes = repair.patch_known_defects(data[skip:] if skip else data)
    patched = data[:skip] + tail if fixes and skip else tail if fixes else data
    if fixes:
        try:
            decoded = decode(patched, path)
        except TraceError:
            decoded = None
        if decoded is not None:
            _check_count(_rows(decoded) + decoded.skipped, int(decoded.truncated), expected, path)
            decoded.repairs = fixes + decoded.repairs
            return decoded
    events, skipped, complete, events_json = repair.stream_events(patched, form)
    if not events:
        raise TraceError(path, "invalid JSON: no complete trace event could be read")
    _check_count(len(events) + skipped, int(not complete), expected, path)
    return Decoded(
        [_columns_of(events)],
        header,
        form,
        JsonArgs(events_json),
        list(header),
        truncated=not complete,
        repairs=[*fixes, *([f"skipped {skipped} unreadable events"] if skipped else [])],
        skipped=skipped,
    )


_BYTE = re.compile(r"\(byte (\d+)\)")  # where msgspec's message says the JSON broke


def _first_invalid_utf8(data: bytes) -> int | None:
    if data.isascii():
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def _check_count(read: int, cut: int, expected: int, path: Path) -> None:
    """Raise unless ``read`` events (decoded or reported as skipped) account for the
    ``expected`` events of the file, less ``cut`` (the last event of a cut file)."""
    if read < expected - cut:
        raise TraceError(
            path,
            f"broken JSON that could not be repaired without losing events: read {read:,} of "
            f"the {expected:,} events in the file",
        )


def _rows(decoded: Decoded) -> int:
    columns = decoded.columns
    if isinstance(columns, list):
        return sum(chunk.size for chunk in columns)
    return len(columns.series["ph"])


class NotAList(Exception):
    """The events JSON is valid but not an array."""


def _decode_events(events_json: bytes | msgspec.Raw) -> tuple[list[Chunk], list[str], bytes | msgspec.Raw]:
    """Decode a JSON array of events into column chunks; odd field types fall back to a
    per-event coercion.

    Returns the chunks, the repairs made and JSON that decodes to exactly those events.
    Raises ``msgspec.DecodeError`` for broken JSON and :class:`NotAList` for valid JSON
    that is not an array.
    """
    try:
        return [_columns_of(EVENTS_DECODER.decode(events_json))], [], events_json
    except msgspec.ValidationError:
        generic = msgspec.json.decode(events_json)
    if not isinstance(generic, list):
        raise NotAList
    events, repairs, coerced_json = repair.coerce_events(generic)
    return [_columns_of(events)], repairs, coerced_json


def _columns_of(events: list[Event]) -> Chunk:
    """Transpose decoded events, freeing them in the background afterwards."""
    chunk = transpose(events)
    drop_later(events)
    return chunk


def _decode_value(raw: msgspec.Raw) -> Any:
    try:
        return clean_value(msgspec.json.decode(raw))
    except (msgspec.DecodeError, RecursionError):
        return None
