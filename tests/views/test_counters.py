"""Counter samples (``"ph":"C"``): kept by both readers, one series per numeric arg, and one timeline
lane per series whose cells are the plain reading of the samples (the level after each, the highest
in a cell)."""

from __future__ import annotations

import gzip
import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracetui
from tests.app.conftest import fixture
from tracetui.trace import native as native_module
from tracetui.trace.times import exact_ns
from tracetui.views.counters import counter_table
from tracetui.views.timeline import window as win
from tracetui.views.timeline.cells import BARS
from tracetui.views.timeline.lanes import CounterRow
from tracetui.views.timeline.model import counter_rows, timeline_model
from tracetui.views.timeline.window import Window

COUNTERS = fixture("synthetic_counters")
PID = "GPU 0 Counters"


def counter_events(start: float, end: float) -> list[dict[str, Any]]:
    """Kineto-style hardware counters over ``[start, end]`` µs: ``sm_active`` (one series) every
    25 µs, ``dram`` (two) every 40 µs; the fixture is mlp_eager's events with these."""
    samples: list[dict[str, Any]] = []
    steps = int((end - start) // 25)
    for i in range(steps + 1):
        value = [10, 55, 90, 70, 20, 0, 35][i % 7]
        samples.append(
            {
                "ph": "C",
                "name": "sm_active",
                "pid": PID,
                "tid": 0,
                "ts": start + 25 * i,
                "args": {"value": value},
            }
        )
    for i in range(int((end - start) // 40) + 1):
        args = {"read": (i * 37) % 100 * 1.5, "write": (i * 11) % 60}
        samples.append(
            {"ph": "C", "name": "dram", "pid": PID, "tid": 0, "ts": start + 40 * i + 3, "args": args}
        )
    return samples


def make_fixture(path: Path) -> None:
    with gzip.open(fixture("mlp_eager"), "rt") as handle:
        doc = json.load(handle)
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    start = min(e["ts"] for e in xs)
    end = max(e["ts"] + e.get("dur", 0) for e in xs)
    doc["traceEvents"] += counter_events(start, end)
    with gzip.open(path, "wt") as handle:
        json.dump(doc, handle)


def written(tmp_path: Path, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / "counters.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def samples_of(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:  # type: ignore[operator]
        return [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "C"]


def test_the_fixture_is_mlp_eager_with_its_counters(tmp_path: Path) -> None:
    made = tmp_path / "made.json.gz"
    make_fixture(made)
    assert samples_of(made) == samples_of(COUNTERS)


def test_every_numeric_series_is_a_row_of_the_table() -> None:
    """Each sample's numeric args, one row each, on the events' clock; nothing else."""
    trace = tracetui.load(COUNTERS)
    table = counter_table(trace)
    expected = sorted(
        (PID, e["name"], series, value) for e in samples_of(COUNTERS) for series, value in e["args"].items()
    )
    assert sorted(zip(table["pid"], table["name"], table["series"], table["value"], strict=True)) == expected
    assert trace.other_phases == {}  # none only counted
    assert trace.event_count == 249 + len(samples_of(COUNTERS))
    first = table.filter(table["name"] == "sm_active")["ts_ns"][0]
    x_start = int(trace.events.select(exact_ns("ts")).min().item())
    assert first == x_start  # the first sample at the first event's start, to the ns


@pytest.mark.parametrize("native", [True, False], ids=["native", "msgspec"])
def test_both_readers_keep_counters_and_odd_args(
    tmp_path: Path, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Non-numeric values (text, booleans, objects, null) are no series; a numeric string is one."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {}},
        {"ph": "C", "name": "q", "pid": 1, "tid": 1, "ts": 10, "args": {"depth": 3, "note": "x", "on": True}},
        {
            "ph": "C",
            "name": "q",
            "pid": 1,
            "tid": 1,
            "ts": 20,
            "args": {"depth": "4.5", "o": {"a": 1}, "n": None},
        },
        {"ph": "C", "name": "empty", "pid": 1, "tid": 1, "ts": 30},
    ]
    if not native:
        monkeypatch.setattr(native_module, "scanner", lambda: None)
    trace = tracetui.load(written(tmp_path, events))
    assert (trace.reader == "msgspec") != native
    assert trace.counters.height == 3
    table = counter_table(trace)
    assert table.select("name", "series", "ts_ns", "value").rows() == [
        ("q", "depth", 10_000, 3.0),
        ("q", "depth", 20_000, 4.5),
    ]


def test_a_trace_without_counters_has_no_counter_lane() -> None:
    trace = tracetui.load(fixture("mlp_eager"))
    assert trace.counters.is_empty() and counter_table(trace).is_empty()
    assert not [lane for lane in timeline_model(trace).lanes if lane.kind == "counter"]


def plain_cells(samples: list[tuple[int, float]], edges: list[int], floor: float, scale: float) -> str:
    """Per cell: the level of the last sample at or before its start and of every sample in it, the
    highest, as a bar of its share of floor → scale (blank before the first sample)."""
    out = []
    for lo, hi in pairwise(edges):
        before = [v for t, v in samples if t <= lo][-1:]
        inside = [v for t, v in samples if lo <= t < hi]
        held = before + inside
        if not held:
            out.append(" ")
            continue
        share = (max(held) - floor) / (scale - floor)
        out.append(BARS[max(1, min(8, round(share * 8)))])
    return "".join(out)


@pytest.fixture(scope="module")
def model_and_samples() -> tuple[Any, dict[str, list[tuple[int, float]]]]:
    trace = tracetui.load(COUNTERS)
    by_series: dict[str, list[tuple[int, float]]] = {}
    for e in samples_of(COUNTERS):
        for series, value in e["args"].items():
            ts = round(e["ts"] * 1000)  # µs with 3 decimals: exact as ns
            by_series.setdefault(f"{e['name']} {series}", []).append((ts, float(value)))
    return timeline_model(trace), by_series


windows = st.tuples(st.floats(0, 1), st.floats(0, 1), st.integers(1, 120))


@settings(max_examples=60, deadline=None)
@given(window=windows)
def test_each_counter_lanes_cells_are_the_samples_plain_reading(
    model_and_samples: Any, window: tuple[float, float, int]
) -> None:
    model, by_series = model_and_samples
    lanes = [lane for lane in model.lanes if lane.kind == "counter"]
    assert (
        sorted(lane.label for lane in lanes)
        == sorted(by_series)
        == ["dram read", "dram write", "sm_active value"]
    )
    a, b, cells = window
    low, high = model.bounds
    start = low + int(min(a, b) * (high - low))
    shown = win.clamp(Window(start, start + max(cells, int(abs(a - b) * (high - low)))), model.bounds, cells)
    edges = win.edges(shown, cells)
    for lane in lanes:
        (row,) = lane.summary
        source = row.source
        assert isinstance(source, CounterRow)
        samples = by_series[lane.label]
        values = [v for _, v in samples]
        floor = min(0.0, min(values))
        assert (source.floor, source.scale) == (floor, max(values))
        assert model.draw(row, shown, cells).glyphs == plain_cells(samples, edges, floor, max(values)), (
            lane.label
        )


def test_a_flat_counter_is_drawn_low_and_several_processes_are_named() -> None:
    import polars as pl

    table = pl.DataFrame(
        {
            "pid": ["a", "a", "b"],
            "name": ["z", "z", "z"],
            "series": ["v", "v", "v"],
            "ts_ns": [0, 10, 5],
            "value": [0.0, 0.0, 2.0],
        }
    )
    lanes = counter_rows(table)
    assert [lane.label for lane in lanes] == ["a z v", "b z v"]
    flat = lanes[0].summary[0].source
    assert isinstance(flat, CounterRow)
    assert flat.levels([0, 5, 10, 20]) == [0.0, 0.0, 0.0]
    assert flat.levels([-10, -1]) == [None]  # before the first sample: nothing


def test_an_args_key_is_outside_text_and_a_value_beyond_a_double_loses_only_itself(tmp_path: Path) -> None:
    """A series named with control characters (an OSC 52 clipboard write) is neutralised in the table
    (and so in the lane's key, label and legend); ``1e400`` in one sample is no value, the sample's
    other series stay (as :meth:`Trace.event_args` reads it)."""
    hostile = "\x1b]52;c;aGk=\x07x"
    path = tmp_path / "odd.json"
    x = '{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":100,"args":{}}'
    odd = '{"ph":"C","name":"q","pid":1,"tid":1,"ts":10,"args":{"a":1e400,"b":2}}'
    keyed = json.dumps({"ph": "C", "name": "q", "pid": 1, "tid": 1, "ts": 20, "args": {hostile: 5}})
    path.write_text('{"traceEvents":[' + ",".join([x, odd, keyed]) + "]}")
    table = counter_table(tracetui.load(path))
    assert table.select("series", "ts_ns", "value").rows() == [
        ("b", 10_000, 2.0),
        ("\ufffd]52;c;aGk=\ufffdx", 20_000, 5.0),
    ]
    labels = [lane.label for lane in timeline_model(tracetui.load(path)).lanes if lane.kind == "counter"]
    assert labels and not any(ch in label for label in labels for ch in "\x1b\x07")
