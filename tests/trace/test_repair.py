"""Broken JSON: each broken token is repaired where it stands, in every layout, and no event is
lost on the way (issue 12, items 1 and 2).

Before: in a one-line file (Python's ``json.dump`` layout) the name-repair regex swallowed the
whole line, and a NaN, a raw control character or invalid UTF-8 loaded 1 of 249 events with
exit 0; a lone surrogate (``"\\ud800"``) made the trace unreadable (exit 3).
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any
from unittest.mock import patch

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracetui
from tests.hypothesis_budget import examples
from tests.trace.corrupt import CORRUPTIONS, LAYOUTS, REPAIRABLE, corrupt, document, event_text
from tests.trace.synth import kernel, launch, mlp_like, op, trace_doc
from tests.trace.test_native import msgspec_only
from tracetui.errors import TraceError
from tracetui.trace import repair
from tracetui.trace.categories import GPU_WORK

FIXTURES = Path(__file__).parent.parent / "fixtures"
RAW = ["id", "ph", "cat", "name", "pid", "tid", "ts", "dur"]


@cache
def fixture(name: str = "mlp_eager") -> dict[str, Any]:
    return json.loads(gzip.decompress((FIXTURES / f"{name}.json.gz").read_bytes()))


def load_bytes(tmp_path: Path, data: bytes, name: str = "t.json") -> tracetui.Trace:
    path = tmp_path / name
    path.write_bytes(data)
    return tracetui.load(path)


def raw_rows(trace: tracetui.Trace) -> pl.DataFrame:
    return pl.concat(
        [  # the events' text is dictionary-encoded, the instants' is not
            trace.events.select(*RAW[:1], *RAW[2:]).with_columns(pl.col(pl.Categorical).cast(pl.String)),
            trace.instants.select(*RAW[:1], *RAW[2:-1]),
        ],
        how="diagonal",
    )


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("kind", REPAIRABLE)
def test_one_broken_token_is_repaired_in_place_in_every_layout(
    tmp_path: Path, layout: str, kind: str
) -> None:
    doc = fixture()
    events = doc["traceEvents"]
    clean = load_bytes(tmp_path, document(doc, layout), "clean.json")
    index = next(i for i in range(len(events) // 2, len(events)) if events[i].get("cat") == "kernel")
    text = event_text(events[index], layout)
    if kind in ("NaN", "Infinity", "-Infinity", "1e400"):  # a field every reader reads
        broken = re.sub(rb'("dur": ?)[0-9.]+', rb"\g<1>" + kind.encode(), text)
    else:
        broken = corrupt(text, kind, lambda n: n // 2)
    assert broken is not None and broken != text
    trace = load_bytes(tmp_path, document(doc, layout, {index: broken}))
    assert trace.event_count == clean.event_count == len(events)
    assert trace.repairs, "a repair is always reported"
    assert trace.kernels.height == clean.kernels.height
    # every other event is read exactly as in the clean file; this one too when only the JSON
    # around its values was broken
    others = pl.col("id") != index if kind not in ("comma", "control between") else pl.lit(True)
    assert raw_rows(trace).filter(others).equals(raw_rows(clean).filter(others))
    assert len(trace.event_args(index)) == len(events[index]["args"])


def test_a_compact_trace_with_nan_loads_every_event_with_null(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(fixture()))
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    kernels[1]["dur"] = float("nan")
    kernels[2]["args"]["blocks per SM"] = float("inf")
    path = tmp_path / "nan.json"
    with path.open("w") as handle:
        json.dump(doc, handle)  # one line; NaN and Infinity as Python writes them
    trace = tracetui.load(path)
    assert trace.event_count == len(doc["traceEvents"])
    assert trace.gpu.height == sum(e.get("cat") in GPU_WORK for e in doc["traceEvents"])
    assert "replaced 2 NaN/Infinity values with null" in trace.repairs
    assert trace.gpu.filter(pl.col("dur").is_null()).height == 1


@pytest.mark.parametrize("path_kind", ["native", "msgspec"])
def test_a_lone_surrogate_becomes_a_replacement_character(tmp_path: Path, path_kind: str) -> None:
    events = mlp_like()
    events[2]["name"] = "aten::lin\ud800ear"  # json.dumps writes it as the escape \ud800
    events[3]["name"] = "low \udc00 then pair \ud83d\ude00"
    data = json.dumps(trace_doc(events)).encode()
    assert b"\\ud800" in data
    if path_kind == "native":
        trace = load_bytes(tmp_path, data)
    else:
        with msgspec_only():
            trace = load_bytes(tmp_path, data)
    names = trace.events["name"].to_list()
    assert "aten::lin\ufffdear" in names and "low \ufffd then pair \U0001f600" in names
    assert trace.event_count == len(events) and trace.gpu.height == 1
    assert "replaced 2 lone surrogates with U+FFFD" in trace.repairs


def test_a_lone_surrogate_is_not_an_internal_error(tmp_path: Path) -> None:
    events = mlp_like()
    events[2]["name"] = "\ud800"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(trace_doc(events)))
    result = subprocess.run(
        [sys.executable, "-m", "tracetui", "summary", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "lone surrogates" in result.stdout


def test_stray_quotes_are_repaired_in_a_one_line_file(tmp_path: Path) -> None:
    events = mlp_like()
    text = json.dumps(trace_doc(events))
    broken = text.replace('"name": "aten::t"', '"name": "frame {"device": "cpu"} x"')
    broken = broken.replace('"name": "fwd"', '"name": "say "hi", "pid""')
    trace = load_bytes(tmp_path, broken.encode())
    names = trace.events["name"].to_list()
    assert 'frame {"device": "cpu"} x' in names and 'say "hi", "pid"' in names
    assert trace.event_count == len(events)
    assert "escaped 8 stray quotes in strings" in trace.repairs


def test_what_cannot_be_repaired_is_skipped_and_said(tmp_path: Path) -> None:
    events = [*mlp_like(), op("aten::add", 200, 5), op("aten::mul", 210, 5)]
    text = json.dumps(trace_doc(events), separators=(",", ":"))
    broken = text.replace('"name":"aten::add","pid"', '"name":"aten::add";"pid"')
    trace = load_bytes(tmp_path, broken.encode())
    assert trace.event_count == len(events) - 1
    assert "skipped 1 unreadable events" in trace.repairs
    assert "aten::mul" in trace.events["name"].to_list()  # the events after it are read


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("bad", ["1.2.3", "01", "+5", "--1", "0x10"])
def test_a_nan_and_a_bad_number_in_a_complete_file_are_not_a_truncated_file(
    tmp_path: Path, layout: str, bad: str
) -> None:
    """Issue 35 item 10: a NaN, then a bad number two events later, in a complete file. The
    damaged part the scanner hands on ends with the event of the bad number, which is skipped; the
    event-by-event read found no next event after it and took the array for cut: "the file is
    truncated". The array closes after that event: the file is complete, and says what was done."""
    doc = fixture()
    events = doc["traceEvents"]
    nan_at, bad_at = 3, 5
    texts = {i: event_text(events[i], layout) for i in (nan_at, bad_at)}
    broken = {
        nan_at: re.sub(rb'("ts": ?)[0-9.]+', rb"\g<1>NaN", texts[nan_at], count=1),
        bad_at: re.sub(rb'("dur": ?)[0-9.]+', rb"\g<1>" + bad.encode(), texts[bad_at], count=1),
    }
    assert all(broken[i] != texts[i] for i in broken)
    trace = load_bytes(tmp_path, document(doc, layout, broken))
    assert not trace.truncated
    assert trace.repairs == ["replaced 1 NaN/Infinity values with null", "skipped 1 unreadable events"]
    assert trace.event_count == len(events) - 1
    summary = subprocess.run(
        [sys.executable, "-m", "tracetui", "summary", str(tmp_path / "t.json")],
        capture_output=True,
        text=True,
    )
    assert summary.returncode == 0 and "truncated" not in summary.stdout
    assert "warning: repaired: skipped 1 unreadable events" in summary.stdout


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        (b'[{"ph":"X","dur":1.2.3}]', True),
        (b'[{"ph":"X","dur":1},{"ph":"X","dur":1.2.3,"args":{"a":[1,{"b":"}]"}]}} ]', True),
        (b'{"traceEvents":[{"ph":"X","dur":1.2.3}],"traceName":"x"}', True),
        (b'[{"ph":"X","dur":1.2.3}', False),  # cut after the event: the array never closes
        (b'[{"ph":"X","dur":1.2.3,"name":"a}]', False),  # cut inside a string
        (b'[{"ph":"X","dur":1.2.3,"name":"a\\', False),  # cut after a backslash
        (b'[{"ph":"X","dur":1.2.3,"args":{"a":[1', False),  # cut inside the event
    ],
)
def test_an_unreadable_last_event_is_a_cut_only_where_the_array_does_not_close(
    text: bytes, complete: bool
) -> None:
    form = "object" if text.startswith(b"{") else "array"
    events, skipped, whole, _ = repair.stream_events(text, form)
    assert (skipped, whole) == (1, complete)
    assert len(events) == text.count(b'"ph"') - 1


def test_a_repair_that_would_lose_events_is_an_error(tmp_path: Path) -> None:
    """The event count after a repair is checked against a plain count of the events of the
    damaged part (the streaming read decodes only that part, so a repair that loses events is
    made here by one that drops what it was given)."""

    def dropping(data: bytes) -> tuple[bytes, list[str]]:
        return b"[]", ["repaired by dropping everything"]

    text = json.dumps(trace_doc(mlp_like())).replace("aten::t", "aten::\x01t")
    with patch.object(repair, "patch_known_defects", dropping), pytest.raises(TraceError) as info:
        load_bytes(tmp_path, text.encode())
    assert "without losing events" in str(info.value)


def test_the_count_of_events_is_structural() -> None:
    text = json.dumps({"traceEvents": [{"ph": "X", "name": 'a "ph": b'}, {"name": "no phase"}, {"ph": "i"}]})
    assert repair.count_events(text.encode()) == 2  # escaped quotes inside names are not keys


# ---- properties ---------------------------------------------------------------------------------
NAMES = st.text(st.sampled_from('ab "{}[],:\\/\t\n\u00e9\u200b\U0001f600'), max_size=12)


@st.composite
def traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    """CPU ops, launches and their kernels with arbitrary names, in any order."""
    events: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 12))):
        events.append(op(draw(NAMES), draw(st.integers(0, 60)), draw(st.floats(0, 40, allow_nan=False))))
        if draw(st.booleans()):
            start = draw(st.integers(0, 100))
            events.append(launch("cudaLaunchKernel", start, 1.5, i, external_id=i))
            events.append(kernel(draw(NAMES), start + 5, 2.25, i))
    return draw(st.permutations(events))


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.sampled_from(sorted(LAYOUTS)), st.sampled_from(CORRUPTIONS), st.data())
def test_any_single_token_corruption_loses_no_intact_event(
    events: list[dict[str, Any]], layout: str, kind: str, data: st.DataObject
) -> None:
    """For any trace and any single-token corruption, every intact event loads; the broken one
    loads too (repaired), or is skipped and said so: never fewer, never silently."""
    choose = lambda n: data.draw(st.integers(0, n - 1))  # noqa: E731
    index = choose(len(events))
    broken = corrupt(event_text(events[index], layout), kind, choose)
    if broken is None:  # no token of that kind in this event
        return
    with tempfile.TemporaryDirectory() as tmp:
        clean = load_bytes(Path(tmp), document(trace_doc(events), layout), "clean.json")
        try:
            trace = load_bytes(Path(tmp), document(trace_doc(events), layout, {index: broken}))
        except TraceError:  # said in one line: only when the one event there was is unreadable
            assert kind == "garbage" and len(events) == 1
            return
    if trace.event_count < len(events):
        assert trace.event_count == len(events) - 1 and "skipped 1 unreadable events" in trace.repairs
    else:
        assert trace.event_count == len(events)
    # 1e400 is valid JSON: only a reader that reads it refuses it (and then repairs it)
    assert trace.repairs or kind == "1e400", "a broken file is never read silently"
    if trace.event_count == len(events):
        trace.event_args(index)  # the broken event's args can be read
        others = pl.col("id") != index  # and every other event reads as in the clean file
        assert raw_rows(trace).filter(others).equals(raw_rows(clean).filter(others))
    work = trace.gpu.filter(pl.col("cat").is_in(GPU_WORK))
    assert work["launch_id"].null_count() == trace.orphans.height


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(CORRUPTIONS), st.booleans()), min_size=1, max_size=5),
    st.sampled_from(sorted(LAYOUTS)),
    st.data(),
)
def test_repairs_are_local_so_a_block_repairs_as_its_events_do(
    kinds: list[tuple[str, bool]], layout: str, data: st.DataObject
) -> None:
    """Patching a run of events gives what patching each event alone gives, joined: a repair
    never reaches into the next event (so a streaming reader can repair block by block)."""
    choose = lambda n: data.draw(st.integers(0, n - 1))  # noqa: E731
    texts = []
    for i, (kind, broken) in enumerate(kinds):
        event = data.draw(st.sampled_from(mlp_like()))
        text = event_text({**event, "name": data.draw(NAMES) + f"#{i}"}, layout)
        texts.append((corrupt(text, kind, choose) or text) if broken else text)
    separator = b"," if layout == "compact" else b", " if layout == "json.dump" else b",\n"
    whole, _ = repair.patch_known_defects(separator.join(texts))
    assert whole == separator.join(repair.patch_known_defects(text)[0] for text in texts)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.sampled_from(sorted(LAYOUTS)), st.sampled_from(REPAIRABLE), st.data())
def test_the_whole_events_before_a_broken_token_need_no_repair(
    events: list[dict[str, Any]], layout: str, kind: str, data: st.DataObject
) -> None:
    """The decoder skips the run of whole events before the first broken token (names full of
    ``}, {`` and quotes included): repairing the rest gives what repairing everything gives."""
    choose = lambda n: data.draw(st.integers(0, n - 1))  # noqa: E731
    index = choose(len(events))
    broken = corrupt(event_text(events[index], layout), kind, choose)
    if broken is None:
        return
    text = document(trace_doc(events), layout, {index: broken})
    start = repair.events_array_start(text, "object", Path("t.json"))
    where = text.find(broken)
    skip = repair.whole_events_before(text, start, where + len(broken))
    assert start <= skip <= where
    whole, fixes = repair.patch_known_defects(text)
    tail, tail_fixes = repair.patch_known_defects(text[skip:])
    assert whole == text[:skip] + tail and fixes == tail_fixes
