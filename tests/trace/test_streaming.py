"""The streaming load: read in blocks of any size, it gives exactly what a one-shot read gives,
for well-formed traces, replicated ones and damaged ones (the damaged part decoded by msgspec)."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import tracetui
from tests.hypothesis_budget import examples
from tracetui.errors import TraceError
from tracetui.trace import native, source, stream
from tracetui.trace.decoded import Decoded
from tracetui.trace.layout import MODEL_TABLES

FIXTURES = Path(__file__).parent.parent / "fixtures"
REAL = sorted(FIXTURES.glob("*.json.gz"))
BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the C extension is not built")


def json_of(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


def replicated(path: Path, copies: int) -> bytes:
    """``benchmarks/make_big_trace.py``'s replication of a trace, in memory."""
    spec = importlib.util.spec_from_file_location("make_big_trace", BENCHMARKS / "make_big_trace.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    head, events, tail = module.split(json_of(path))
    templates, shift = module.plan(events)
    return head + b"".join(module.copies(templates, shift, copies)) + tail


def assert_same_decoded(a: Decoded, b: Decoded) -> None:
    assert a.tables.keys() == b.tables.keys()
    for name in a.tables:
        assert_frame_equal(a.tables[name], b.tables[name], check_row_order=True), name
    assert_frame_equal(a.lanes, b.lanes)
    assert (a.top, a.top_keys, a.form) == (b.top, b.top_keys, b.form)
    assert (a.truncated, a.repairs, a.decoder, a.events) == (b.truncated, b.repairs, b.decoder, b.events)
    ids = range(a.events + 2)
    assert [bytes(r) for r in a.args.raw(ids)] == [bytes(r) for r in b.args.raw(ids)]


def decode(data: bytes, block: int) -> Decoded:
    return stream.decode(data, Path("t.json"), block)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_every_block_size_reads_the_same_tables(path: Path) -> None:
    data = json_of(path)
    whole = decode(data, 0)
    for block in (7, 61, 1000, 65536):
        assert_same_decoded(decode(data, block), whole)


def test_one_byte_blocks() -> None:
    data = json_of(FIXTURES / "linear_eager.json.gz")
    assert_same_decoded(decode(data, 1), decode(data, 0))


def load_in_blocks(path: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> tracetui.Trace:
    with monkeypatch.context() as patch:
        patch.setattr(source, "BLOCK", block)
        patch.setattr(source, "READ", max(1, block // 3))
        return tracetui.load(path)


def assert_same_model(a: tracetui.Trace, b: tracetui.Trace) -> None:
    for name in MODEL_TABLES:
        assert_frame_equal(getattr(a, name), getattr(b, name), check_row_order=True)
    for name in ("ops", "kernels", "runtime", "annotations", "steps", "launch_shapes"):
        assert_frame_equal(getattr(a, name), getattr(b, name))
    assert (a.metadata, a.format, a.repairs, a.truncated, a.reader) == (
        b.metadata,
        b.format,
        b.repairs,
        b.truncated,
        b.reader,
    )
    assert_frame_equal(a.args_json().to_frame(), b.args_json().to_frame())


def test_a_replicated_trace_loads_alike_in_any_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "replicated.json.gz"
    path.write_bytes(gzip.compress(replicated(FIXTURES / "mlp_train_eager_default.json.gz", 4), 1))
    whole = load_in_blocks(path, 1 << 30, monkeypatch)
    assert len(whole.steps) == 4 * len(tracetui.load(FIXTURES / "mlp_train_eager_default.json.gz").steps)
    for block in (97, 4096, 100_000):
        assert_same_model(load_in_blocks(path, block, monkeypatch), whole)


def event_lines(data: bytes) -> list[int]:
    """Offsets of the events' '"ph"' keys in a Kineto file (one per event)."""
    out, at = [], data.find(b'"ph"')
    while at >= 0:
        out.append(at)
        at = data.find(b'"ph"', at + 1)
    return out


def _dur_inf(event: bytes) -> bytes:
    start = event.index(b'"dur": ') + 7
    return event[:start] + b'"inf"' + event[event.index(b",", start) :]


DAMAGE = {  # a damage of one event (the text from its '"ph"' to the next event's)
    "a string where a number belongs": _dur_inf,
    "NaN": lambda e: e.replace(b'"ph": "X"', b'"ph": "X", "x": NaN', 1),
    "a raw control character": lambda e: e.replace(b'"name": "', b'"name": "\x01', 1),
    "a trailing comma in an object": lambda e: e.replace(b'"ph": "X"', b'"ph": "X", "x": [1,]', 1),
    "a bool where a number belongs": lambda e: e.replace(b'"ph": "X"', b'"ph": "X", "cbid": true', 1),
    "an item that is not an event": lambda e: e.replace(b"},", b"}, 7,", 1),
    "an unknown defect": lambda e: e.replace(b'"ph": "X"', b'"ph": "X",, "x": 1', 1),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damaged_parts_are_decoded_alike_in_any_blocks(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three complete events damaged far apart in a replicated trace: each part is decoded by
    msgspec (or skipped, and said) and the scan resumes after it, wherever the blocks end."""
    data = replicated(FIXTURES / "mlp_eager.json.gz", 3)
    spots = [at for at in event_lines(data) if data.startswith(b'"ph": "X"', at)]
    for at in sorted({spots[len(spots) // 5], spots[len(spots) // 2], spots[-3]}, reverse=True):
        end = data.index(b'"ph"', at + 1)
        data = data[:at] + DAMAGE[kind](data[at:end]) + data[end:]
    path = tmp_path / "damaged.json"
    path.write_bytes(data)
    whole = load_in_blocks(path, 1 << 30, monkeypatch)
    assert whole.reader.startswith("native")
    if kind == "an unknown defect":  # repaired where it stands, or skipped; said either way
        assert whole.repairs and whole.event_count <= len(event_lines(data))
    else:
        assert whole.event_count == len(event_lines(data))
    for block in (53, 4096):
        assert_same_model(load_in_blocks(path, block, monkeypatch), whole)


def test_a_damaged_part_keeps_the_events_around_it() -> None:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i in range(9)
    ]
    text = json.dumps({"traceEvents": events}).replace('"name": "op4"', '"name": "op4", "dur": NaN', 1)
    decoded = decode(text.encode(), 0)
    names = decoded.tables["x"]["name"].to_list()
    assert names == [f"op{i}" for i in range(9)] and decoded.decoder == "native"
    assert decoded.tables["x"]["id"].to_list() == list(range(9))


MLP = json_of(FIXTURES / "mlp_eager.json.gz")


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """The MLP trace with a few bytes flipped, inserted or deleted."""
    data = bytearray(MLP)
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["flip", "insert", "delete"]))
        byte = draw(st.sampled_from(b'"\\{}[],:0-.eu \x01\x7f\xc2\xe2\xff'))
        if action == "flip":
            data[pos] = byte
        elif action == "insert":
            data[pos:pos] = bytes([byte])
        else:
            del data[pos : pos + draw(st.integers(1, 30))]
    return bytes(data)


def outcome(data: bytes, block: int, workers: int = 1) -> Any:
    try:
        return stream.decode(data, Path("t.json"), block, workers)
    except TraceError as exc:
        return str(exc)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged(), st.sampled_from([1 << 10, 4099, 20_000]), st.sampled_from([1, 2, 3, 4]))
def test_damaged_bytes_read_alike_in_any_blocks(data: bytes, block: int, workers: int) -> None:
    """In any blocks, by any number of scanners (their parts split a run of blocks)."""
    whole, split = outcome(data, 0), outcome(data, block, workers)
    if isinstance(whole, str) or isinstance(split, str):
        assert whole == split
    else:
        assert_same_decoded(split, whole)


def test_top_level_keys_after_the_events_are_read() -> None:
    """PyTorch 2.4-2.7 write baseTimeNanoseconds after traceEvents; on-demand traces distributedInfo."""
    doc = b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}], '
    doc += b'"baseTimeNanoseconds": 1700000000000000000, "distributedInfo": {"rank": 3}}'
    for block in (0, 1, 5):
        decoded = decode(doc, block)
        assert decoded.top == {
            "schemaVersion": 1,
            "baseTimeNanoseconds": 1700000000000000000,
            "distributedInfo": {"rank": 3},
        }
        assert decoded.top_keys == ["schemaVersion", "traceEvents", "baseTimeNanoseconds", "distributedInfo"]
