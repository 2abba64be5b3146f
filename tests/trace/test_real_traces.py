"""The model on real H200 traces (copies of ../shared/traces in tests/fixtures)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import tracetui
from tracetui.trace import Trace

FIXTURES = Path(__file__).parent.parent / "fixtures"
METADATA_ONLY = {
    "aten::t",
    "aten::transpose",
    "aten::as_strided",
    "aten::view",
    "aten::reshape",
    "aten::_unsafe_view",
}


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    return {p.name.split(".")[0]: tracetui.load(p) for p in sorted(FIXTURES.glob("*.json.gz"))}


def per_call(trace: Trace, annotation: str) -> dict[str, float]:
    row = trace.annotations.filter(pl.col("name") == annotation).row(0, named=True)
    return {k: row[f"{k}_per_call"] for k in ("kernels", "memsets", "memcpys")} | {"calls": row["calls"]}


def test_mlp_eager_has_five_kernels_and_two_memsets_per_forward(traces: dict[str, Trace]) -> None:
    assert per_call(traces["mlp_eager"], "mlp_fwd") == {"kernels": 5, "memsets": 2, "memcpys": 0, "calls": 3}


def test_mlp_compiled_has_four_kernels_per_forward(traces: dict[str, Trace]) -> None:
    assert per_call(traces["mlp_compiled"], "mlp_fwd")["kernels"] == 4


def test_linear_eager_has_one_kernel_per_forward(traces: dict[str, Trace]) -> None:
    assert per_call(traces["linear_eager"], "linear_fwd") == {
        "kernels": 1,
        "memsets": 0,
        "memcpys": 0,
        "calls": 3,
    }


def test_metadata_only_ops_launch_nothing(traces: dict[str, Trace]) -> None:
    ops = traces["mlp_eager"].ops
    idle = set(ops.filter(~pl.col("launches_kernels"))["name"])
    assert idle == METADATA_ONLY
    busy = set(ops.filter(pl.col("launches_kernels"))["name"])
    assert busy == {"aten::linear", "aten::matmul", "aten::mm", "aten::gelu", "aten::mul"}


def test_gemm_launched_by_innermost_op_under_linear(traces: dict[str, Trace]) -> None:
    trace = traces["mlp_eager"]
    gemm = trace.gpu.filter(pl.col("name").cast(pl.String).str.starts_with("nvjet")).row(0, named=True)
    chain = [trace.event(i)["name"] for i in trace.ancestors(gemm["id"])]
    assert chain == [
        "ProfilerStep#2",
        "mlp_fwd",
        "aten::linear",
        "aten::matmul",
        "aten::mm",
        "cuLaunchKernelEx",
        gemm["name"],
    ]
    assert trace.event(gemm["launch_op_id"])["name"] == "aten::mm"
    assert trace.event(gemm["annotation_id"])["name"] == "mlp_fwd"
    assert trace.event(gemm["step_id"])["name"] == "ProfilerStep#2"


def test_linear_bias_is_fused_into_addmm(traces: dict[str, Trace]) -> None:
    ops = set(traces["linear_eager"].ops["name"])
    assert "aten::addmm" in ops and "aten::add" not in ops


def test_compiled_region_launches_fused_triton_kernel(traces: dict[str, Trace]) -> None:
    trace = traces["mlp_compiled"]
    fused = trace.gpu.filter(pl.col("name") == "triton_poi_fused__unsafe_view_gelu_mul_0")
    assert fused.height == 3
    chain = [trace.event(i)["name"] for i in trace.ancestors(fused["id"][0])]
    assert chain[2].startswith("Torch-Compiled Region")
    assert chain[-3:] == ["triton_poi_fused__unsafe_view_gelu_mul_0", "cuLaunchKernel", fused["name"][0]]


def test_cuda_graph_launch_owns_all_its_kernels(traces: dict[str, Trace]) -> None:
    trace = traces["cuda_graph_replay"]
    launches = trace.events.filter(pl.col("name") == "cudaGraphLaunch")
    assert launches.height == 3
    assert launches["gpu_events"].to_list() == [7, 7, 7]
    assert trace.orphans.is_empty()
    assert trace.gpu["launch_id"].null_count() == 0


def test_cpu_only_trace(traces: dict[str, Trace]) -> None:
    trace = traces["cpu_only"]
    assert trace.gpu.is_empty() and trace.orphans.is_empty() and not trace.ops.is_empty()
    assert not trace.ops["launches_kernels"].any()


def test_every_gpu_event_is_attributed_or_orphan(traces: dict[str, Trace]) -> None:
    for name, trace in traces.items():
        attributed = trace.gpu.filter(pl.col("launch_id").is_not_null()).height
        assert attributed + trace.orphans.height == trace.gpu.filter(pl.col("cat") != "cuda_sync").height, (
            name
        )


def test_with_stack_partial_overlaps_are_anomalies_with_both_ids(traces: dict[str, Trace]) -> None:
    trace = traces["mlp_train_tbhandler_stack_memory"]
    overlaps = trace.anomalies.filter(pl.col("kind") == "profiler_overlap")  # benign: the profiler's frames
    assert (
        overlaps.height == 16
    )  # each record_function span is straddled by its __enter__ and __exit__ frames
    for row in overlaps.iter_rows(named=True):
        a, b = trace.event(row["event_id"]), trace.event(row["other_id"])
        assert {a["cat"], b["cat"]} == {"user_annotation", "python_function"}
        first, second = sorted((a, b), key=lambda e: e["start_ns"])
        assert first["start_ns"] < second["start_ns"] < first["end_ns"] < second["end_ns"]
        assert a["parent"] == b["parent"]  # the one that does not fit became a sibling


def test_backward_ops_link_to_their_forward_op(traces: dict[str, Trace]) -> None:
    trace = traces["mlp_train_eager_default"]
    linked = trace.events.filter(pl.col("fwd_id").is_not_null())
    pairs = {(row["name"], trace.event(row["fwd_id"])["name"]) for row in linked.iter_rows(named=True)}
    assert ("AddmmBackward0", "aten::addmm") in pairs
    assert ("NllLossBackward0", "aten::nll_loss_forward") in pairs


def test_backward_kernels_count_in_their_step(traces: dict[str, Trace]) -> None:
    trace = traces["mlp_train_tbhandler_stack_memory"]
    backward = trace.events.filter(pl.col("name") == "autograd::engine::evaluate_function: AddmmBackward0")
    assert backward["step_id"].null_count() == 0  # on the autograd thread, outside the step's span
    per_step = trace.steps["kernels"].to_list()
    assert per_step == [23, 23]


def test_memory_instants_and_metadata_tables(traces: dict[str, Trace]) -> None:
    trace = traces["mlp_train_tbhandler_stack_memory"]
    memory = trace.instants.filter(pl.col("name") == "[memory]")
    assert memory.height > 0 and memory["total_allocated"].null_count() == 0
    assert "thread_name" in set(trace.meta_events["name"])
    assert (
        trace.metadata["with_stack"] == 1 and trace.metadata["deviceProperties"][0]["name"] == "NVIDIA H200"
    )
    assert trace.format.startswith("PyTorch 2.8+")


def test_external_ids_agree_with_the_tree(traces: dict[str, Trace]) -> None:
    for name, trace in traces.items():
        assert trace.anomalies.filter(pl.col("kind") == "external_id_mismatch").is_empty(), name


def test_event_args_keeps_every_key(traces: dict[str, Trace]) -> None:
    trace = traces["mlp_eager"]
    gemm = trace.gpu.filter(pl.col("cat") == "kernel").row(0, named=True)
    args = trace.event_args(gemm["id"])
    assert {"queued", "context", "grid", "block", "registers per thread"} <= set(args)
    assert args["correlation"] == gemm["correlation"]


def test_directory_from_tensorboard_handler_opens_the_newest(tmp_path: Path) -> None:
    older = tmp_path / "host_1.100.pt.trace.json.gz"
    newer = tmp_path / "host_1.200.pt.trace.json.gz"
    older.write_bytes((FIXTURES / "linear_eager.json.gz").read_bytes())
    newer.write_bytes((FIXTURES / "mlp_eager.json.gz").read_bytes())
    import os

    os.utime(older, (1, 1))
    trace = tracetui.load(tmp_path)
    assert trace.path == newer and trace.siblings == (older,)


def test_graph_replayed_training_step_is_launched_by_cuda_graph_launch(traces: dict[str, Trace]) -> None:
    trace = traces["capture_matmul_add_cudagraph_train"]  # tracetui capture matmul-add --cuda-graph --train
    assert trace.orphans.is_empty() and not trace.gpu.is_empty()
    calls = {trace.event(i)["name"] for i in trace.gpu["launch_id"].unique().to_list()}
    assert calls == {"cudaGraphLaunch"}
    assert set(trace.kernels.explode("launched_via")["launched_via"]) == {"cudaGraphLaunch"}


def test_triton_kernel_inside_a_compiled_region(traces: dict[str, Trace]) -> None:
    trace = traces["capture_mlp_triton_compiled"]  # tracetui capture mlp --kernel triton --compile
    fused = trace.gpu.filter(pl.col("name").cast(pl.String).str.starts_with("_geglu_fwd_kernel"))
    assert fused.height == 3
    chain = [trace.event(i)["name"] for i in trace.ancestors(fused["id"][0])]
    assert any(name.startswith("Torch-Compiled Region") for name in chain)


def test_compiled_training_links_backward_to_forward(traces: dict[str, Trace]) -> None:
    trace = traces["capture_mlp_compiled_train"]  # tracetui capture mlp --compile --train
    linked = trace.events.filter(pl.col("fwd_id").is_not_null())
    pairs = {(row["name"], trace.event(row["fwd_id"])["name"]) for row in linked.iter_rows(named=True)}
    assert ("CompiledFunctionBackward", "CompiledFunction") in pairs
    assert trace.steps["kernels"].to_list() == [25, 25, 25]


def test_profiler_overlaps_are_benign_and_out_of_the_headline(traces: dict[str, Trace]) -> None:
    """Issue 14 item 13: with_stack's record_function __enter__/__exit__ frames (and profiler.step())
    straddle their annotation; by hand from the raw JSON: every (profiler frame, annotation) pair on
    one thread where one starts inside the other and ends after it."""
    import gzip
    import json
    import re

    from tracetui.insight.summary_data import summary_data

    name = "mlp_train_tbhandler_stack_memory"
    trace = traces[name]
    raw = json.loads(gzip.decompress(trace.path.read_bytes()))["traceEvents"]
    frame = re.compile(
        r"torch/(?:autograd/profiler|profiler/profiler)\.py\(\d+\): (?:__enter__|__exit__|step)$"
    )
    frames = [
        e for e in raw if e.get("ph") == "X" and e.get("cat") == "python_function" and frame.search(e["name"])
    ]
    spans = [e for e in raw if e.get("ph") == "X" and e.get("cat") == "user_annotation"]

    def straddle(a: dict, b: dict) -> bool:
        return a["ts"] < b["ts"] < a["ts"] + a["dur"] < b["ts"] + b["dur"]

    index = {id(e): i for i, e in enumerate(raw)}
    by_hand = {
        frozenset((index[id(f)], index[id(s)]))
        for f in frames
        for s in spans
        if (f["pid"], f["tid"]) == (s["pid"], s["tid"]) and (straddle(f, s) or straddle(s, f))
    }
    found = {frozenset(pair) for pair in trace.anomalies.select("event_id", "other_id").iter_rows()}
    assert found and found <= by_hand  # every overlap the nesting met is one of those pairs …
    assert set(trace.anomalies["kind"]) == {"profiler_overlap"}  # … and is classified benign
    by_hand_count = len(found)
    data = summary_data(trace)
    assert (data["anomalies"]["count"], data["anomalies"]["benign"]) == (0, by_hand_count)
    assert (data["counts"]["anomalies"], data["counts"]["benign_anomalies"]) == (0, by_hand_count)
