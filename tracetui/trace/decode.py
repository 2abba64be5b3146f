"""Decode trace bytes into events and top-level metadata, tolerating broken files.

Fast path: one typed msgspec decode. When the JSON is broken, :mod:`repair` recovers
every complete event (truncated files) or patches the known Kineto defects (unescaped
quotes, raw control characters, trailing commas) and says what it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tracetui.errors import TraceError
from tracetui.safetext import clean_value
from tracetui.trace import repair
from tracetui.trace.frames import Chunk, Tables, transpose
from tracetui.trace.helper import Helper
from tracetui.trace.release import drop_later
from tracetui.trace.schema import EVENTS_DECODER, TOP_DECODER, Event
from tracetui.trace.split import halves


@dataclass
class Decoded:
    """What the JSON held: events in file order (as column chunks) and the other top-level keys."""

    chunks: list[Chunk]
    top: dict[str, Any]
    form: str  # "object" (Kineto) or "array" (legacy exporter)
    top_keys: list[str] = field(default_factory=list)  # in file order, traceEvents included
    truncated: bool = False
    repairs: list[str] = field(default_factory=list)
    # JSON of an array that decodes to ``events`` (for lazily reading every arg)
    events_json: bytes | msgspec.Raw | None = None
    # tables of the second half decoded by a helper process, and their id offset
    partner: tuple[Tables, int] | None = None


def decode(data: bytes, path: Path, helper: Helper | None = None) -> Decoded:
    """Decode ``data``; raise :class:`TraceError` if it is not a trace at all.

    With a ``helper`` process (:mod:`helper`), the second half of the events is decoded there.
    """
    try:
        return _decode(data, path, helper)
    finally:
        if helper is not None:
            helper.cancel()  # a no-op once its result was received


def _decode(data: bytes, path: Path, helper: Helper | None) -> Decoded:
    form = "array" if data[:4096].lstrip()[:1] == b"[" else "object"
    try:
        top_raw: dict[str, msgspec.Raw] = {}
        events_json: bytes | msgspec.Raw = data
        if form == "object":
            top_raw = TOP_DECODER.decode(data)
            if "traceEvents" not in top_raw:
                raise TraceError(path, "JSON that is not a trace: no 'traceEvents' array")
            events_json = top_raw["traceEvents"]
        shared = None if helper is None else _decode_with_helper(events_json, helper)
        if shared is not None:
            chunks, repairs, partner = [shared[0]], [], shared[1]
        else:
            chunks, repairs, events_json = decode_events(events_json)
            partner = None
    except msgspec.DecodeError as exc:
        return repair.recover(data, form, str(exc), path)
    except msgspec.ValidationError:
        raise TraceError(path, "JSON that is not a trace: the top level is not an object or array") from None
    except NotAList:
        raise TraceError(path, "JSON that is not a trace: 'traceEvents' is not a list") from None
    top = {key: _decode_value(raw) for key, raw in top_raw.items() if key != "traceEvents"}
    return Decoded(
        chunks, top, form, list(top_raw), repairs=repairs, events_json=events_json, partner=partner
    )


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


def _decode_with_helper(
    events_json: bytes | msgspec.Raw, helper: Helper
) -> tuple[Chunk, tuple[Tables, int]] | None:
    """First half here, second half from the helper (or here too if the helper failed).

    Returns None, with the helper stopped, when the array cannot be split or a half does not
    decode cleanly; the caller then decodes the whole array (with its repair paths).
    """
    split = halves(events_json)
    if split is None:
        helper.cancel()
        return None
    first, second = split
    try:
        head = columns_of(EVENTS_DECODER.decode(first))
    except msgspec.MsgspecError:
        helper.cancel()
        return None
    received = helper.receive()
    if received is not None and received[:2] == (len(events_json), len(first)):
        return head, (received[2], head.size)
    from tracetui.trace.frames import build_tables

    try:
        tail = columns_of(EVENTS_DECODER.decode(second))
    except msgspec.MsgspecError:
        return None
    return head, (build_tables([tail]), head.size)


def _decode_value(raw: msgspec.Raw) -> Any:
    try:
        return clean_value(msgspec.json.decode(raw))
    except msgspec.DecodeError:
        return None
