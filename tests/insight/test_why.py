"""Issue 39: each step's critical path, its GPU idle time explained and the advice, checked against
what the trace's construction says (hypothesis-generated steps, tests/insight/why_synthetic.py), a
plain-Python replay of the idle time from the raw JSON, and the cases that must read right."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracetui
from tests.insight.why_synthetic import Launch, build, expected_path
from tests.replay import LAUNCH_CATS, WORK_CATS, raw_events
from tracetui.insight.advice import advice
from tracetui.insight.critical_path import PARTS, annotation_paths, pieces, step_paths
from tracetui.insight.idle import IDLE_PARTS, stream_idle

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EVERY = sorted(FIXTURES.glob("*.json.gz")) + sorted((FIXTURES / "ranks").glob("*/*.json.gz"))


def load_document(tmp_path: Path, document: dict, name: str = "t.json.gz") -> tracetui.Trace:
    path = tmp_path / name
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    return (
        tracetui.load(path, cache=False)
        if "cache" in tracetui.load.__code__.co_varnames
        else tracetui.load(path)
    )


launches = st.lists(
    st.builds(
        Launch,
        gap=st.integers(0, 40).map(float),
        cpu=st.integers(4, 30).map(float),
        call=st.integers(1, 2).map(float),
        kernel=st.integers(1, 120).map(float),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(steps=launches, item=st.booleans(), tail=st.integers(1, 30))
def test_generated_steps_have_the_path_their_construction_gives(tmp_path_factory, steps, item, tail) -> None:
    built = build(steps, tail=float(tail), item=item)
    trace = load_document(tmp_path_factory.mktemp("why"), built.document)
    paths = step_paths(trace)
    row = paths.spans.row(0, named=True)
    want = expected_path(built, item)
    assert row["length_us"] == pytest.approx(built.step_end - built.step_start)
    assert {k: row[k] for k in PARTS} == {k: pytest.approx(v, abs=0.002) for k, v in want.items()}
    assert sum(row[k] for k in PARTS) == pytest.approx(row["length_us"], abs=0.002)


@pytest.mark.parametrize("path", EVERY, ids=lambda p: p.name[:40])
def test_parts_sum_to_the_length(path: Path) -> None:
    trace = tracetui.load(path)
    for paths in (step_paths(trace), annotation_paths(trace)):
        spans = paths.spans
        if spans.is_empty():
            continue
        sums = spans.select((pl.sum_horizontal(*PARTS) - pl.col("length_us")).abs().max()).item()
        assert sums < 0.002
        crossed = pieces(trace, paths)
        summed = crossed.group_by("span", "name", "kind").agg(pl.col("ns").sum())
        key = ["span", "name", "kind"]
        kept = paths.names.sort(key)
        assert summed.with_columns(pl.col("name", "kind").cast(pl.String)).sort(key).equals(kept)
        per_span = crossed.group_by("span").agg(pl.col("ns").sum())
        over = per_span.join(spans, on="span").filter(pl.col("ns") > pl.col("length_us") * 1000 + 2)
        # only with_stack's straddling frames (profiler_overlap) count an instant twice
        assert over.is_empty() or (trace.anomalies["kind"] == "profiler_overlap").any()
        assert (spans.select(pl.min_horizontal(*PARTS)).to_series() >= 0).all()


def replay_idle(path: Path) -> dict[tuple[str, int], dict[str, float]]:
    """Per (step name, stream): idle time in the step's window and its parts, from the raw JSON (HTA's
    rules on each stream's work sorted by start; the window: the step's start to the later of its end
    and its launched work's end)."""
    events = [e for e in raw_events(path)["traceEvents"] if e.get("ph") == "X"]
    calls = {
        e["args"]["correlation"]: e
        for e in events
        if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})
    }
    work = [e for e in events if e.get("cat") in WORK_CATS]
    steps = [
        e for e in events if e.get("cat") == "user_annotation" and str(e["name"]).startswith("ProfilerStep#")
    ]
    by_stream: dict[int, list[dict]] = {}
    for w in work:
        by_stream.setdefault(int(w["args"].get("stream", -1)), []).append(w)
    found: dict[tuple[str, int], dict[str, float]] = {}
    for stream, items in by_stream.items():
        items.sort(key=lambda w: (w["ts"], 0))
        gaps = []  # (start, end, category)
        reach = None
        for w in items:
            call = calls.get(w["args"].get("correlation"))
            if reach is not None and w["ts"] > reach:
                if call is None:
                    cat = "other"
                elif call["ts"] > reach:
                    cat = "host_wait"
                elif w["ts"] - reach < 30:
                    cat = "kernel_wait"
                else:
                    cat = "other"
                gaps.append((reach, w["ts"], cat))
            elif reach is None:
                gaps.append((-1e18, w["ts"], "host_wait" if call is not None else "other"))
            end = w["ts"] + w["dur"]
            reach = end if reach is None else max(reach, end)
        gaps.append((reach, 1e18, "host_wait"))
        for step in steps:
            start, stop = step["ts"], step["ts"] + step["dur"]

            def launched(w: dict, start: float = start, stop: float = stop) -> bool:
                call = calls.get(w["args"].get("correlation"))
                return call is not None and start <= call["ts"] <= stop

            if not any(launched(w) for w in items):
                continue
            stop = max(stop, *(w["ts"] + w["dur"] for w in work if launched(w)))  # any stream's work
            parts = dict.fromkeys(("host_wait", "kernel_wait", "other"), 0.0)
            for a, b, cat in gaps:
                parts[cat] += max(0.0, min(b, stop) - max(a, start))
            found[(step["name"], stream)] = parts
    return found


@pytest.mark.parametrize("path", [p for p in EVERY if "cpu_only" not in p.name], ids=lambda p: p.name[:40])
def test_idle_time_agrees_with_a_replay_of_the_json(path: Path) -> None:
    trace = tracetui.load(path)
    want = replay_idle(path)
    names = dict(trace.steps.select("id", "name").iter_rows())
    got = {
        (names[r["span"]], r["stream"]): {k.removesuffix("_us"): r[k] for k in IDLE_PARTS}
        for r in stream_idle(trace).iter_rows(named=True)
    }
    assert set(got) == set(want)
    for key, parts in got.items():
        assert parts == {k: pytest.approx(v, abs=0.01) for k, v in want[key].items()}, key


def test_launch_bound_traces_put_the_host_on_the_path() -> None:
    for name in ("linear_eager", "mlp_eager"):
        trace = tracetui.load(FIXTURES / f"{name}.json.gz")
        spans = step_paths(trace).spans
        median = spans.sort("length_us").row(len(spans) // 2, named=True)
        assert median["gpu_us"] < 0.5 * median["length_us"], name
        assert median["cpu_us"] + median["launch_us"] > 0.5 * median["length_us"], name
        assert any(a.rule == "launch_bound" for a in advice(trace)), name


def test_a_gpu_bound_step_puts_its_kernels_on_the_path_and_needs_no_advice(tmp_path: Path) -> None:
    built = build([Launch(gap=0.0, cpu=5.0, call=2.0, kernel=400.0) for _ in range(6)], item=True, tail=1.0)
    trace = load_document(tmp_path, built.document)
    row = step_paths(trace).spans.row(0, named=True)
    assert row["gpu_us"] > 0.9 * row["length_us"]
    assert advice(trace) == []  # GPU-bound, one short sync, nothing to fuse: the right advice is none


def test_an_item_sync_is_on_the_path_and_named(tmp_path: Path) -> None:
    # the host launches quickly, then .item() waits for the GPU: the copy and the kernels before it
    built = build([Launch(gap=0.0, cpu=6.0, call=2.0, kernel=60.0) for _ in range(4)], item=True, tail=1.0)
    trace = load_document(tmp_path, built.document)
    paths = step_paths(trace)
    kinds = set(pieces(trace, paths)["kind"])
    assert {"kernel", "memcpy", "sync"} <= kinds
    assert paths.spans["gpu_us"][0] > 200
    # a blocking .item() on the path of a short step: the sync advice names the op
    built = build([Launch(gap=30.0, cpu=6.0, call=2.0, kernel=3.0) for _ in range(3)], item=True, tail=1.0)
    trace = load_document(tmp_path, built.document, "short.json.gz")
    found = {a.rule: a for a in advice(trace)}
    assert "sync" in found and "aten::_local_scalar_dense" in found["sync"].evidence


def test_an_optimizer_step_that_starves_the_gpu_is_named(tmp_path: Path) -> None:
    slow = build(
        [Launch(gap=200.0, cpu=5.0, call=2.0, kernel=5.0)], tail=300.0, annotation="Optimizer.step#SGD.step"
    )
    found = {a.rule for a in advice(load_document(tmp_path, slow.document))}
    assert "optimizer" in found
    short = build(
        [Launch(gap=0.0, cpu=5.0, call=2.0, kernel=300.0)], tail=1.0, annotation="Optimizer.step#SGD.step"
    )
    assert "optimizer" not in {a.rule for a in advice(load_document(tmp_path, short.document, "s.json.gz"))}


def test_fusion_is_advised_for_eager_gelu_mul_not_for_the_fused_kernel() -> None:
    eager = {a.rule: a for a in advice(tracetui.load(FIXTURES / "mlp_eager.json.gz"))}
    assert "fusion" in eager and "gelu" in eager["fusion"].evidence and "mul" in eager["fusion"].evidence
    assert 20 < eager["fusion"].saving_us < 40  # 70.4 µs of gelu + mul; Inductor's fused kernel: 37.4 µs
    compiled = {a.rule for a in advice(tracetui.load(FIXTURES / "mlp_compiled.json.gz"))}
    assert "fusion" not in compiled


def test_the_gloo_straggler_step_shows_its_host_gap() -> None:
    rank2 = next((FIXTURES / "ranks" / "gloo_4rank_mlp").glob("rank2.*.json.gz"))
    paths = step_paths(tracetui.load(rank2))
    for row in paths.spans.iter_rows(named=True):
        assert row["gap_us"] > 0.5 * row["length_us"]
        top = paths.top(row["span"], 1)[0]
        assert top["kind"] == "gap"


NULL_TIMES = {
    # which event loses which time (found in CI: a step whose ts was NaN crashed the walk)
    "step ts": (lambda e: str(e.get("name", "")).startswith("ProfilerStep#"), "ts"),
    "annotation ts": (lambda e: e.get("name") == "mlp_fwd", "ts"),
    "annotation dur": (lambda e: e.get("name") == "mlp_fwd", "dur"),
    "kernel ts": (lambda e: e.get("cat") == "kernel", "ts"),
    "launch ts": (lambda e: e.get("cat") == "cuda_driver", "ts"),
    "sync ts": (lambda e: e.get("name") == "cudaDeviceSynchronize", "ts"),
}


@pytest.mark.parametrize("case", sorted(NULL_TIMES))
def test_events_without_a_time_are_left_out_of_the_why_never_a_crash(tmp_path: Path, case: str) -> None:
    from tracetui.insight.launch_gaps import launch_gaps
    from tracetui.insight.summary_data import summary_data
    from tracetui.report.export import export_parts

    document = json.loads(gzip.decompress((FIXTURES / "mlp_compiled.json.gz").read_bytes()))
    chosen, field = NULL_TIMES[case]
    event = next(e for e in document["traceEvents"] if chosen(e))
    event[field] = None
    trace = load_document(tmp_path, document)
    untimed = set(trace.events.filter(pl.col("start_ns").is_null())["id"])
    steps, annotations = step_paths(trace), annotation_paths(trace)
    for paths, spans in ((steps, trace.steps), (annotations, trace.annotation_instances)):
        timed = set(spans.filter(pl.col("start_ns").is_not_null())["id"])
        assert set(paths.spans["span"]) == timed  # each span with a start has its path; none other
        assert not untimed & set(paths.spans["span"])
        off = paths.spans.select(pl.sum_horizontal(*PARTS) - pl.col("length_us")).to_series().abs()
        assert off.max() < 0.002
    assert set(trace.anomalies.filter(pl.col("kind") == "missing_timestamp")["event_id"]) == untimed
    assert launch_gaps(trace)["start_ns"].null_count() == 0
    stream_idle(trace)
    advice(trace)
    data = summary_data(trace)
    assert len(data["steps"]) == trace.steps.height
    assert pl.concat(export_parts(trace, "critical_path")).height > 0
