"""Decode trace JSON with msgspec, tolerating broken files, and assemble what a read gave.

The native scanner (:mod:`stream`) reads well-formed traces block by block. What it cannot read
comes here: a damaged or unusual part of the events (:func:`decode_region`), or a whole document
whose top level it refuses (:func:`decode_whole`). One typed msgspec decode; odd field types are
coerced per event. When the JSON is broken, the techniques of :mod:`repair` recover it: every
complete event of a truncated file, or each broken token repaired where it stands (NaN, unescaped
quotes, raw control characters, invalid UTF-8, lone surrogates, trailing commas…) and the patched
bytes decoded again, or event by event; it says what it did, and checks against a plain count of
the event objects that no event was lost on the way."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from tracetui.errors import TraceError
from tracetui.safetext import clean_value
from tracetui.trace import repair
from tracetui.trace.decoded import Part
from tracetui.trace.frames import Chunk, transpose
from tracetui.trace.release import drop_later
from tracetui.trace.schema import EVENTS_DECODER, RAW_ARGS_DECODER, TOP_DECODER, Event


def decode_whole(data: bytes, path: Path) -> Part:
    """Decode a whole document with msgspec; raise :class:`TraceError` if it is not a trace."""
    if not data.strip():
        raise TraceError(path, "empty trace (only whitespace)")
    try:
        return _decode_with_msgspec(data, path)
    except RecursionError:  # msgspec (and the repairs' json module) stop at ~1,000 levels
        raise TraceError(path, "JSON nested too deeply to read (a value over 1,000 levels deep)") from None
    except msgspec.MsgspecError as exc:  # a repair technique gave up on this input
        raise TraceError(path, f"invalid JSON that could not be repaired ({exc})") from None


def decode_region(part: bytes, closed: bool, path: Path, offset: int) -> Part:
    """Decode a part of the events array the native scanner could not read (``part``: events, or
    what is left of them, comma-separated; ``closed``: it ends at an event's closing brace, else
    at the end of the input). ``offset``: where it starts in the JSON (for messages)."""
    data = b"[" + part + (b"]" if closed else b"")
    try:
        return _decode_with_msgspec(data, path)
    except RecursionError:
        raise TraceError(path, "JSON nested too deeply to read (a value over 1,000 levels deep)") from None
    except EventsLost:
        raise
    except NothingRead as exc:  # the part's events are all unreadable: skipped, and said
        if b"\x00" in part:
            raise TraceError(path, f"not a trace: binary data from byte {offset}, not JSON") from None
        if exc.skipped:
            return Part([], [], [f"skipped {exc.skipped} unreadable events"], skipped=exc.skipped)
        return Part([], [], [f"skipped unreadable data at bytes {offset}-{offset + len(part)}"])
    except (TraceError, msgspec.MsgspecError):
        if b"\x00" in part:
            raise TraceError(path, f"not a trace: binary data from byte {offset}, not JSON") from None
        if count := repair.count_events(data):
            return Part([], [], [f"skipped {count} unreadable events"], skipped=count)
        return Part([], [], [f"skipped unreadable data at bytes {offset}-{offset + len(part)}"])


def _decode_with_msgspec(data: bytes, path: Path) -> Part:
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
    top = {key: decode_top_value(raw)[0] for key, raw in top_raw.items() if key != "traceEvents"}
    return Part(chunks, _args_of(events_json), repairs, form=form, top=top, top_keys=list(top_raw))


def _args_of(events_json: bytes | msgspec.Raw) -> list[bytes]:
    """Each event's args as written (b"": none)."""
    return [bytes(event.args) for event in RAW_ARGS_DECODER.decode(events_json)]


def _recover(data: bytes, form: str, error: str, path: Path) -> Part:
    """Decode broken JSON: cut at the last complete event of a cut file, or repair the broken
    tokens and decode again, or read event by event. ``error``: msgspec's message for the
    failed fast decode. Every way checks that it read as many events as the data holds."""
    start = repair.events_array_start(data, form, path)
    header = repair.header(data, start) if form == "object" else {}
    closer = b"}" if form == "object" else b"]"
    if "truncated" in error and not data.rstrip().endswith(closer):
        cut = repair.cut_at_last_complete_event(data, start)
        if cut is not None:
            events, events_json = cut
            _check_count(len(events), 0, repair.count_events(events_json), path)
            return Part([_columns_of(events)], _args_of(events_json), [], True, form, header, list(header))
    expected = repair.count_events(data, start)
    broken_at = _BYTE.search(error)  # a strict decoder's first refusal: the events before are whole
    at = int(broken_at.group(1)) if broken_at else -1
    # Broken before the events (a top-level key): the whole document is patched, header included.
    skip = repair.whole_events_before(data, start, at) if at > start else 0
    tail, fixes = repair.patch_known_defects(data[skip:] if skip else data)
    patched = data[:skip] + tail if fixes and skip else tail if fixes else data
    if fixes:
        try:
            decoded = decode_whole(patched, path)
        except TraceError:
            decoded = None
        if decoded is not None:
            _check_count(decoded.size + decoded.skipped, int(decoded.truncated), expected, path)
            decoded.repairs = fixes + decoded.repairs
            return decoded
    events, skipped, complete, events_json = repair.stream_events(patched, form)
    if not events:
        raise NothingRead(path, skipped)
    _check_count(len(events) + skipped, int(not complete), expected, path)
    repairs = [*fixes, *([f"skipped {skipped} unreadable events"] if skipped else [])]
    return Part(
        [_columns_of(events)],
        _args_of(events_json),
        repairs,
        not complete,
        form,
        header,
        list(header),
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


class NothingRead(TraceError):
    """Not one event could be read (``skipped``: how many were seen and skipped)."""

    def __init__(self, path: Path, skipped: int) -> None:
        super().__init__(path, "invalid JSON: no complete trace event could be read")
        self.skipped = skipped


class EventsLost(TraceError):
    """A repair would have lost events: an error, never a quiet load."""


def _check_count(read: int, cut: int, expected: int, path: Path) -> None:
    """Raise unless ``read`` events (decoded or reported as skipped) account for the
    ``expected`` events of the file, less ``cut`` (the last event of a cut file)."""
    if read < expected - cut:
        raise EventsLost(
            path,
            f"broken JSON that could not be repaired without losing events: read {read:,} of "
            f"the {expected:,} events in the file",
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


def decode_top_value(raw: msgspec.Raw | bytes) -> tuple[Any, list[str]]:
    """A top-level value the scanner kept as raw JSON, and the repairs it took: a value msgspec
    refuses (a lone surrogate in a key of ``deviceProperties``, say) is patched as a whole
    document's would be, so both readings give the same value and say the same; None when even
    that fails."""
    try:
        return clean_value(msgspec.json.decode(raw)), []
    except RecursionError:
        return None, []
    except msgspec.DecodeError:
        patched, fixes = repair.patch_known_defects(bytes(raw))
        if not fixes:
            return None, []
        try:
            return clean_value(msgspec.json.decode(patched)), fixes
        except (msgspec.DecodeError, RecursionError):
            return None, []
