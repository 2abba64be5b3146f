"""Each rank's figures, checked against independent computations on the raw JSON."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

import tracetui
from tests.ranks import reference as ref
from tests.ranks.conftest import GLOO4, NCCL2, rank_files
from tracetui.insight.summary_data import summary_data
from tracetui.ranks.discover import discover
from tracetui.ranks.tables import rank_tables

GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset")


def _classes(events: list[dict], gloo: bool) -> dict[str, list[tuple[int, int]]]:
    """The independent classification: NCCL kernels are communication; on the gloo set every
    host<->device copy is gloo's (its D2H in c10d::allreduce_, its H2D in gloo:all_reduce)."""
    out: dict[str, list[tuple[int, int]]] = {ref.COMPUTE: [], ref.COMM: [], ref.MEMORY: []}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in GPU_WORK:
            continue
        name = e["name"]
        if e["cat"] == "kernel":
            cls = ref.COMM if name.startswith("ncclDevKernel") else ref.COMPUTE
        elif gloo and ("DtoH" in name or "HtoD" in name):
            cls = ref.COMM
        else:
            cls = ref.MEMORY
        out[cls].append(ref.span(e))
    return out


@pytest.mark.parametrize(
    "path", [*rank_files(GLOO4), *rank_files(NCCL2)], ids=lambda p: p.parent.name + p.name[:5]
)
def test_temporal_breakdown_per_step_matches_an_independent_painting(path: Path) -> None:
    rank_set = discover([path.parent])
    assert rank_set is not None
    entry = next(r for r in rank_set.ranks if r.path == path)
    tables = rank_tables(tracetui.load(path), entry)
    events = ref.raw_events(path)
    classes = _classes(events, gloo=path.parent == GLOO4)
    host = [
        ref.span(e)
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") in ("user_annotation", "cpu_op")
        and str(e["name"]).startswith(("gloo:", "c10d::"))
    ]
    expected_windows = ref.windows(events)
    steps = tables.steps.sort("window")
    assert steps.height == len(expected_windows)
    for row, window in zip(steps.iter_rows(named=True), expected_windows, strict=True):
        assert (row["window_start_ns"], row["window_end_ns"]) == window
        paint = ref.painted(classes, window)
        width = window[1] - window[0]
        assert row["window_us"] * 1000 == pytest.approx(width, abs=1e-3)
        for column, key in (
            ("compute_us", ref.COMPUTE),
            ("comm_us", ref.COMM),
            ("memory_us", ref.MEMORY),
            ("idle_us", "idle"),
            ("overlap_us", "both"),
        ):
            assert row[column] * 1000 == pytest.approx(paint[key], abs=1e-3), column
        # the four parts add up to the step's span
        parts = row["compute_us"] + row["comm_us"] + row["memory_us"] + row["idle_us"]
        assert parts == pytest.approx(row["window_us"], abs=1e-6)
        clipped = [(max(s, window[0]), min(e, window[1])) for s, e in host if s < window[1] and e > window[0]]
        assert row["host_comm_us"] * 1000 == pytest.approx(ref.union(clipped), abs=1e-3)
    rank = tables.rank.row(0, named=True)
    total = sum(w[1] - w[0] for w in expected_windows)
    parts = rank["compute_us"] + rank["comm_us"] + rank["memory_us"] + rank["idle_us"]
    assert parts == pytest.approx(rank["window_us"], abs=1e-6)
    assert rank["window_us"] * 1000 == pytest.approx(total, abs=1e-3)
    comm = sum(ref.painted({ref.COMM: classes[ref.COMM]}, w)[ref.COMM] for w in expected_windows)
    both = sum(ref.painted(classes, w)["both"] for w in expected_windows)
    assert rank["overlap_pct"] == (pytest.approx(100.0 * both / comm) if comm else None)


def test_rank_row_agrees_with_the_single_trace_summary() -> None:
    """One number, one computation: GPU busy and step times are the single-trace summary's."""
    path = rank_files(GLOO4)[2]
    trace = tracetui.load(path)
    rank_set = discover([GLOO4])
    assert rank_set is not None
    row = rank_tables(trace, rank_set.file(2)).rank.row(0, named=True)
    data = summary_data(trace)
    assert row["gpu_busy_us"] == data["trace"]["gpu_busy_us"]
    assert row["step_us_median"] == statistics.median(s["cpu_us"] for s in data["steps"])
    assert row["steps"] == len(data["steps"]) == 3
    assert (row["rank"], row["file"], row["device"], row["backend"]) == (
        2,
        path.name,
        "GPU 0 (NVIDIA H200)",
        "gloo",
    )


def test_nccl_collectives_carry_their_args() -> None:
    rank_set = discover([NCCL2])
    assert rank_set is not None
    tables = rank_tables(tracetui.load(rank_set.file(0).path), rank_set.file(0))
    rows = tables.collectives.sort("start_ns")
    # the first kernel was enqueued before profiling started: no launch, no args, not aligned
    assert rows["aligned"].to_list() == [False, True, True, True, True]
    aligned = rows.filter("aligned")
    assert aligned["name"].unique().to_list() == ["allreduce"]
    assert aligned["in_nelems"].to_list() == [4195328, 4198400, 4195328, 4198400]
    assert aligned["bytes"].to_list() == [4 * n for n in aligned["in_nelems"]]
    assert aligned["group"].unique().to_list() == ["0"] and aligned["group_ranks"][0] == "[0, 1]"
    assert aligned["group_size"].unique().to_list() == [2]
    assert aligned["step"].to_list() == [2, 2, 3, 3] and aligned["seq"].to_list() == [0, 1, 0, 1]
    assert tables.rank["unaligned_collectives"][0] == 1


def test_gloo_collectives_are_the_gloo_spans() -> None:
    rank_set = discover([GLOO4])
    assert rank_set is not None
    raw = [
        e
        for e in ref.raw_events(rank_set.file(1).path)
        if str(e.get("name")).startswith("gloo:") and e.get("cat") == "user_annotation"
    ]
    tables = rank_tables(tracetui.load(rank_set.file(1).path), rank_set.file(1))
    rows = tables.collectives.sort("start_ns")
    assert rows["start_ns"].to_list() == sorted(ref.span(e)[0] for e in raw)
    assert set(rows["kind"]) == {"host"} and set(rows["name"]) == {"allreduce"}
    assert set(rows["dtype"]) == {"float"} and set(rows["in_nelems"]) == {4194304, 4199424}
    assert set(rows["group"]) == {"0"} and set(rows["group_size"]) == {4}  # from pg_config


def test_a_trace_without_steps_is_one_window(tmp_path: Path) -> None:
    """No ProfilerStep: the window is the whole trace, and the breakdown still adds up to it."""
    from tests.ranks import synthetic

    doc = synthetic.read(rank_files(NCCL2)[1])
    doc["traceEvents"] = [
        e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    path = synthetic.write(doc, tmp_path / "rank1.json.gz")
    rank_set = discover([tmp_path / "rank1.json.gz", rank_files(NCCL2)[0]])
    assert rank_set is not None
    tables = rank_tables(tracetui.load(path), rank_set.file(1))
    events = [e for e in ref.raw_events(path) if e.get("ph") == "X"]
    span = (min(ref.span(e)[0] for e in events), max(ref.span(e)[1] for e in events))
    row = tables.steps.row(0, named=True)
    assert tables.steps.height == 1 and row["step"] is None
    assert (row["window_start_ns"], row["window_end_ns"]) == span
    parts = row["compute_us"] + row["comm_us"] + row["memory_us"] + row["idle_us"]
    assert parts == pytest.approx(row["window_us"], abs=1e-6)
    paint = ref.painted(_classes(ref.raw_events(path), gloo=False), span)
    assert row["comm_us"] * 1000 == pytest.approx(paint[ref.COMM], abs=1e-3)
    assert tables.rank["steps"][0] == 0 and tables.rank["step_us_median"][0] is None
    assert set(tables.collectives["step"]) == {None}  # aligned by sequence alone
