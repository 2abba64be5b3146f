"""Property tests over generated traces: attribution, containment, conservation, preorder."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracetui
from tests.hypothesis_budget import examples
from tests.trace.synth import kernel, launch, x

CPU_CATS = ("cpu_op", "user_annotation", "python_function")
RANK = {"user_annotation": 0, "python_function": 1, "cpu_op": 2, "cuda_runtime": 4}


@st.composite
def traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    n = draw(st.integers(1, 25))
    for i in range(n):
        cat = draw(st.sampled_from(CPU_CATS))
        start = draw(st.integers(0, 60))
        dur = draw(st.integers(0, 40))
        events.append(x(cat, f"{cat}{i}", start, dur, tid=draw(st.sampled_from([1, 2]))))
    for correlation in range(1, draw(st.integers(0, 12)) + 1):
        start = draw(st.integers(0, 100))
        events.append(
            launch(
                "cudaLaunchKernel",
                start,
                draw(st.integers(0, 3)),
                correlation,
                tid=draw(st.sampled_from([1, 2])),
            )
        )
        for _ in range(draw(st.integers(0, 3))):
            events.append(kernel("k", start + 5, draw(st.integers(0, 5)), correlation))
    for _ in range(draw(st.integers(0, 3))):  # orphans: correlation with no call
        events.append(kernel("orphan", draw(st.integers(0, 100)), 1, 10_000 + draw(st.integers(0, 5))))
    return draw(st.permutations(events))


def load(events: list[dict[str, Any]]) -> tracetui.Trace:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.json"
        path.write_text(json.dumps({"traceEvents": events}))
        return tracetui.load(path)


def reference_parents(rows: list[dict[str, Any]]) -> dict[int, int | None]:
    """Brute force: the latest (in sort order) earlier event on the same track that contains it."""
    order = sorted(rows, key=lambda r: (r["track"], r["start_ns"], -r["end_ns"], RANK[r["cat"]], r["id"]))
    parents: dict[int, int | None] = {}
    for i, row in enumerate(order):
        containers = [o for o in order[:i] if o["track"] == row["track"] and o["end_ns"] >= row["end_ns"]]
        parents[row["id"]] = containers[-1]["id"] if containers else None
    return parents


SETTINGS = settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(traces())
def test_gpu_events_are_attributed_exactly_once_or_orphans(events: list[dict[str, Any]]) -> None:
    trace = load(events)
    calls = {e["args"]["correlation"] for e in events if e["cat"] == "cuda_runtime"}
    for row in trace.gpu.iter_rows(named=True):
        assert (row["launch_id"] is not None) == (row["correlation"] in calls)
        if row["launch_id"] is not None:
            assert trace.event(row["launch_id"])["correlation"] == row["correlation"]
    assert trace.gpu.height == sum(e["cat"] == "kernel" for e in events)
    # The orphans are exactly the kernels generated without a call (named "orphan").
    generated_orphans = sorted(e["args"]["correlation"] for e in events if e["name"] == "orphan")
    assert sorted(trace.orphans["correlation"].to_list()) == generated_orphans
    assert set(trace.orphans["name"].to_list()) <= {"orphan"}


@SETTINGS
@given(traces())
def test_parents_contain_children_and_match_the_reference(events: list[dict[str, Any]]) -> None:
    trace = load(events)
    cpu = trace.events.filter(pl.col("pos").is_not_null())
    rows = {r["id"]: r for r in cpu.iter_rows(named=True)}
    assert reference_parents(list(rows.values())) == {i: r["parent"] for i, r in rows.items()}
    for row in rows.values():
        if row["parent"] is not None:
            parent = rows[row["parent"]]
            assert parent["track"] == row["track"]
            assert parent["start_ns"] <= row["start_ns"] and row["end_ns"] <= parent["end_ns"]
            assert row["depth"] == parent["depth"] + 1


@SETTINGS
@given(traces())
def test_subtrees_are_contiguous_and_counts_are_conserved(events: list[dict[str, Any]]) -> None:
    trace = load(events)
    cpu = trace.events.filter(pl.col("pos").is_not_null())
    rows = {r["id"]: r for r in cpu.iter_rows(named=True)}

    def ancestors(event_id: int) -> list[int]:
        out = []
        current = rows[event_id]["parent"]
        while current is not None:
            out.append(current)
            current = rows[current]["parent"]
        return out

    descendants: dict[int, set[int]] = {i: set() for i in rows}
    for i in rows:
        for a in ancestors(i):
            descendants[a].add(i)
    work = trace.gpu.filter(pl.col("launch_id").is_not_null())
    for i, row in rows.items():
        in_range = {
            j
            for j, r in rows.items()
            if r["track"] == row["track"] and row["pos"] < r["pos"] < row["end_pos"]
        }
        assert in_range == descendants[i]
        below = descendants[i] | {i}
        launched = work.filter(pl.col("launch_id").is_in(list(below)))
        assert row["gpu_events"] == launched.height
        assert abs(row["gpu_us"] - launched["dur"].sum()) < 1e-6
    roots = [r for r in rows.values() if r["parent"] is None]
    assert sum(r["gpu_events"] for r in roots) == work.height
    ops = trace.events.filter(pl.col("cat") == "cpu_op")
    table = trace.ops
    assert table["calls"].sum() == ops.height
    assert table["kernels"].sum() == ops["kernels"].sum()
