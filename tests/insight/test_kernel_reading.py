"""A GPU event's roofline reading, read alone (the explorer's details pane: ``kernel_insight`` of
its id, through ``Insight.get``) is what the whole trace's reading says of it (the export's)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracetui
from tracetui.insight.kernels import kernel_insight
from tracetui.sample_traces import default_trace
from tracetui.trace import Trace
from tracetui.views.insight import load_insight

FIXTURES = Path(__file__).parent.parent / "fixtures"
SAMPLES = default_trace().parent  # the bundled traces, as installed (tracetui.sample_traces)
TRACES = [
    FIXTURES / "mlp_eager.json.gz",  # split-K GEMMs: an op with two kernels
    FIXTURES / "mlp_train_compiled.json.gz",  # triton kernels, forward and backward
    FIXTURES / "capture_matmul_add_cudagraph_train.json.gz",  # graph replays: many kernels, one call
    SAMPLES / "transformer_block_train_memory.json.gz",  # short names told apart from the trace's others
]


def same(whole: dict[str, Any], alone: dict[str, Any]) -> bool:
    """Equal, floats to the last bits: polars divides a column by a number through its reciprocal
    in some paths and not others (a few ulps), what is shown rounds them away."""
    if whole.keys() != alone.keys():
        return False
    for key, value in whole.items():
        other = alone[key]
        if isinstance(value, float) and isinstance(other, float):
            if not math.isclose(value, other, rel_tol=1e-12):
                return False
        elif value != other:
            return False
    return True


def picked(trace: Trace, whole: pl.DataFrame) -> list[int]:
    """Up to 12 GPU events: each kind of launch (an op's one kernel, one of an op's several, no
    launching op), spread over the trace."""
    per_op = whole.group_by("launch_op_id").len().rename({"len": "kernels"})
    rows = whole.join(per_op, on="launch_op_id", how="left", nulls_equal=True)
    ids: list[int] = []
    for kind in (pl.col("kernels") == 1, pl.col("kernels") > 1, pl.col("launch_op_id").is_null()):
        ids += rows.filter(kind).gather_every(max(1, rows.filter(kind).height // 4))["id"].head(4).to_list()
    return ids


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_a_kernels_reading_alone_is_the_whole_traces(path: Path) -> None:
    trace = tracetui.load(path)
    whole = kernel_insight(trace)
    insight = load_insight(trace)
    ids = picked(trace, whole)
    assert len(ids) >= 4, "the trace has too few kinds of launch to test"
    assert whole["verdict"].is_not_null().any() and whole["short"].is_not_null().all()
    for event_id in ids:
        expected = whole.row(by_predicate=pl.col("id") == event_id, named=True)
        alone = kernel_insight(trace, pl.Series([event_id], dtype=pl.UInt32))
        assert alone.height == 1 and same(expected, alone.row(0, named=True)), event_id
        assert same(expected, insight.get(event_id) or {}), event_id  # what the details pane shows


def test_the_explorer_holds_no_reading_of_every_kernel() -> None:
    """The per-event frame holds the steps' and annotations' verdicts only (a few rows): a kernel's
    reading is made when the details pane asks for it, and the last few are kept."""
    trace = tracetui.load(FIXTURES / "mlp_eager.json.gz")
    insight = load_insight(trace)
    assert insight.events is not None
    spans = set(trace.steps["id"].to_list()) | set(trace.annotation_instances["id"].to_list())
    assert set(insight.events["id"].to_list()) <= spans
    kernel = int(trace.events.filter(pl.col("cat") == "kernel")["id"][0])
    assert insight.get(kernel) is insight.get(kernel)  # kept, not read again
    cpu_op = int(trace.events.filter(pl.col("cat") == "cpu_op")["id"][0])
    assert insight.get(cpu_op) is None and insight.get(10**9) is None
    step = int(trace.steps["id"][0]) if trace.steps.height else None
    if step is not None:
        assert (insight.get(step) or {}).get("verdict")


def test_several_ids_are_each_read_as_alone() -> None:
    trace = tracetui.load(FIXTURES / "mlp_eager.json.gz")
    whole = kernel_insight(trace)
    ids = whole["id"].gather_every(3)
    some = kernel_insight(trace, ids)
    assert some["id"].to_list() == ids.to_list()  # sorted by id, only those
    for row in some.iter_rows(named=True):
        assert same(whole.row(by_predicate=pl.col("id") == row["id"], named=True), row)
    assert kernel_insight(trace, pl.Series([], dtype=pl.UInt32)).is_empty()


def test_each_names_short_form_read_alone_is_the_whole_traces() -> None:
    """A short name is told apart from the trace's other names (``elementwise mul ×4 [vectorized]``
    beside ``… [vectorized, scalar a]``): one kernel read alone is decoded among all of them."""
    trace = tracetui.load(SAMPLES / "transformer_block_train_memory.json.gz")
    whole = kernel_insight(trace)
    first = whole.unique("short", keep="first").sort("id")
    assert first["short"].str.contains(r"\[").any()  # some names are told apart
    fields = ["short", "family", "kind", "notes"]
    for row in first.select("id", *fields).iter_rows(named=True):
        alone = kernel_insight(trace, pl.Series([row["id"]], dtype=pl.UInt32)).select("id", *fields)
        assert alone.row(0, named=True) == row
