"""`tracetui diff`: the data (tracetui.diff/1) and the rich report, on real and synthetic traces."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.compare.conftest import FIXTURES, fixture, sample
from tests.compare.synthetic import markup_names_trace
from tracetui.compare.diff_data import SCHEMA, diff_data
from tracetui.compare.diff_report import diff_renderable
from tracetui.trace import load

FUSED = "triton_poi_fused__unsafe_view_gelu_mul_0"
GEMMS = {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT"}


def scope(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in data["scopes"] if s["name"] == name)


def render(data: dict[str, Any], width: int = 200) -> str:
    console = Console(record=True, width=width, markup=False, highlight=False, file=io.StringIO())
    console.print(diff_renderable(data))
    return console.export_text()


@pytest.fixture(scope="module")
def eager_vs_compiled() -> dict[str, Any]:
    return diff_data(fixture("mlp_eager"), fixture("mlp_compiled"))


def test_mlp_fwd_numbers(eager_vs_compiled: dict[str, Any]) -> None:
    fwd = scope(eager_vs_compiled, "mlp_fwd")
    assert fwd["kind"] == "annotation"
    assert (fwd["a"]["calls"], fwd["b"]["calls"]) == (3, 3)
    assert (fwd["a"]["kernels_per_call"], fwd["b"]["kernels_per_call"]) == (5, 4)
    assert (fwd["a"]["gpu_events_per_call"], fwd["b"]["gpu_events_per_call"]) == (7, 6)
    assert fwd["delta"]["kernels_per_call"] == -1
    change = fwd["b"]["gpu_us_per_call"] - fwd["a"]["gpu_us_per_call"]
    assert fwd["delta"]["gpu_us_per_call"] == pytest.approx(change)
    assert fwd["delta"]["gpu_us_pct"] == pytest.approx(100 * change / fwd["a"]["gpu_us_per_call"])
    assert -15 < fwd["delta"]["gpu_us_pct"] < -5  # compiled is faster on the GPU


def test_gemms_are_byte_identical(eager_vs_compiled: dict[str, Any]) -> None:
    fwd = scope(eager_vs_compiled, "mlp_fwd")
    assert set(fwd["identical"]["names"]) == GEMMS
    assert fwd["identical"]["kernels_per_call"] == {"a": 3, "b": 3}
    both = {w["name"] for w in fwd["gpu_work"] if w["status"] == "both"}
    assert both == {*GEMMS, "Memset (Device)"}


def test_gelu_and_mul_are_replaced_by_the_fused_kernel(eager_vs_compiled: dict[str, Any]) -> None:
    fwd = scope(eager_vs_compiled, "mlp_fwd")
    only_a = {w["short"] for w in fwd["gpu_work"] if w["status"] == "only_a"}
    only_b = [w["name"] for w in fwd["gpu_work"] if w["status"] == "only_b"]
    assert only_a == {"elementwise gelu ×8", "elementwise mul ×8"} and only_b == [FUSED]
    (replacement,) = fwd["replacements"]
    assert replacement["how"] == "fused" and replacement["b"] == [FUSED]
    assert replacement["ops"] == ["gelu", "mul"] and len(replacement["a"]) == 2
    assert replacement["kernels_per_call"] == {"a": 2, "b": 1}
    assert replacement["us_per_call"]["b"] < replacement["us_per_call"]["a"]


def test_headlines_say_what_the_issue_asks(eager_vs_compiled: dict[str, Any]) -> None:
    text = "\n".join(eager_vs_compiled["headlines"])
    assert "mlp_fwd, per call: kernels 5 → 4" in text
    assert "3 kernels per call (2 names) are byte-identical" in text
    assert all(g in text for g in GEMMS)
    assert "2 ATen kernels per call (elementwise gelu ×8, elementwise mul ×8" in text
    assert f"replaced by 1 Inductor kernel per call ({FUSED}" in text
    assert "GPU time 233.7 µs → 206.4 µs (-27.2 µs, -11.7%)" in text
    assert "torch.compile CPU pre-ops new in B:" in text and "TorchDynamo Cache Lookup" in text


def test_dispatch_chains_collapse_to_bare_mm(eager_vs_compiled: dict[str, Any]) -> None:
    chains = {c["text"]: c for c in scope(eager_vs_compiled, "mlp_fwd")["chains"]}
    eager_mm = chains["aten::linear → aten::matmul → aten::mm"]
    assert eager_mm["status"] == "only_a" and eager_mm["launches"] and eager_mm["a"]["per_call"] == 3
    assert chains["aten::mm"]["status"] == "only_b" and chains["aten::mm"]["b"]["per_call"] == 3
    assert chains[FUSED]["status"] == "only_b" and chains[FUSED]["launches"]
    gone_metadata = {t for t, c in chains.items() if c["status"] == "only_a" and not c["launches"]}
    assert "aten::linear → aten::t" in gone_metadata
    assert "aten::linear → aten::t → aten::transpose → aten::as_strided" in gone_metadata
    assert not any("Torch-Compiled" in t or "Dynamo" in t for t in chains)  # pre-ops are listed apart


def test_launch_call_mix(eager_vs_compiled: dict[str, Any]) -> None:
    calls = {c["name"]: c for c in scope(eager_vs_compiled, "mlp_fwd")["launch_calls"]}
    assert calls["cudaLaunchKernel"]["status"] == "only_a" and calls["cudaLaunchKernel"]["a"]["per_call"] == 2
    assert calls["cuLaunchKernel"]["status"] == "only_b" and calls["cuLaunchKernel"]["b"]["per_call"] == 1
    assert calls["cuLaunchKernelEx"]["a"]["per_call"] == calls["cuLaunchKernelEx"]["b"]["per_call"] == 3
    assert calls["cudaMemsetAsync"]["status"] == "both"


def test_compile_preops_and_steps(eager_vs_compiled: dict[str, Any]) -> None:
    preops = {p["name"]: p for p in eager_vs_compiled["compile_preops"]}
    lookup = preops["TorchDynamo Cache Lookup"]
    assert lookup["status"] == "only_b" and lookup["a"] is None and lookup["b"]["calls"] == 3
    steps = eager_vs_compiled["steps"]
    assert [s["position"] for s in steps] == [0, 1, 2]
    assert all(s["delta"]["kernels"] == -1 for s in steps)
    whole = scope(eager_vs_compiled, "steps")
    assert whole["kind"] == "steps" and whole["a"]["kernels_per_call"] == 5


def test_json_schema_is_stable_and_strict_json(eager_vs_compiled: dict[str, Any]) -> None:
    data = json.loads(json.dumps(eager_vs_compiled, allow_nan=False))
    assert data["schema"] == SCHEMA == "tracetui.diff/1"
    assert list(data) == [
        "schema",
        "a",
        "b",
        "headlines",
        "scopes",
        "unpaired_annotations",
        "steps",
        "compile_preops",
    ]
    trace_keys = {"path", "name", "format", "events", "devices", "steps", "annotations", "command"}
    assert set(data["a"]) == set(data["b"]) == trace_keys
    record_keys = {"kind", "name", "a", "b", "delta", "gpu_work", "chains", "launch_calls", "identical"}
    for record in data["scopes"]:
        assert record_keys | {"replacements", "headlines"} == set(record)
        for work in record["gpu_work"]:
            assert {"name", "category", "short", "family", "kind", "status", "a", "b"} == set(work)
            assert (work["a"] is None) == (work["status"] == "only_b")
        for chain in record["chains"]:
            assert {"chain", "text", "status", "a", "b", "launches"} == set(chain)


def test_reverse_direction_splits_the_fused_kernel() -> None:
    data = diff_data(fixture("mlp_compiled"), fixture("mlp_eager"))
    (replacement,) = scope(data, "mlp_fwd")["replacements"]
    assert replacement["how"] == "unfused" and replacement["a"] == [FUSED] and len(replacement["b"]) == 2
    assert any("split into 2 ATen kernels" in h for h in data["headlines"])
    assert any("pre-ops gone in B" in h for h in data["headlines"])


def test_a_trace_against_itself_changes_nothing() -> None:
    data = diff_data(fixture("mlp_eager"), fixture("mlp_eager"))
    for record in data["scopes"]:
        assert all(v == 0 for v in record["delta"].values() if v is not None)
        for key in ("gpu_work", "chains", "launch_calls"):
            assert {i["status"] for i in record[key]} == {"both"}
        assert record["replacements"] == []
    assert data["compile_preops"] == [] and not data["unpaired_annotations"]["a"]


def test_sample_traces_eager_vs_hand_written_triton() -> None:
    data = diff_data(sample("mlp_eager"), sample("mlp_triton"))
    fwd = scope(data, "mlp_fwd")
    assert (fwd["a"]["kernels_per_call"], fwd["b"]["kernels_per_call"]) == (5, 4)
    assert [w["name"] for w in fwd["gpu_work"] if w["status"] == "only_b"] == ["_geglu_fwd_kernel"]
    # the kernel's name says geglu, i.e. gelu and mul: it replaces ATen's two kernels as their fusion
    (replacement,) = fwd["replacements"]
    assert replacement["how"] == "fused" and replacement["b"] == ["_geglu_fwd_kernel"]
    assert replacement["ops"] == ["gelu", "mul"] and replacement["kernels_per_call"] == {"a": 2, "b": 1}
    assert replacement["us_per_call"]["b"] < replacement["us_per_call"]["a"]
    assert any(
        "replaced by 1 Triton kernel per call (_geglu_fwd_kernel" in h and h.endswith("covers gelu, mul")
        for h in data["headlines"]
    )
    chains = {c["text"]: c["status"] for c in fwd["chains"]}
    assert chains["GeGLUFunction"] == "only_b" and chains["aten::gelu"] == "only_a"


def test_sample_traces_eager_vs_fused_gate_up_gemm() -> None:
    data = diff_data(sample("mlp_eager"), sample("mlp_triton_fused"))
    fwd = scope(data, "mlp_fwd")
    assert (fwd["a"]["kernels_per_call"], fwd["b"]["kernels_per_call"]) == (5, 2)
    assert (fwd["a"]["memsets_per_call"], fwd["b"]["memsets_per_call"]) == (2, 0)
    # down's GEMM is the same cuBLAS kernel; gate's and up's GEMMs, gelu and mul became one kernel
    assert fwd["identical"]["names"] == ["nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT"]
    (replacement,) = fwd["replacements"]
    assert replacement["how"] == "fused" and replacement["b"] == ["_gate_up_gemm_geglu_kernel"]
    assert replacement["ops"] == ["gemm", "gelu", "mul"]
    assert replacement["kernels_per_call"] == {"a": 4, "b": 1}
    assert replacement["a"][0] == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
    assert replacement["us_per_call"]["b"] < replacement["us_per_call"]["a"]
    assert any(
        "4 kernels per call" in h
        and "replaced by 1 Triton kernel per call (_gate_up_gemm_geglu_kernel" in h
        and h.endswith("the fused kernel covers gemm, gelu, mul")
        for h in data["headlines"]
    )


def test_sample_traces_inductor_vs_hand_written_triton() -> None:
    data = diff_data(sample("mlp_compiled"), sample("mlp_triton"))
    # two fusions of gelu·mul, neither listing the other's ops as its own: paired as what is left over
    (replacement,) = scope(data, "mlp_fwd")["replacements"]
    assert replacement["how"] == "other" and replacement["b"] == ["_geglu_fwd_kernel"]
    assert replacement["a"] == ["triton_poi_fused__unsafe_view_gelu_mul_0"]
    assert replacement["kernels_per_call"] == {"a": 1, "b": 1}


def test_no_annotations_compares_the_whole_trace() -> None:
    data = diff_data(fixture("cpu_only"), fixture("cuda_graph_replay"))
    (whole,) = data["scopes"]
    assert whole["kind"] == "trace" and whole["a"]["calls"] == whole["b"]["calls"] == 1
    assert whole["a"]["kernels_per_call"] == 0 and whole["b"]["kernels_per_call"] > 0
    calls = {c["name"]: c["status"] for c in whole["launch_calls"]}
    assert calls["cudaGraphLaunch"] == "only_b"
    assert data["steps"] == []
    assert data["headlines"][0].startswith("whole trace: kernels 0 → ")


def test_unpaired_annotations_and_steps() -> None:
    a, b = fixture("mlp_train_tbhandler_stack_memory.pt.trace"), fixture("mlp_eager")
    data = diff_data(a, b)
    assert {r["name"] for r in data["unpaired_annotations"]["a"]} >= {"my_fwd"}
    assert [r["name"] for r in data["unpaired_annotations"]["b"]] == ["mlp_fwd"]
    assert [s["name"] for s in data["scopes"]] == ["steps"]
    assert len(a.steps) == 2 and len(data["steps"]) == 3
    assert data["steps"][2]["a"] is None and data["steps"][2]["delta"] is None


def test_report_renders_every_section(eager_vs_compiled: dict[str, Any]) -> None:
    text = render(eager_vs_compiled)
    for part in (
        "A  mlp_eager.json.gz",
        "What changed",
        "GPU work (per call)",
        "Dispatch chains (per call)",
        "Runtime / driver calls (per call)",
        "Steps (paired by position)",
        "torch.compile CPU pre-ops",
        "+  inductor poi _unsafe_view+gelu+mul #0",
        "−  aten::linear → aten::t ",
        "+  aten::mm ",
        "−  cudaLaunchKernel",
    ):
        assert part in text, part


def test_report_marks_changed_counts() -> None:
    text = render(diff_data(sample("mlp_eager"), sample("mlp_triton")))
    assert "~  cuLaunchKernelEx" in text  # in both, 3 → 4 per call


def test_trace_text_is_never_markup(tmp_path: Path) -> None:
    kernel_name, op_name = "[bold red]evil[/]", "[link=https://x]op[/link]"
    a = load(markup_names_trace(tmp_path, kernel_name, op_name))
    data = diff_data(a, fixture("mlp_eager"))
    text = render(data)
    assert op_name in text and "[bold red]evil[/]" in text


def test_gemm_with_bias_epilogue_replaces_gemm_and_add() -> None:
    data = diff_data(sample("matmul_add_eager"), sample("linear_eager"))
    assert [s["kind"] for s in data["scopes"]] == ["steps"]  # matmul_add_fwd and linear_fwd do not pair
    (replacement,) = scope(data, "steps")["replacements"]
    assert replacement["how"] == "fused" and replacement["ops"] == ["gemm", "add"]
    assert replacement["b"] == ["nvjet_sm90_tst_64x8_64x16_1x2_h_bz_bias_TNT"] and len(replacement["a"]) == 2
    assert any(
        "1 cuBLASLt kernel per step (nvjet_sm90_tst_64x8_64x16_1x2_h_bz_bias_TNT" in h
        for h in data["headlines"]
    )


def test_a_step_without_duration_diffs_as_unknown(tmp_path: Path) -> None:
    """Found by fuzzing: a ``ProfilerStep#N`` whose ``dur`` is missing."""
    doc = json.loads(gzip.decompress(fixture("mlp_compiled").path.read_bytes()))
    step = next(e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#"))
    del step["dur"]
    path = tmp_path / "no_step_dur.json"
    path.write_text(json.dumps(doc))
    data = diff_data(fixture("mlp_compiled"), load(path))
    first = data["steps"][0]
    assert first["delta"]["cpu_us"] is None
    Console(file=io.StringIO(), width=120).print(diff_renderable(data))  # the report copes too


def test_diff_json_carries_the_aligned_tree() -> None:
    """``diff --json``'s ``tree``: the comparison screen's pairs, flat in preorder (docs/compare.md)."""
    from click.testing import CliRunner

    from tracetui.cli import cli

    eager, compiled = (str(FIXTURES / f"{n}.json.gz") for n in ("mlp_eager", "mlp_compiled"))
    result = CliRunner().invoke(cli, ["diff", eager, compiled, "--json"], catch_exceptions=False)
    tree = json.loads(result.output)["tree"]
    assert [r["index"] for r in tree] == list(range(len(tree)))
    for record in tree:
        parent = record["parent"]
        assert record["depth"] == (0 if parent is None else tree[parent]["depth"] + 1)
        assert record["status"] in ("same", "changed", "only_a", "only_b")
        assert (record["a"] is None) == (record["status"] == "only_b")
        assert (record["b"] is None) == (record["status"] == "only_a")
    tops = [
        (r["status"], r["a"]["name"], r["b"]["name"]) for r in tree if r["depth"] == 0 and r["a"] and r["b"]
    ]
    steps = [("changed", f"ProfilerStep#{n}", f"ProfilerStep#{n}") for n in (2, 3, 4)]
    assert tops[:3] == steps
    forward = [r for r in tree if r["a"] and r["b"] and r["a"]["name"] == "mlp_fwd"]
    assert len(forward) == 3  # one per step
    assert {(r["a"]["kernels"], r["b"]["kernels"]) for r in forward} == {(5, 4)}  # "kernels 5 → 4"
    assert all("kernels" in r["changed"] for r in forward)
    kernels = [r for r in tree if (r["a"] or r["b"])["kind"] == "kernel"]
    fused = {r["status"] for r in kernels if r["b"] and r["b"]["name"] == FUSED}
    assert fused == {"only_b"}
    gemms = {r["status"] for r in kernels if r["a"] and r["a"]["name"] in GEMMS}
    assert gemms == {"same"}  # byte-identical in A and B, paired
    assert any(r["opened"] and r["b"]["name"].startswith("Torch-Compiled Region") for r in tree if r["b"])


def test_the_aligned_tree_of_a_3000_level_stack_is_flat_json(deep_path: Path) -> None:
    from tracetui.compare.pair_tree import PairTree, tree_records
    from tracetui.views.tree import TreeModel

    model = TreeModel(load(deep_path))
    records = tree_records(PairTree(model, model))
    assert max(r["depth"] for r in records) >= 3000
    assert {r["status"] for r in records} == {"same"}
    assert json.loads(json.dumps(records)) == records  # no nesting: no recursion limit


def test_a_step_without_duration_does_not_crash_the_headlines(tmp_path: Path) -> None:
    """Found by the mutation test: B's only step has no ``dur``, so its CPU time per call is unknown
    and the change is written as ``-``."""
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 5.0}
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"traceEvents": [step], "baseTimeNanoseconds": 1}))
    data = diff_data(load(FIXTURES / "mlp_eager.json.gz"), load(path))
    headlines = [h for scope in data["scopes"] for h in scope["headlines"]]
    assert any("CPU time" in h and "→ - (-)" in h for h in headlines), headlines
