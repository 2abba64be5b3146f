"""Duration distributions (``tracetui.insight.distributions``): percentiles against numpy.percentile
on the same durations, the histogram, the slowest calls, and the same numbers on every surface."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracetui
from tests.hypothesis_budget import examples
from tracetui.insight.distributions import (
    BINS,
    PERCENTILES,
    SLOWEST,
    gpu_distributions,
    histogram_column,
    percentile_columns,
    rank_step_times,
    step_distribution,
)
from tracetui.trace.categories import GPU_WORK

FIXTURES = Path(__file__).parent.parent / "fixtures"
TRACES = ["mlp_eager", "mlp_train_compiled", "cuda_graph_replay", "mlp_train_tbhandler_stack_memory.pt.trace"]


def raw_durations(path: Path) -> dict[str, list[float]]:
    """Per GPU work name, the ``dur`` of each complete event, read straight from the JSON (µs)."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    out: dict[str, list[float]] = defaultdict(list)
    for event in doc["traceEvents"]:
        if event.get("ph") == "X" and event.get("cat") in GPU_WORK:
            out[event["name"]].append(float(event["dur"]))
    return out


@pytest.mark.parametrize("name", TRACES)
def test_kernel_percentiles_are_numpys_on_the_same_durations(name: str) -> None:
    path = FIXTURES / f"{name}.json.gz"
    frame = gpu_distributions(tracetui.load(path))
    raw = raw_durations(path)
    assert sorted(frame["name"]) == sorted(raw)
    for row in frame.iter_rows(named=True):
        durations = np.array(raw[row["name"]])
        assert row["calls"] == len(durations)
        for p in PERCENTILES:  # the JSON's µs floats vs the model's exact ns: equal to the ns
            assert row[f"p{p}_us"] == pytest.approx(np.percentile(durations, p, method="linear"), abs=1e-3)
        assert row["min_us"] == pytest.approx(durations.min(), abs=1e-3)
        assert row["max_us"] == pytest.approx(durations.max(), abs=1e-3)


def test_percentiles_on_exact_ns_equal_numpy_exactly() -> None:
    """The same integer-ns durations through both: numpy's linear method and polars' agree."""
    trace = tracetui.load(FIXTURES / "mlp_train_compiled.json.gz")
    work = trace.events.filter(pl.col("cat").is_in(GPU_WORK)).with_columns(
        ns=pl.col("end_ns") - pl.col("start_ns")
    )
    frame = gpu_distributions(trace)
    for name, group in work.group_by("name"):
        row = frame.filter(pl.col("name") == name[0]).row(0, named=True)
        for p in PERCENTILES:
            assert row[f"p{p}_us"] * 1000 == pytest.approx(
                np.percentile(group["ns"].to_numpy(), p), rel=1e-12
            )


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=300))
def test_percentiles_and_histogram_on_any_durations(durations: list[int]) -> None:
    frame = pl.DataFrame({"ns": durations}, schema={"ns": pl.Int64})
    row = frame.select(*percentile_columns(pl.col("ns")), histogram_column(pl.col("ns"))).row(0, named=True)
    for p in PERCENTILES:
        assert row[f"p{p}_us"] * 1000 == pytest.approx(np.percentile(durations, p), rel=1e-9, abs=1e-6)
    low, high = min(durations), max(durations)
    expected = [0] * BINS
    for d in durations:
        expected[(d - low) * BINS // (high - low + 1)] += 1
    assert row["histogram"] == expected
    top = (high - low) * BINS // (high - low + 1)  # the longest's bin: the last once the range spans the bins
    assert sum(row["histogram"]) == len(durations) and row["histogram"][top] >= 1
    assert top == (BINS - 1 if high - low + 1 >= BINS else top)


def test_slowest_calls_are_the_slowest_events_of_the_name() -> None:
    trace = tracetui.load(FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz")
    frame = gpu_distributions(trace)
    work = trace.events.filter(pl.col("cat").is_in(GPU_WORK)).with_columns(
        ns=pl.col("end_ns") - pl.col("start_ns")
    )
    for row in frame.iter_rows(named=True):
        calls = work.filter(pl.col("name") == row["name"]).sort(["ns", "id"], descending=[True, False])
        assert row["slowest_ids"] == calls["id"].head(SLOWEST).to_list()
        assert row["slowest_us"] == pytest.approx([ns / 1000 for ns in calls["ns"].head(SLOWEST)])
        assert len(row["histogram"]) == BINS and sum(row["histogram"]) == row["calls"]


def test_step_times_against_numpy() -> None:
    trace = tracetui.load(FIXTURES / "mlp_eager.json.gz")
    row = step_distribution(trace.steps).row(0, named=True)
    spans = (trace.steps["end_ns"] - trace.steps["start_ns"]).to_numpy()
    assert row["calls"] == 3
    for p in PERCENTILES:
        assert row[f"p{p}_us"] * 1000 == pytest.approx(np.percentile(spans, p), rel=1e-12)
    assert row["slowest_ids"] == trace.steps.sort("dur", descending=True)["id"].to_list()
    assert step_distribution(trace.steps.clear()).is_empty()


def test_a_trace_without_gpu_work_or_steps() -> None:
    trace = tracetui.load(FIXTURES / "cpu_only.json.gz")
    assert gpu_distributions(trace).is_empty()


def test_step_times_across_ranks_against_numpy() -> None:
    """Every rank's steps, as the run's analysis has them: over all, and per rank."""
    from tracetui.ranks.discover import resolve
    from tracetui.ranks.run import report_for

    report = report_for(resolve([FIXTURES / "ranks" / "gloo_4rank_mlp"]), summary=False)
    steps = report.analysis.rank_steps
    times = rank_step_times(steps)
    assert times is not None
    spans = (steps["end_ns"] - steps["start_ns"]).to_numpy()
    assert times["count"] == len(spans) == 12
    for p in PERCENTILES:
        assert times[f"p{p}_us"] * 1000 == pytest.approx(np.percentile(spans, p), rel=1e-12)
    worst = steps.sort(pl.col("end_ns") - pl.col("start_ns"), descending=True).row(0, named=True)
    assert (times["slowest"][0]["rank"], times["slowest"][0]["step"]) == (worst["rank"], worst["step"])
    for per_rank in times["ranks"]:
        mine = steps.filter(pl.col("rank") == per_rank["rank"])
        rank_spans = (mine["end_ns"] - mine["start_ns"]).to_numpy()
        assert per_rank["steps"] == len(rank_spans)
        assert per_rank["p90_us"] * 1000 == pytest.approx(np.percentile(rank_spans, 90), rel=1e-12)
    # the ranks table's median step is the same number as p50
    medians = dict(zip(report.analysis.ranks["rank"], report.analysis.ranks["step_us_median"], strict=True))
    for per_rank in times["ranks"]:
        assert per_rank["p50_us"] == pytest.approx(medians[per_rank["rank"]], abs=1e-3)


def test_one_number_everywhere() -> None:
    """p50/p90/p99 of a kernel: the summary's JSON, the kernels table and the details pane's data
    are the same numbers."""
    from tracetui.insight.summary_data import summary_data
    from tracetui.views.insight import load_insight
    from tracetui.views.tables import build_tables

    trace = tracetui.load(FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz")
    insight = load_insight(trace)
    table = build_tables(trace, insight)["kernels"].frame
    summary = {k["name"]: k for k in summary_data(trace)["kernels"]}
    assert summary and set(summary) == set(table["name"])
    for row in table.iter_rows(named=True):
        details = insight.distribution(row["name"])
        assert details is not None
        for key in ("p50_us", "p90_us", "p99_us"):
            assert row[key] == summary[row["name"]][key] == details[key]
        assert row["histogram"] == details["histogram"]
    steps = insight.step_distribution()
    assert steps is not None and summary_data(trace)["step_times"]["p90_us"] == steps["p90_us"]


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 10**9), st.integers(0, 10**6)),
        min_size=1,
        max_size=120,
    )
)
def test_distributions_per_group_are_each_groups_own(rows: list[tuple[str, int, int]]) -> None:
    """The grouped query (codes, each row's bin by a window) gives each group what the one-group
    expressions give its durations alone: percentiles, histogram, min/max, the slowest (ties by id)."""
    from tracetui.insight.distributions import distributions

    frame = pl.DataFrame(
        {
            "name": [r[0] for r in rows],
            "id": list(range(len(rows))),
            "start_ns": [r[1] for r in rows],
            "end_ns": [r[1] + r[2] for r in rows],
        },
        schema={"name": pl.String, "id": pl.UInt32, "start_ns": pl.Int64, "end_ns": pl.Int64},
    )
    got = distributions(frame, "name")
    assert got["name"].to_list() == sorted({r[0] for r in rows})
    for row in got.iter_rows(named=True):
        mine = [(i, r[2]) for i, r in enumerate(rows) if r[0] == row["name"]]
        alone = pl.DataFrame({"ns": [ns for _, ns in mine]}, schema={"ns": pl.Int64})
        expected = alone.select(*percentile_columns(pl.col("ns")), histogram_column(pl.col("ns"))).row(
            0, named=True
        )
        assert row["histogram"] == expected.pop("histogram")
        assert {k: row[k] for k in expected} == pytest.approx(expected, rel=1e-12)
        assert row["calls"] == len(mine)
        durations = [ns for _, ns in mine]
        assert (row["min_us"], row["max_us"]) == pytest.approx((min(durations) / 1000, max(durations) / 1000))
        slowest = sorted(mine, key=lambda m: (-m[1], m[0]))[:SLOWEST]
        assert row["slowest_ids"] == [i for i, _ in slowest]
        assert row["slowest_us"] == pytest.approx([n / 1000 for _, n in slowest], rel=1e-12)
