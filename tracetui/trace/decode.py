"""Decode trace bytes into events and top-level metadata, tolerating broken files.

Fast path: the native scanner (:mod:`native`) reads well-formed traces straight into
columns. Otherwise one typed msgspec decode; odd field types are coerced per event. When the
JSON is broken, :func:`decode` recovers with the techniques of :mod:`repair`: every complete
event of a truncated file, or the known Kineto defects patched (unescaped quotes, raw control
characters, trailing commas) and the patched bytes decoded again, or event by event; and says
what it did.
"""

from __future__ import annotations

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
    """Decode broken JSON: cut at the last complete event, or patch known defects and decode
    again, or read event by event. ``error``: msgspec's message for the failed fast decode."""
    start = repair.events_array_start(data, form, path)
    header = repair.header(data, start) if form == "object" else {}
    if "truncated" in error and (cut := repair.cut_at_last_complete_event(data, start)) is not None:
        events, events_json = cut
        return Decoded(
            [_columns_of(events)], header, form, JsonArgs(events_json), list(header), truncated=True
        )
    patched, fixes = repair.patch_known_defects(data)
    if fixes:
        try:
            decoded = decode(patched, path)
        except TraceError:
            decoded = None
        if decoded is not None:
            decoded.repairs = fixes + decoded.repairs
            return decoded
    events, skipped, complete, events_json = repair.stream_events(patched.decode("utf-8", "replace"), form)
    if not events:
        raise TraceError(path, "invalid JSON: no complete trace event could be read")
    repairs = [*fixes, *([f"skipped {skipped} unreadable events"] if skipped else [])]
    return Decoded(
        [_columns_of(events)],
        header,
        form,
        JsonArgs(events_json),
        list(header),
        truncated=not complete,
        repairs=repairs,
    )


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
