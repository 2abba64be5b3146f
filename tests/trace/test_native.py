"""The native decoder (C scanner) against the msgspec path: same tables, or a refusal.

The scanner is a fast path: it must either build exactly what the msgspec decoder builds, or
refuse (and then the msgspec path, with its repairs and coercions, does the work).
"""

from __future__ import annotations

import gzip
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import tracetui
import tracetui.settings
from tests.hypothesis_budget import examples
from tracetui.errors import TraceError
from tracetui.trace import native, prefetch
from tracetui.trace.layout import MODEL_TABLES
from tracetui.trace.loader import load_now

FIXTURES = Path(__file__).parent.parent / "fixtures"
REAL = sorted(p.name for p in FIXTURES.glob("*.json.gz"))
# .ci/sanitize multiplies the generated examples: a short fuzz of the scanner under ASan and UBSan.
FUZZ_SCALE = tracetui.settings.FUZZ_SCALE.value()
FACTS = ("metadata", "format", "truncated", "repairs", "other_phases", "event_count")


@contextmanager
def msgspec_only() -> Iterator[None]:
    """Loads as without the extension: msgspec decodes every document whole."""
    with patch.object(native, "scanner", lambda: None):
        yield


def refusal(data: bytes) -> str | None:
    """Why the native scanner does not read ``data`` through (None: it does)."""
    scanner = native.scanner()
    status, _, why = scanner.feed(data, True)
    if status == native.DONE and not scanner.trailing_commas:
        return None
    return why or ("truncated" if status == native.TRUNCATED else "trailing comma")


def assert_same(fast: tracetui.Trace, slow: tracetui.Trace) -> None:
    for name in MODEL_TABLES:
        assert_frame_equal(getattr(fast, name), getattr(slow, name), check_row_order=True)
    for name in FACTS:
        assert getattr(fast, name) == getattr(slow, name), name
    ids = range(fast.event_count + 2)  # and two ids past the end: no args
    assert [bytes(r) for r in fast.raw_args.raw(ids)] == [bytes(r) for r in slow.raw_args.raw(ids)]
    assert_frame_equal(fast.shapes(), slow.shapes())
    assert_frame_equal(fast.launch_shapes, slow.launch_shapes)


def both(path: Path) -> tuple[tracetui.Trace, tracetui.Trace]:
    fast = tracetui.load(path)
    with msgspec_only():
        slow = tracetui.load(path)
    return fast, slow


def write(doc: Any, directory: str, name: str = "t.json") -> Path:
    path = Path(directory) / name
    path.write_text(json.dumps(doc, ensure_ascii=False) if not isinstance(doc, str) else doc)
    return path


def test_the_native_decoder_is_built() -> None:
    # pip builds it from tracetui/trace/_scan.c; without it every load takes the slow path.
    assert native.AVAILABLE


@pytest.mark.parametrize("name", REAL)
def test_real_traces_give_the_same_model_on_both_paths(name: str) -> None:
    fast, slow = both(FIXTURES / name)
    assert (fast.reader, slow.reader) == ("native", "msgspec"), "the real trace took the fast path"
    assert_same(fast, slow)


EVENT = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10.5, "dur": 2.25}


def doc_with(*events: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, **top, "traceEvents": list(events)}


ACCEPTED = {
    "escapes and unicode in names": dict(EVENT, name='a\\"b\n\t\u00e9\u4e2d\U0001f600/'),
    "control and bidi characters (cleaned)": dict(EVENT, name="x\x1b[31m\x7f\x85\u202ey"),
    "markup stays text": dict(EVENT, name="[bold red]x[/] [@click=app.quit]"),
    "string pid and tid": dict(EVENT, pid="Spans", tid=""),
    "empty strings first": dict(EVENT, ph="X", cat="", name="", pid="", args={"labels": ""}),
    "negative and big ids": dict(EVENT, pid=-3, tid=2**63 - 1),
    "exponents and long fractions": dict(EVENT, ts=1.5e3, dur=0.1234567890123456789),
    "numbers at the edges of float64": dict(EVENT, ts=2.2250738585072011e-308, dur=1.7976931348623157e308),
    "17 significant digits and big integers as floats": dict(
        EVENT, ts=0.30000000000000004, dur=123456789012345678, args={"occupancy": 5e-324}
    ),
    "negative zero": dict(EVENT, ts=-0.0, dur=0),
    "epoch microseconds": dict(EVENT, ts=1700000000123456, dur=17),
    "no phase": {k: v for k, v in EVENT.items() if k != "ph"},
    "null category and name": dict(EVENT, cat=None, name=None),
    "null args values": dict(EVENT, args={"External id": None, "Input Dims": [[2, 3]], "x": {"y": [1]}}),
    "unknown fields": dict(EVENT, cname="good", tts=3, extra={"a": [True, False, None]}),
    "kernel args": dict(
        EVENT, cat="kernel", args={"correlation": 7, "grid": [1, 2, 3], "block": None, "occupancy": 5}
    ),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted_edge_cases_match_the_msgspec_path(case: str) -> None:
    events = [ACCEPTED[case], dict(EVENT, ts=11.0, dur=0.5, name="aten::t")]
    with tempfile.TemporaryDirectory() as tmp:
        path = write(doc_with(*events), tmp)
        assert refusal(path.read_bytes()) is None
        assert_same(*both(path))


def test_a_bare_array_and_an_empty_trace_match_too() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for doc in ([EVENT, dict(EVENT, ph="i", s="t")], doc_with(), doc_with(EVENT, baseTimeNanoseconds=5)):
            path = write(doc, tmp)
            assert refusal(path.read_bytes()) is None
            assert_same(*both(path))


REFUSED = {
    "trailing comma": '{"traceEvents": [{"ph": "X"},]}',
    "truncated": '{"traceEvents": [{"ph": "X", "name": "a"}, {"ph": "X", "na',
    "raw control character": '{"traceEvents": [{"ph": "X", "name": "a\tb"}]}',
    "invalid UTF-8": b'{"traceEvents": [{"ph": "X", "name": "a\xff"}]}',
    "lone surrogate": '{"traceEvents": [{"ph": "X", "name": "\\ud800"}]}',
    "inf as a string": '{"traceEvents": [{"ph": "X", "dur": "inf"}]}',
    "bool where a number belongs": '{"traceEvents": [{"ph": "X", "args": {"correlation": true}}]}',
    "fraction where an integer belongs": '{"traceEvents": [{"ph": "X", "args": {"stream": 7.5}}]}',
    "integer beyond 64 bits": '{"traceEvents": [{"ph": "X", "pid": 18446744073709551616}]}',
    "number as a name": '{"traceEvents": [{"ph": "X", "name": 5}]}',
    "duplicate key": '{"traceEvents": [{"ph": "X", "ts": 1, "ts": 2}]}',
    "args not an object": '{"traceEvents": [{"ph": "X", "args": null}]}',
    "event not an object": '{"traceEvents": [1]}',
    "no traceEvents": '{"a": 1}',
    "traceEvents not a list": '{"traceEvents": {}}',
    "trailing data": '{"traceEvents": []} x',
    "leading zero": '{"traceEvents": [{"ph": "X", "ts": 01}]}',
    "null phase": '{"traceEvents": [{"ph": null}]}',
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unusual_input_is_refused_with_a_reason(case: str) -> None:
    data = REFUSED[case]
    assert refusal(data if isinstance(data, bytes) else data.encode())


def test_refused_traces_still_load_through_msgspec() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write('{"traceEvents": [{"ph": "X", "name": "n", "ts": 1, "dur": 1, "x": [1,]}]}', tmp)
        assert refusal(path.read_bytes())
        trace = tracetui.load(path)  # the event msgspec could not decode is patched, then decoded
        assert trace.repairs == ["removed 1 trailing commas"]
        assert trace.events["name"].to_list() == ["n"]


def test_the_trace_says_which_decoder_read_it() -> None:
    fast, slow = both(FIXTURES / "mlp_eager.json.gz")
    assert (fast.reader, slow.reader) == ("native", "msgspec")
    with tempfile.TemporaryDirectory() as tmp:
        comma = write('{"traceEvents": [{"ph": "X", "name": "n", "ts": 1, "dur": 1},]}', tmp, "comma.json")
        cut = write('{"traceEvents": [{"ph": "X", "name": "n", "ts": 1}, {"ph": "X"', tmp, "cut.json")
        odd = write(doc_with(EVENT, 7), tmp, "odd.json")  # an item that is not an event: coerced
        header = write('{"a": NaN, "traceEvents": [{"ph": "X"}]}', tmp, "header.json")  # read whole
        assert tracetui.load(comma).reader == "native (repairs)"  # the trailing comma is skipped
        assert tracetui.load(cut).reader == "native (repairs)"  # every complete event kept
        assert tracetui.load(odd).reader == "native (repairs)"  # the odd item decoded by msgspec
        assert tracetui.load(header).reader.startswith("msgspec")
        with msgspec_only():
            assert tracetui.load(comma).reader == "msgspec (repairs)"


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
INT64 = st.integers(-(2**63), 2**63 - 1)
NUMBER = st.one_of(INT64, st.floats(allow_nan=False, allow_infinity=False))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | NUMBER | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
# Any value of any type: where the field has another type, the scanner refuses the document.
WILD = st.one_of(
    st.none(), TEXT, st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.booleans(), st.just([1])
)
# Values of the types each field has in real traces (edge cases included), so that most generated
# documents are accepted and compared field by field with the msgspec path.
FIELD_VALUES = {
    "ph": st.sampled_from(["X", "i", "I", "M", "f", "s", "t", "B", "E", "C", ""]),
    "cat": st.none() | st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "gpu_memcpy", "Operator"]) | TEXT,
    "name": st.none() | TEXT,
    "pid": st.none() | INT64 | TEXT,
    "tid": st.none() | INT64 | TEXT,
    "ts": st.none() | NUMBER,
    "dur": st.none() | NUMBER,
    "id": st.none() | INT64 | TEXT,
    "bp": st.none() | TEXT,
    "s": st.none() | TEXT,
    "extra": JSON,
}
ARG_VALUES = {
    "correlation": st.none() | INT64,
    "External id": st.none() | INT64,
    "stream": st.none() | INT64,
    "grid": JSON,
    "Input Dims": JSON,
    "name": st.none() | TEXT,
    "labels": st.none() | TEXT,
    "occupancy": st.none() | NUMBER,
}


def value_for(draw: st.DrawFn, typed: st.SearchStrategy[Any]) -> Any:
    """Mostly a value of the field's own type; one in 25 of any type."""
    return draw(WILD if draw(st.integers(0, 24)) == 0 else typed)


@st.composite
def documents(draw: st.DrawFn) -> list[dict[str, Any]]:
    events = []
    for _ in range(draw(st.integers(0, 6))):
        event = dict(EVENT, ph=draw(st.sampled_from(["X", "i", "M", "f", "s", "B"])))
        event["cat"] = draw(st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "Operator", None]))
        for key in draw(st.lists(st.sampled_from(sorted(FIELD_VALUES)), max_size=3)):
            event[key] = value_for(draw, FIELD_VALUES[key])
        if draw(st.booleans()):
            keys = draw(st.lists(st.sampled_from(sorted(ARG_VALUES)), max_size=3))
            event["args"] = {k: value_for(draw, ARG_VALUES[k]) for k in keys}
        events.append(event)
    return events


@settings(
    max_examples=examples(150) * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(documents())
def test_generated_traces_match_or_are_refused(events: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write(doc_with(*events), tmp)
        try:
            slow = None
            with msgspec_only():
                slow = tracetui.load(path)
        except TraceError:
            pass
        if refusal(path.read_bytes()):
            return
        assert slow is not None, "the scanner accepted what the msgspec path rejects"
        assert_same(tracetui.load(path), slow)


def test_a_load_started_early_is_taken_once_with_its_progress() -> None:
    path = FIXTURES / "mlp_eager.json.gz"
    prefetch.start(path)
    stages: list[str] = []
    early = prefetch.take(path, stages.append)
    assert early is not None and early.reader == "native"
    assert stages == ["reading", "decoding", "tabulating", "nesting", "linking", "counting"]
    assert prefetch.take(path) is None
    assert_same(early, load_now(path))
    prefetch.start(path)
    assert_same(tracetui.load(path), load_now(path))  # load waits for the early one


def test_an_early_load_of_bad_input_raises_in_load() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bad = write("not json", tmp)
        prefetch.start(bad)
        prefetch.start(Path(tmp) / "missing.json")
        with pytest.raises(TraceError, match="not JSON"):
            tracetui.load(bad)
        with pytest.raises(TraceError, match="no such file"):
            tracetui.load(Path(tmp) / "missing.json")


def test_gzip_and_text_give_the_same_columns() -> None:
    data = gzip.decompress((FIXTURES / "cuda_graph_replay.json.gz").read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plain.json"
        path.write_bytes(data)
        assert_same(tracetui.load(path), tracetui.load(FIXTURES / "cuda_graph_replay.json.gz"))


MLP_BYTES = gzip.decompress((FIXTURES / "mlp_eager.json.gz").read_bytes())


DIGITS = b"0123456789"
LETTERS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# What replaces one byte of a number or of a word: a digit, or a letter or escape in a string.
IN_NUMBERS = [bytes([d]) for d in DIGITS]
IN_WORDS = [bytes([c]) for c in LETTERS] + ["é".encode(), "中".encode(), rb"\n", rb"\u00e9", rb"\ud83d\ude00"]


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """The MLP trace with a few bytes changed. Three in four keep it valid JSON most of the time
    (a digit for a digit, a letter for a letter or an escape), so that the scanner accepts it and
    its reading is compared with msgspec's; the rest are flipped, inserted or deleted bytes."""
    data = bytearray(MLP_BYTES)
    values_only = draw(st.integers(0, 3)) > 0
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(data) - 1))
        if values_only:
            kind, replacements = draw(st.sampled_from([(DIGITS, IN_NUMBERS), (LETTERS, IN_WORDS)]))
            while pos < len(data) - 1 and data[pos] not in kind:
                pos += 1
            data[pos : pos + 1] = draw(st.sampled_from(replacements))
            continue
        action = draw(st.sampled_from(["flip", "insert", "delete"]))
        byte = draw(st.sampled_from(b'"\\{}[],:0-.eu \x00\x7f\xc2\xe2\xff'))
        if action == "flip":
            data[pos] = byte
        elif action == "insert":
            data[pos:pos] = bytes([byte])
        else:
            del data[pos : pos + draw(st.integers(1, 30))]
    return bytes(data)


@settings(max_examples=examples(60) * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged())
def test_damaged_bytes_are_refused_or_read_like_msgspec(data: bytes) -> None:
    if refusal(data):
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "damaged.json"
        path.write_bytes(data)
        with msgspec_only():
            slow = tracetui.load(path)
        assert not slow.truncated, "the scanner accepted a document msgspec found cut"
        # what msgspec had to repair (a top-level value the scanner keeps raw) the scanner's reading
        # repaired alike, and says so alike
        fast = tracetui.load(path)
        assert fast.repairs == slow.repairs
        assert_same(fast, slow)


def test_a_lone_surrogate_before_the_events_is_repaired_alike_by_both_readings() -> None:
    """Found by the damaged-bytes property test: a key of ``deviceProperties`` with a lone
    surrogate. The scanner skips it, msgspec refuses it: the top level was lost silently on one
    side and the events re-encoded (``[2,66,1]`` for ``[2, 66, 1]``) on the other."""
    data = MLP_BYTES.replace(b'"name"', b'"n\\ud03d\\ude00e"', 1)
    with tempfile.TemporaryDirectory() as tmp:
        fast, slow = both(write(data.decode(), tmp))
    assert fast.repairs == slow.repairs == ["replaced 1 lone surrogates with U+FFFD"]
    assert_same(fast, slow)
    grids = [bytes(r) for r in fast.raw_args.raw(range(fast.event_count)) if b'"grid"' in bytes(r)]
    assert grids and all(b'"grid": [' in g for g in grids)  # the args as written


@pytest.mark.parametrize(
    ("strategy", "document", "least"),
    [
        (documents(), lambda events: json.dumps(doc_with(*events), ensure_ascii=False).encode(), 0.7),
        (damaged(), lambda data: data, 0.5),
    ],
    ids=["generated", "damaged"],
)
def test_the_scanner_strategies_mostly_make_accepted_documents(
    strategy: st.SearchStrategy[Any], document: Any, least: float
) -> None:
    """A refused document only checks that the scanner refuses, so the two property tests above
    compare with msgspec only as often as their strategies make documents the scanner accepts."""
    accepted: list[bool] = []

    @settings(max_examples=200, derandomize=True, database=None, deadline=None)
    @given(strategy)
    def draw(value: Any) -> None:
        accepted.append(refusal(document(value)) is None)

    draw()
    assert len(accepted) >= 100
    assert sum(accepted) / len(accepted) >= least, f"{sum(accepted)} of {len(accepted)} accepted"
