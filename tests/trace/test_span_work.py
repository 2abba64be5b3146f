"""Steps and annotations count the GPU work launched from any thread of their process while they are
open (issue 14, item 1): checked against a plain-Python replay of the raw JSON (tests/replay.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracetui
from tests.hypothesis_budget import examples
from tests.replay import replay
from tracetui.insight.spans import thread_splits
from tracetui.trace.stats import within

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TRAINING = [
    FIXTURES / "capture_mlp_compiled_train.json.gz",
    FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz",
    FIXTURES / "ranks" / "ddp_2rank_nccl" / "rank0.1795983200660239887.pt.trace.json.gz",
]
EVERY = sorted(FIXTURES.glob("*.json.gz")) + sorted((FIXTURES / "ranks").glob("*/*.json.gz"))


@pytest.mark.parametrize("path", EVERY, ids=lambda p: p.name[:40])
def test_annotations_count_work_of_every_thread_while_open(path: Path) -> None:
    expected = replay(path)
    trace = tracetui.load(path)
    rows = {r["id"]: r for r in trace.annotation_instances.iter_rows(named=True)}
    assert set(rows) == set(expected.annotations)
    splits = dict(thread_splits(trace).iter_rows())
    for span_id, span in expected.annotations.items():
        row = rows[span_id]
        assert (row["kernels"], row["memcpys"], row["memsets"], row["gpu_events"]) == (
            span.counts["kernels"],
            span.counts["memcpys"],
            span.counts["memsets"],
            span.counts["gpu_events"],
        ), span.name
        assert row["gpu_us"] == pytest.approx(span.gpu_us)
        assert row["kernels_here"] == span.kernels_here
        assert splits.get(span_id) == expected.split(span)
        busy, gaps, largest = span.busy_and_gaps()
        assert (row["gpu_busy_us"], row["idle_gaps"]) == (pytest.approx(busy), gaps)
        assert row["largest_gap_us"] == pytest.approx(largest)


@pytest.mark.parametrize("path", EVERY, ids=lambda p: p.name[:40])
def test_steps_count_work_of_every_thread_in_their_window(path: Path) -> None:
    expected = replay(path)
    trace = tracetui.load(path)
    rows = {r["id"]: r for r in trace.step_instances.iter_rows(named=True)}
    assert set(rows) == set(expected.steps)
    for step_id, step in expected.steps.items():
        row = rows[step_id]
        assert (row["kernels"], row["memcpys"], row["memsets"], row["kernels_here"]) == (
            step.counts["kernels"],
            step.counts["memcpys"],
            step.counts["memsets"],
            step.kernels_here,
        )
        assert row["gpu_us"] == pytest.approx(step.gpu_us)


@pytest.mark.parametrize("path", TRAINING, ids=lambda p: p.name[:40])
def test_training_annotations_hold_the_autograd_threads_backward(path: Path) -> None:
    """The fixtures exercise the point: some annotation's kernels came from the autograd thread, and
    the split names it as Kineto's thread_name metadata does."""
    expected = replay(path)
    split = [expected.split(s) for s in (*expected.annotations.values(), *expected.steps.values())]
    assert any(s is not None and "on pt_autograd_0" in s for s in split)
    trace = tracetui.load(path)
    assert set(dict(thread_splits(trace).iter_rows()).values()) == {s for s in split if s is not None}


def test_ddp_step_counts_the_backward_and_its_all_reduces() -> None:
    """The issue's figure: ddp_step counted 7 of the 22 kernels launched while it is open."""
    path = TRAINING[2]
    expected = [s for s in replay(path).annotations.values() if s.name == "ddp_step"]
    trace = tracetui.load(path)
    per_call = trace.annotations.row(by_predicate=pl.col("name") == "ddp_step", named=True)
    assert per_call["kernels_per_call"] == sum(s.counts["kernels"] for s in expected) / len(expected)
    assert per_call["kernels_here_per_call"] == sum(s.kernels_here for s in expected) / len(expected)
    assert per_call["kernels_per_call"] > per_call["kernels_here_per_call"]


def test_a_thread_is_known_by_its_specific_name() -> None:
    """Kineto names the autograd thread twice (``thread 502 (python3)`` and ``thread 502
    (pt_autograd_0)``), in either order across versions."""
    for path in (
        FIXTURES / "mlp_train_eager_default.json.gz",
        FIXTURES / "capture_mlp_compiled_train.json.gz",
    ):
        names = tracetui.load(path).tracks["thread_name"].drop_nulls().to_list()
        assert any(n.endswith("(pt_autograd_0)") for n in names), names


# ---- within: the windows' one pass, against brute force ------------------------------------------------

TIMES = st.integers(min_value=0, max_value=40)


@settings(max_examples=examples(200), deadline=None)
@given(
    spans=st.lists(st.tuples(st.sampled_from("ab"), TIMES, st.integers(0, 25)), max_size=8),
    rows=st.lists(st.tuples(st.sampled_from("abc"), st.one_of(TIMES, st.none())), max_size=30),
)
def test_within_matches_brute_force(
    spans: list[tuple[str, int, int]], rows: list[tuple[str, int | None]]
) -> None:
    span_frame = pl.DataFrame(
        {
            "span": list(range(len(spans))),
            "pid": [p for p, _, _ in spans],
            "start_ns": [s for _, s, _ in spans],
            "end_ns": [s + d for _, s, d in spans],
        },
        schema={"span": pl.UInt32, "pid": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64},
    )
    row_frame = pl.DataFrame(
        {"id": list(range(len(rows))), "p": [p for p, _ in rows], "t": [t for _, t in rows]},
        schema={"id": pl.UInt32, "p": pl.String, "t": pl.Int64},
    )
    got = sorted(within(span_frame, row_frame, "p", "t").select("span", "id").iter_rows())
    expected = sorted(
        (s, r)
        for s, (sp, start, dur) in enumerate(spans)
        for r, (rp, t) in enumerate(rows)
        if rp == sp and t is not None and start <= t <= start + dur
    )
    assert got == expected
