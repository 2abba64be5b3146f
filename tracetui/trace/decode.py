"""Decode trace bytes into events and top-level metadata, tolerating broken files.

Fast path: the native scanner (:mod:`native`) reads well-formed traces straight into
columns. Otherwise one typed msgspec decode; odd field types are coerced per event. When the
JSON is broken, :mod:`repair` recovers every complete event (truncated files) or patches the
known Kineto defects (unescaped quotes, raw control characters, trailing commas) and says what
it did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tracetui.errors import TraceError
from tracetui.safetext import clean_value
from tracetui.trace import native, repair
from tracetui.trace.frames import Chunk, Columns, transpose
from tracetui.trace.release import drop_later
from tracetui.trace.schema import EVENTS_DECODER, TOP_DECODER, Event


@dataclass
class Decoded:
    """What the JSON held: events in file order (as columns) and the other top-level keys."""

    columns: Columns | list[Chunk]
    top: dict[str, Any]
    form: str  # "object" (Kineto) or "array" (legacy exporter)
    top_keys: list[str] = field(default_factory=list)  # in file order, traceEvents included
    truncated: bool = False
    repairs: list[str] = field(default_factory=list)
    # JSON of an array that decodes to ``events`` (for lazily reading every arg)
    events_json: bytes | msgspec.Raw | None = None
    # each event's args as raw JSON, where the decoder found them without decoding (native)
    args: Sequence[msgspec.Raw] | None = None


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
        chunks, repairs, events_json = decode_events(events_json)
    except msgspec.DecodeError as exc:
        return repair.recover(data, form, str(exc), path)
    except msgspec.ValidationError:
        raise TraceError(path, "JSON that is not a trace: the top level is not an object or array") from None
    except NotAList:
        raise TraceError(path, "JSON that is not a trace: 'traceEvents' is not a list") from None
    top = {key: _decode_value(raw) for key, raw in top_raw.items() if key != "traceEvents"}
    return Decoded(chunks, top, form, list(top_raw), repairs=repairs, events_json=events_json)


def _from_scan(data: bytes, scanned: native.Scanned) -> Decoded:
    view = memoryview(data)
    top_raw = {key: msgspec.Raw(view[start:end]) for key, start, end in scanned.top}
    top = {key: _decode_value(raw) for key, raw in top_raw.items() if key != "traceEvents"}
    start, end = scanned.events_span
    events_json = msgspec.Raw(view[start:end]) if scanned.form == "object" else data
    args = native.ArgsSpans(data, scanned.args_start, scanned.args_end)
    return Decoded(scanned.columns, top, scanned.form, list(top_raw), events_json=events_json, args=args)


class NotAList(Exception):
    """The events JSON is valid but not an array."""


def decode_events(events_json: bytes | msgspec.Raw) -> tuple[list[Chunk], list[str], bytes | msgspec.Raw]:
    """Decode a JSON array of events into column chunks; odd field types fall back to a
    per-event coercion.

    Returns the chunks, the repairs made and JSON that decodes to exactly those events.
    Raises ``msgspec.DecodeError`` for broken JSON and :class:`NotAList` for valid JSON
    that is not an array.
    """
    try:
        return [columns_of(EVENTS_DECODER.decode(events_json))], [], events_json
    except msgspec.ValidationError:
        generic = msgspec.json.decode(events_json)
    if not isinstance(generic, list):
        raise NotAList
    events, repairs, coerced_json = repair.coerce_events(generic)
    return [columns_of(events)], repairs, coerced_json


def columns_of(events: list[Event]) -> Chunk:
    """Transpose decoded events, freeing them in the background afterwards."""
    chunk = transpose(events)
    drop_later(events)
    return chunk


def _decode_value(raw: msgspec.Raw) -> Any:
    try:
        return clean_value(msgspec.json.decode(raw))
    except (msgspec.DecodeError, RecursionError):
        return None
