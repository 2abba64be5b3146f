"""The scan on two cores: every other block is read by a second scanner from an event's start
after ``},`` and adopted only where the first scan ended exactly there, between events. The
tables, lanes, args and repairs are those of one scanner reading it all, wherever the blocks
and the candidate splits fall (inside strings, nested objects, damaged events, the end)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from tracetui.trace import native, stream
from tracetui.trace.decoded import Decoded

from .test_streaming import FIXTURES, REAL, assert_same_decoded, replicated

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the C extension is not built")


def read(data: bytes, block: int, split: bool) -> tuple[Decoded, int]:
    streamed = stream.read(Path("t.json"), iter([data]), block, None, split)
    return stream.finish(streamed), streamed.adopted


def assert_split_alike(data: bytes, blocks: tuple[int, ...]) -> int:
    """The split read equals the one-scanner read at each block size; the blocks adopted."""
    adopted = 0
    for block in blocks:
        alone, none = read(data, block, False)
        split, count = read(data, block, True)
        assert none == 0
        assert_same_decoded(split, alone)
        adopted += count
    return adopted


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_the_split_scan_reads_what_one_scanner_reads(path: Path) -> None:
    assert assert_split_alike(gzip.decompress(path.read_bytes()), (997, 4096, 65536)) > 0


def test_a_replicated_trace_is_mostly_read_by_both_scanners() -> None:
    data = replicated(FIXTURES / "mlp_train_eager_default.json.gz", 4)
    block = 16384
    pairs = len(data) // (2 * block)
    _, adopted = read(data, block, True)
    assert adopted >= pairs - 2
    assert_split_alike(data, (block,))


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
    decoded, _ = read(data, 311, True)
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
    decoded, _ = read(data, 401, True)
    assert len(decoded.lanes) == len({(str(e["pid"]), str(e["tid"])) for e in events})


def test_the_end_of_the_events_in_a_second_block() -> None:
    """A trailing comma, the array's end and the keys after it, wherever the blocks fall."""
    body = doc([event(i) for i in range(120)], ', "deviceProperties": [{"id": 0}, {"id": 1}], "x": 1')
    trailing = body.replace(b"}], ", b"}, ], ", 1)
    for data in (body, trailing):
        assert_split_alike(data, tuple(range(200, 1400, 53)))
    decoded, _ = read(trailing, 300, True)
    assert decoded.repairs == ["removed 1 trailing commas"]
    assert decoded.top["deviceProperties"] == [{"id": 0}, {"id": 1}]


def test_damaged_events_in_either_block_are_read_serially() -> None:
    events = [event(i) for i in range(200)]
    text = doc(events).decode()
    for i in (40, 41, 120, 199):
        text = text.replace(f'"ts": {i}, "dur": 1', f'"ts": {i}, "dur": NaN', 1)
    data = text.encode()
    assert_split_alike(data, tuple(range(300, 1500, 71)))
    decoded, _ = read(data, 300, True)
    assert decoded.events == 200 and decoded.tables["x"]["id"].to_list() == list(range(200))


def test_a_truncated_file_read_in_split_blocks() -> None:
    data = doc([event(i) for i in range(150)])
    cut = data[: len(data) * 2 // 3]
    alone, _ = read(cut, 0, False)
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
    itself = at(head + b", ")
    with pytest.raises(ValueError):
        itself.adopt(itself)
    with pytest.raises(TypeError):
        itself.adopt(1)
    with pytest.raises(ValueError):
        itself.resume_events()
