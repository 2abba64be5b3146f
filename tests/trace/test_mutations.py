"""Mutated real traces: whatever a field holds, every command's data layer either works or raises
one :class:`TraceError`, and every GPU event stays attributed or listed as an orphan.

The mutations are the ones a fuzzer found crashes with (each also has its own regression test):
fields deleted or set to null, empty text, ``"inf"``/``"N/A"``, booleans, numbers past 64 bits,
lists and objects, markup; events shuffled; the events array cut short. The mutated document is
also written in each layout real files come in (compact, ``json.dump``'s, indented) with broken
tokens (NaN, Infinity, 1e400, control characters, invalid UTF-8, lone surrogates, unescaped
quotes, stray backslashes, trailing commas): every event is still read, or said to be skipped.
"""

from __future__ import annotations

import gzip
import io
import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

import tracetui
from tests.hypothesis_budget import examples
from tests.trace.corrupt import LAYOUTS, REPAIRABLE, corrupt, document, event_text
from tracetui.compare.diff_data import diff_data
from tracetui.errors import TraceError
from tracetui.insight.summary_data import summary_data
from tracetui.report.export import export_parts
from tracetui.report.summary import summary_renderable
from tracetui.trace.categories import GPU_WORK, LAUNCH_CALLS

FIXTURES = Path(__file__).parent.parent / "fixtures"
NAMES = ("mlp_eager", "mlp_compiled", "cuda_graph_replay", "capture_mlp_triton_compiled")
FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args", "bp", "s")
TOP_KEYS = ("deviceProperties", "baseTimeNanoseconds", "distributedInfo", "schemaVersion", "traceName")
ODD = st.sampled_from(
    [None, "", "x", "inf", "N/A", -1, 0, 1.5, 2**63, 9.2e18, [], {}, [1, 2], True, "[bold]x[/]", "\x1b[31m"]
)


@cache
def original(name: str) -> dict[str, Any]:
    return json.loads(gzip.decompress((FIXTURES / f"{name}.json.gz").read_bytes()))


@cache
def original_trace(name: str) -> tracetui.Trace:
    return tracetui.load(FIXTURES / f"{name}.json.gz")


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, dict[str, Any], int]:
    """A fixture's name, its document mutated, and how many GPU events the mutations left intact."""
    name = draw(st.sampled_from(NAMES))
    doc = json.loads(json.dumps(original(name)))
    events = doc["traceEvents"]
    touched = set()
    for _ in range(draw(st.integers(1, 6))):
        event = events[draw(st.integers(0, len(events) - 1))]
        touched.add(id(event))
        args = event.get("args")
        if isinstance(args, dict) and args and draw(st.booleans()):
            args[draw(st.sampled_from(sorted(args)))] = draw(ODD)
        elif draw(st.booleans()):
            event.pop(draw(st.sampled_from(FIELDS)), None)
        else:
            event[draw(st.sampled_from(FIELDS))] = draw(ODD)
    if draw(st.booleans()):
        doc[draw(st.sampled_from(TOP_KEYS))] = draw(st.one_of(ODD, st.just([{"id": [0], "name": 5}])))
    if draw(st.integers(0, 4)) == 0:
        doc["traceEvents"] = draw(st.permutations(events))
    if draw(st.integers(0, 9)) == 0:
        doc["traceEvents"] = events[: draw(st.integers(0, len(events)))]
    intact = sum(id(e) not in touched and e.get("cat") in GPU_WORK for e in doc["traceEvents"])
    return name, doc, intact


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_real_traces_never_crash(case: tuple[str, dict[str, Any], int]) -> None:
    name, doc, intact = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mutated.json"
        path.write_text(json.dumps(doc))
        try:
            trace = tracetui.load(path)
        except TraceError:
            return
        data = summary_data(trace)
        Console(file=io.StringIO(), width=100).print(summary_renderable(data))
        for table in ("events", "ops", "kernels", "annotations", "steps", "runtime", "anomalies"):
            pl.concat(export_parts(trace, table)).write_csv()
        diff_data(original_trace(name), trace)
    # No GPU event is lost: each one the mutations left intact is loaded, and each loaded one is
    # either linked to a launch call with its correlation id or an orphan, judged here from the
    # correlation ids themselves (not from the link column the orphans are selected by).
    work = trace.gpu.filter(pl.col("cat").is_in(GPU_WORK))
    assert work.height >= intact
    assert_attributed_or_orphans(trace, data["counts"]["orphans"])


@st.composite
def broken(draw: st.DrawFn) -> tuple[str, dict[str, Any], bytes, int]:
    """A mutated fixture, and its bytes in some layout with up to three tokens broken; the number
    of events broken."""
    case = draw(mutated())
    name, doc = case[0], case[1]
    layout = draw(st.sampled_from(sorted(LAYOUTS)))
    events = doc["traceEvents"]
    texts: dict[int, bytes] = {}
    for _ in range(draw(st.integers(1, 3)) if events else 0):
        index = draw(st.integers(0, len(events) - 1))
        text = texts.get(index) or event_text(events[index], layout)
        kind = draw(st.sampled_from(REPAIRABLE))
        texts[index] = corrupt(text, kind, lambda n: draw(st.integers(0, n - 1))) or text
    return name, doc, document(doc, layout, texts), len(texts)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(broken())
def test_broken_json_of_mutated_real_traces_keeps_every_event(
    case: tuple[str, dict[str, Any], bytes, int],
) -> None:
    name, doc, data, broken_events = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "broken.json"
        path.write_bytes(data)
        try:
            trace = tracetui.load(path)
        except TraceError:  # only if the document is no trace even when written well
            path.write_text(json.dumps(doc))
            try:
                tracetui.load(path)
            except TraceError:
                return
            raise
        summary = summary_data(trace)
        Console(file=io.StringIO(), width=100).print(summary_renderable(summary))
        for table in ("events", "ops", "kernels", "annotations", "steps", "runtime", "anomalies"):
            pl.concat(export_parts(trace, table)).write_csv()
        diff_data(original_trace(name), trace)
    # The event count after every repair: each event read, or reported skipped (only a broken one);
    # never an event made up. A broken event can be read (its bad field dropped) and still leave a
    # piece that the event-by-event reading reports as skipped (found by this test in CI: 177 of
    # 177 read, "skipped 1"), so the report may count a broken event twice, never lose one silently.
    skipped = sum(int(r.split()[1]) for r in trace.repairs if r.startswith("skipped "))
    assert skipped <= broken_events
    assert trace.event_count <= len(doc["traceEvents"]) <= trace.event_count + skipped, trace.repairs
    assert_attributed_or_orphans(trace, summary["counts"]["orphans"])


def assert_attributed_or_orphans(trace: tracetui.Trace, summary_orphans: int) -> None:
    """Each GPU event is linked to a launch call of its correlation id when the trace has one, and
    is an orphan when it has none, judged from the ids themselves (not the link column)."""
    events = {row["id"]: row for row in trace.events.iter_rows(named=True)}
    calls = {e["correlation"] for e in events.values() if e["cat"] in LAUNCH_CALLS} - {None}
    expected_orphans = set()
    for row in trace.gpu.filter(pl.col("cat").is_in(GPU_WORK)).iter_rows(named=True):
        if row["correlation"] in calls:
            assert row["launch_id"] is not None, row
            launch = events[row["launch_id"]]
            assert launch["cat"] in LAUNCH_CALLS and launch["correlation"] == row["correlation"]
        else:
            expected_orphans.add(row["id"])
    assert set(trace.orphans["id"]) == expected_orphans and summary_orphans == len(expected_orphans)
