"""The scan on N cores: a run of N blocks is read in N parts, each after the first by a scanner of
its own from an event's start after ``},``, and adopted, in order, only where the scan before it
ended exactly there, between events. The tables, lanes, args and repairs are those of one
scanner reading it all, byte for byte, whatever N and wherever the blocks and the candidate
splits fall (inside strings, nested objects, damaged events, the end)."""

from __future__ import annotations

import ctypes
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from tracetui.trace import fields, native, stream
from tracetui.trace.args import ArgsBlocks
from tracetui.trace.decoded import Decoded
from tracetui.trace.frames import chunk_tables

from .test_streaming import DAMAGE, FIXTURES, REAL, assert_same_decoded, event_lines, replicated

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the C extension is not built")


WORKERS = (2, 3, 4)  # the scanners of a split read (1: one scanner reads it all)


class ArrowSchema(ctypes.Structure):
    pass


class ArrowArray(ctypes.Structure):
    pass


ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.POINTER(ArrowSchema)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]
ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.c_void_p),
    ("dictionary", ctypes.POINTER(ArrowArray)),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]
_POINTER = ctypes.pythonapi.PyCapsule_GetPointer
_POINTER.restype = ctypes.c_void_p
_POINTER.argtypes = [ctypes.py_object, ctypes.c_char_p]
WIDTH = {b"I": 4, b"l": 8, b"g": 8}


def array_bytes(schema: ArrowSchema, array: ArrowArray) -> Iterator[Any]:
    """Every byte an Arrow array of the scanner holds: validity, values or views and text, and
    its dictionary's (the dictionary's order and codes included)."""
    n, buffers, form = array.length, array.buffers, schema.format
    yield form, n, array.null_count
    yield ctypes.string_at(buffers[0], (n + 7) // 8) if buffers[0] else None
    if form == b"vu":
        yield ctypes.string_at(buffers[1], 16 * n)
        count = array.n_buffers - 3
        sizes = ctypes.cast(buffers[2 + count], ctypes.POINTER(ctypes.c_int64))
        yield [ctypes.string_at(buffers[2 + i], sizes[i]) for i in range(count)]
    else:
        yield ctypes.string_at(buffers[1], WIDTH[form] * n)
    if array.dictionary:
        yield list(array_bytes(schema.dictionary.contents, array.dictionary.contents))


def column_bytes(column: Any) -> list[Any] | None:
    if column is None:
        return None
    schema_capsule, array_capsule = column.__arrow_c_array__()
    schema = ctypes.cast(_POINTER(schema_capsule, b"arrow_schema"), ctypes.POINTER(ArrowSchema)).contents
    array = ctypes.cast(_POINTER(array_capsule, b"arrow_array"), ctypes.POINTER(ArrowArray)).contents
    return list(array_bytes(schema, array))


def segment_bytes(streamed: stream.Streamed) -> list[Any]:
    """Every byte of the scanned segments (a part msgspec decoded: its tables as frames)."""
    out: list[Any] = []
    for kind, segment in streamed.segments:
        if kind == "decoded":
            part, offset = segment
            out.append((offset, _frames(chunk_tables(part.chunks, offset)), part.repairs, part.truncated))
            continue
        for ids, lanes, columns, unsafe in segment:
            out.append((column_bytes(ids), column_bytes(lanes), [column_bytes(c) for c in columns], unsafe))
    return out


def _frames(tables: dict[str, pl.DataFrame]) -> list[Any]:
    return [(name, table.to_dicts()) for name, table in sorted(tables.items())]


def assert_same_bytes_whatever_the_scanners(data: bytes, blocks: tuple[int, ...]) -> int:
    """The reads by 2, 3 and 4 scanners hold the bytes one scanner's holds: every segment, the
    top-level keys, lanes, repairs and each event's raw args. The parts adopted."""
    adopted = 0
    for block in blocks:
        alone = stream.read(Path("t.json"), iter([data]), block, None, workers=1)
        expected = segment_bytes(alone)  # a column is exported once
        facts = _facts(alone)
        raw = ArgsBlocks.of(alone.args).raw(range(alone.args.events + 1))
        for workers in WORKERS:
            split = stream.read(Path("t.json"), iter([data]), block, None, workers=workers)
            assert segment_bytes(split) == expected, (block, workers)
            assert _facts(split) == facts
            assert ArgsBlocks.of(split.args).raw(range(split.args.events + 1)) == raw
            adopted += split.adopted
    return adopted


def _facts(streamed: stream.Streamed) -> tuple[Any, ...]:
    """What a read holds besides its segments: form, top-level keys, lanes, repairs, truncation."""
    s = streamed
    return (s.form, s.top, s.lanes, s.repairs, s.truncated, s.args.events)


def read(data: bytes, block: int, workers: int) -> tuple[Decoded, int]:
    streamed = stream.read(Path("t.json"), iter([data]), block, None, workers=workers)
    return stream.finish(streamed), streamed.adopted


def assert_split_alike(data: bytes, blocks: tuple[int, ...], workers: tuple[int, ...] = WORKERS) -> int:
    """The split reads equal the one-scanner read at each block size; the parts adopted."""
    adopted = 0
    for block in blocks:
        alone, none = read(data, block, 1)
        assert none == 0
        for count in workers:
            split, parts = read(data, block, count)
            assert_same_decoded(split, alone)
            adopted += parts
    return adopted


@pytest.mark.parametrize("name", ["mlp_train_eager_default.json.gz", "mlp_train_compiled.json.gz"])
def test_the_split_scan_gives_the_same_bytes(name: str) -> None:
    """Byte for byte: ids, lanes, validity, values, string views and their text, dictionaries in
    their order and codes, and which columns may need cleaning."""
    data = gzip.decompress((FIXTURES / name).read_bytes())
    for block in (1000, 8192):
        alone = stream.read(Path("t.json"), iter([data]), block, None, workers=1)
        expected = segment_bytes(alone)  # a column is exported once
        for workers in (1, *WORKERS):
            split = stream.read(Path("t.json"), iter([data]), block, None, workers=workers)
            assert (split.adopted > 0) == (workers > 1)
            assert segment_bytes(split) == expected
            assert (split.top, split.lanes, split.repairs) == (alone.top, alone.lanes, alone.repairs)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_every_fixture_gives_the_same_bytes_whatever_the_scanners(path: Path) -> None:
    data = gzip.decompress(path.read_bytes())
    adopted = assert_same_bytes_whatever_the_scanners(data, (997, 4096))
    assert adopted > 0 or len(data) < 3 * 4096


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damaged_inputs_give_the_same_bytes_whatever_the_scanners(kind: str) -> None:
    """Damaged events in any part: the part is read serially (msgspec decodes the damage) and
    the parts after it are split again, to the same bytes."""
    data = replicated(FIXTURES / "mlp_eager.json.gz", 3)
    spots = [at for at in event_lines(data) if data.startswith(b'"ph": "X"', at)]
    for at in sorted({spots[len(spots) // 5], spots[len(spots) // 2], spots[-3]}, reverse=True):
        end = data.index(b'"ph"', at + 1)
        data = data[:at] + DAMAGE[kind](data[at:end]) + data[end:]
    assert assert_same_bytes_whatever_the_scanners(data, (1500, 8192)) > 0
    truncated = data[: len(data) * 3 // 5]
    assert_same_bytes_whatever_the_scanners(truncated, (2048,))


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_the_split_scan_reads_what_one_scanner_reads(path: Path) -> None:
    assert assert_split_alike(gzip.decompress(path.read_bytes()), (997, 4096, 65536)) > 0


@pytest.mark.parametrize("workers", WORKERS)
def test_a_replicated_trace_is_mostly_read_by_every_scanner(workers: int) -> None:
    """Of each run of N blocks, the N - 1 parts after the first are adopted (but near the end)."""
    data = replicated(FIXTURES / "mlp_train_eager_default.json.gz", 4)
    block = 16384
    runs = len(data) // (workers * block)
    _, adopted = read(data, block, workers)
    assert adopted >= (workers - 1) * (runs - 1)
    assert_split_alike(data, (block,), (workers,))


def event(i: int, **extra: object) -> dict[str, object]:
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i % 7}", "pid": 1, "tid": 1, "ts": i, "dur": 1} | extra


def doc(events: list[dict[str, object]], tail: str = "") -> bytes:
    return (json.dumps({"traceEvents": events})[:-1] + tail + "}").encode()


def test_splits_inside_strings_and_nested_objects_are_not_taken() -> None:
    """Candidates inside an args string, or between objects of a nested list: the first scan
    does not end between events there, so the second scan is dropped and the serial read goes on."""
    fake = '}, {"ph": "X", "cat": "cpu_op", "name": "fake", "pid": 9, "tid": 9, "ts": 1, "dur": 1'
    events = [
        event(i, args={"note": fake * (1 + i % 3), "list": [{"a": i}, {"b": [{"c": 1}, {"d": 2}]}]})
        for i in range(300)
    ]
    data = doc(events)
    assert_split_alike(data, tuple(range(150, 2000, 97)))
    decoded, _ = read(data, 311, 3)
    assert decoded.tables["x"]["name"].cast(str).to_list() == [f"op{i % 7}" for i in range(300)]


def test_lanes_and_names_first_seen_by_the_second_scanner() -> None:
    """Lanes (string and number pids), short and long names and args text that appear first in
    later blocks take the numbers and codes one scanner gives them."""
    events = []
    for i in range(400):
        lane = i // 37
        pid: object = f"rank{lane % 3}" if lane % 2 else lane
        name = f"aten::op_{i // 23}" + ("_with_a_long_name" * (i % 2))
        args = {"Input Dims": [[i % 5, 3]], "Input type": ["float" * (1 + i % 4)], "stream": i % 3}
        events.append(event(i, pid=pid, tid=f"t{i // 51}", name=name, args=args))
    events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": "t0", "args": {"name": "main"}})
    data = doc(events)
    assert assert_split_alike(data, (401, 1024, 3000)) > 0
    decoded, _ = read(data, 401, 4)
    assert len(decoded.lanes) == len({(str(e["pid"]), str(e["tid"])) for e in events})


def test_the_end_of_the_events_in_a_second_block() -> None:
    """A trailing comma, the array's end and the keys after it, wherever the blocks fall."""
    body = doc([event(i) for i in range(120)], ', "deviceProperties": [{"id": 0}, {"id": 1}], "x": 1')
    trailing = body.replace(b"}], ", b"}, ], ", 1)
    for data in (body, trailing):
        assert_split_alike(data, tuple(range(200, 1400, 53)))
    decoded, _ = read(trailing, 300, 2)
    assert decoded.repairs == ["removed 1 trailing commas"]
    assert decoded.top["deviceProperties"] == [{"id": 0}, {"id": 1}]


def test_a_trailing_comma_counted_once_after_a_damaged_event() -> None:
    """The probes that find where a damaged part ends do not count the trailing comma again (they
    did, as often as they reached it: "removed 3 trailing commas" for one)."""
    text = doc([event(i) for i in range(6)]).decode().replace('"ts": 2, "dur": 1', '"ts": 2, "dur": NaN', 1)
    data = text.replace("}]}", "}, ]}", 1).encode()
    for block in (0, 1, 37, 200, 1 << 20):
        for workers in (1, *WORKERS):
            repairs = read(data, block, workers)[0].repairs
            assert [r for r in repairs if "comma" in r] == ["removed 1 trailing commas"]


def test_text_to_clean_only_in_the_second_blocks() -> None:
    """Escapes of control and bidi characters first met by the second scanner: the column is
    still flagged for cleaning (control characters replaced), and cleaned alike."""
    events = [event(i) for i in range(300)]
    for i in range(200, 300, 9):
        events[i]["name"] = f"op\x07{i}\u202e"
        events[i]["args"] = {"Input type": ["float\x00"]}
    data = doc(events)
    assert b"\\u0007" in data and b"\\u202e" in data
    assert assert_split_alike(data, (700, 2048)) > 0
    names = "".join(read(data, 700, 3)[0].tables["x"]["name"].cast(str).to_list())
    assert "\x07" not in names and "op\ufffd299\u202e" in names


def test_a_bare_event_array() -> None:
    """The legacy exporter's form: the whole document is the array."""
    data = json.dumps([event(i) for i in range(200)]).encode()
    assert assert_split_alike(data, (500, 1500)) > 0


@pytest.mark.parametrize("workers", WORKERS)
def test_an_error_in_another_scan_is_raised(monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    def broken(scanner: Any, pieces: list[bytes]) -> tuple[int, int, bytes]:
        raise MemoryError("the second scan ran out of memory")

    monkeypatch.setattr(stream, "_scan_part", broken)
    with pytest.raises(MemoryError, match="second scan"):
        read(doc([event(i) for i in range(200)]), 500, workers)


def test_what_follows_the_events_is_placed_alike_in_any_blocks() -> None:
    """The byte where ignored trailing data starts is its first byte, not the whitespace before
    it (which a block boundary may or may not have consumed already)."""
    data = doc([event(i) for i in range(40)], ', "x": 1') + b"  \n garbage"
    at = data.index(b"garbage")
    for block in (0, 1, 7, 64, *range(len(data) - 12, len(data))):
        for workers in (1, *WORKERS):
            repairs = read(data, block, workers)[0].repairs
            assert repairs == [f"ignored what follows the events (trailing data at byte {at})"], block


def test_damaged_events_in_either_block_are_read_serially() -> None:
    events = [event(i) for i in range(200)]
    text = doc(events).decode()
    for i in (40, 41, 120, 199):
        text = text.replace(f'"ts": {i}, "dur": 1', f'"ts": {i}, "dur": NaN', 1)
    data = text.encode()
    assert_split_alike(data, tuple(range(300, 1500, 71)))
    decoded, _ = read(data, 300, 4)
    assert decoded.events == 200 and decoded.tables["x"]["id"].to_list() == list(range(200))


def test_a_truncated_file_read_in_split_blocks() -> None:
    data = doc([event(i) for i in range(150)])
    cut = data[: len(data) * 2 // 3]
    alone, _ = read(cut, 0, 1)
    assert alone.truncated
    assert_split_alike(cut, (128, 555, 2048))


EVENT = b'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 1, "dur": 1, "args": {"k": 1}}'


def test_adopt_appends_only_what_follows_a_comma() -> None:
    first, later = native.scanner(), native.scanner()
    later.resume_events()
    assert later.feed(EVENT + b", " + EVENT + b",", False)[0] == native.MORE
    assert later.take_args() == b'{"k": 1}{"k": 1}'
    assert first.feed(b'{"traceEvents": [' + EVENT + b", ", False) == (native.MORE, len(EVENT) + 19, None)
    first.take_args()
    assert first.adopt(later) is True
    assert first.events == 3
    assert first.feed(EVENT + b"]}", True)[0] == native.DONE
    ids, lanes, _, _ = first.flush()[0]
    assert pl.Series(ids).to_list() == [0, 1, 2, 3] and pl.Series(lanes).to_list() == [0] * 4


def test_adopt_refuses_what_does_not_fit() -> None:
    """The scanner's side of the check (the reader checks that the first read used all it was
    given, so that it stopped where the other began)."""

    def resumed(text: bytes, take: bool = True) -> object:
        made = native.scanner()
        made.resume_events()
        made.feed(text, False)
        if take:
            made.take_args()
        return made

    def at(text: bytes) -> object:
        made = native.scanner()
        made.feed(text, False)
        made.take_args()
        return made

    head = b'{"traceEvents": [' + EVENT
    assert at(head + b", ").adopt(resumed(EVENT)) is True
    assert at(head).adopt(resumed(EVENT)) is False  # not after a comma
    assert at(head + b", ").adopt(at(head + b", ")) is False  # the other did not resume
    assert at(head + b", ").adopt(resumed(EVENT, take=False)) is False  # its args not taken
    assert at(head + b", ").adopt(resumed(EVENT + b"]}")) is False  # it read past the events
    finished = resumed(EVENT)
    finished.finish()
    flushed = resumed(EVENT)
    flushed.flush()
    laned = resumed(EVENT)
    laned.add_lane(b"7", b"7")
    for spent in (finished, flushed, laned):
        assert at(head + b", ").adopt(spent) is False
    twice, target = resumed(EVENT + b", "), at(head + b", ")
    assert target.adopt(twice) is True
    assert target.adopt(twice) is False and target.events == 2

    spec: list[Any] = list(fields.scan_spec())
    spec[0] = [(key, 4 if kind == 0 else kind, in_args) for key, kind, in_args in spec[0]]  # text as int
    unlike = type(native.scanner())(tuple(spec))  # the extension's Scanner
    unlike.resume_events()
    unlike.feed(EVENT.replace(b'"a"', b"1"), False)
    unlike.take_args()
    assert at(head + b", ").adopt(unlike) is False  # made from another spec

    itself = at(head + b", ")
    with pytest.raises(ValueError):
        itself.adopt(itself)
    with pytest.raises(TypeError):
        itself.adopt(1)
    with pytest.raises(ValueError):
        itself.resume_events()


def test_the_scanners_are_the_workers_up_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """``TRACETUI_WORKERS`` (else the cores), never past :data:`stream.MAX_SCANNERS`: each scanner
    holds two blocks in flight."""
    monkeypatch.setenv("TRACETUI_WORKERS", "3")
    assert stream.scanners_for() == 3
    assert stream.scanners_for(1) == 1
    assert stream.scanners_for(1000) == stream.MAX_SCANNERS
    monkeypatch.setenv("TRACETUI_WORKERS", "1000")
    assert stream.scanners_for() == stream.MAX_SCANNERS
    data = replicated(FIXTURES / "mlp_train_eager_default.json.gz", 2)
    alone, _ = read(data, 4096, 1)
    assert_same_decoded(read(data, 4096, 1000)[0], alone)
