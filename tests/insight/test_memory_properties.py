"""The memory model on made-up traces, odd values included (missing fields, text where numbers
belong, threads without events, unknown devices): it never fails, and what it says holds."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from tests.insight import memory_traces as mt
from tracetui.insight.memory import memory_of
from tracetui.insight.memory_data import memory_data
from tracetui.trace import load
from tracetui.views.memory import memory_lanes, memory_table, node_memory, peak_target

ODD = st.sampled_from([None, "N/A", "inf", -1, 0, 2**62])


@st.composite
def traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [mt.step(1, 0, 500), mt.step(2, 500, 500)]
    for n in range(draw(st.integers(0, 6))):
        start = draw(st.integers(0, 900))
        events.append(
            mt.op(f"aten::op{n}", start, draw(st.integers(0, 200)), tid=draw(st.sampled_from([100, 101])))
        )
    for _ in range(draw(st.integers(0, 40))):
        event = mt.mem(
            draw(st.integers(0, 1000)) + draw(st.sampled_from([0, 0.5, 0.001])),
            draw(st.sampled_from([0x1000, 0x2000, 0x3000])),
            draw(st.sampled_from([512, -512, 1024, -1024, 0])),
            draw(st.integers(0, 1 << 20)),
            tid=draw(st.sampled_from([100, 101, mt.ALLOCATOR_TID])),
            device=draw(st.sampled_from([mt.CUDA, mt.CPU, (1, 1), (42, 0)])),
        )
        if draw(st.integers(0, 9)) == 0:  # an odd value in one field
            key = draw(
                st.sampled_from(
                    ["Bytes", "Addr", "Total Allocated", "Total Reserved", "Device Id", "Device Type"]
                )
            )
            event["args"][key] = draw(ODD)
        if draw(st.integers(0, 19)) == 0:
            event["args"].pop(draw(st.sampled_from(["Bytes", "Addr", "Total Allocated"])))
        events.append(event)
    return events


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_any_memory_events_read_without_failing(events: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.json"
        path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
        trace = load(path)
    memory = memory_of(trace)
    raw = [e for e in events if e.get("name") == "[memory]"]
    assert memory.events.height == len(raw)
    table = memory.events
    pairs = table.filter(pl.col("pair_id").is_not_null()).select("id", "pair_id")
    back = pairs.rename({"id": "pair_id", "pair_id": "id"})
    assert pairs.sort("id").equals(back.select("id", "pair_id").sort("id"))  # pairs are symmetric
    for device in memory.devices:
        rows = table.filter(pl.col("device") == device.device)
        assert device.peak["allocated"] == rows["allocated"].max()
        assert device.before_trace_at_peak + int(device.alive["bytes"].sum()) == device.peak["allocated"]
    memory_data(memory, trace.t0_ns)
    memory_lanes(memory)
    memory_table(memory, trace.t0_ns)
    peak_target(memory)
    for op_id in table["op_id"].drop_nulls().unique().to_list():
        assert node_memory(memory, trace, trace.event(op_id)) is not None
