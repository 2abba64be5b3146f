"""Device work of every accelerator (issue 14 item 7), cuDNN's CUTLASS convolutions (item 8) and the
kernel's dtype (item 9), on the synthetic fixtures of tests/synthetic_fixtures.py (SYNTHETIC: no
real MTIA or cuDNN-CUTLASS trace is at hand); expected figures by hand from the raw JSON."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracetui
from tests import synthetic_fixtures as synth
from tests.app.synthetic import kernel, op, write
from tracetui.app.widgets.details import describe
from tracetui.app.widgets.trace_header import device_names
from tracetui.insight.kernel_names import decode_kernel_name
from tracetui.insight.kernels import kernel_insight
from tracetui.views.insight import load_insight
from tracetui.views.tree import TreeModel


def raw(path: Path) -> list[dict[str, Any]]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


@pytest.mark.parametrize(
    ("path", "build"),
    [
        (synth.MTIA, synth.mtia_trace),
        (synth.CUDNN_CONV, synth.cudnn_conv_trace),
        (synth.ROCM, synth.rocm_trace),
    ],
)
def test_committed_fixtures_are_the_generators_output(path: Path, build: Any) -> None:
    assert gzip.decompress(path.read_bytes()) == gzip.decompress(synth.encode(build()))


# ---- MTIA ----------------------------------------------------------------------------------------------


def test_mtia_device_work_is_device_work_launched_by_its_runtime_calls() -> None:
    events = raw(synth.MTIA)
    ccp = [e for e in events if e.get("cat") == "mtia_ccp_events"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "mtia_runtime"}
    launched = [e for e in ccp if e["args"].get("correlation") in calls]
    assert ccp and launched and len(launched) < len(ccp)  # the fixture holds both kinds

    trace = tracetui.load(synth.MTIA)
    assert trace.format.startswith("PyTorch")  # not taken for a pre-2.0 trace
    assert len(trace.gpu) == len(ccp)
    assert trace.gpu["launch_id"].is_not_null().sum() == len(launched)
    assert len(trace.orphans) == len(ccp) - len(launched)
    # the device's lane is a device lane, not a CPU thread
    lanes = trace.tracks.filter(pl.col("pid") == str(synth.MTIA_DEVICE))
    assert lanes["kind"].to_list() == ["gpu"]
    # the device by name in the header, from the runtime that launched its work
    assert device_names(trace) == f"MTIA {synth.MTIA_DEVICE}"
    # per op, what it launched (by hand: the ccp events correlated to calls inside each aten::mm)
    mms = [e for e in events if e.get("name") == "aten::mm"]
    by_hand = sum(
        1
        for e in launched
        if any(m["ts"] <= calls[e["args"]["correlation"]]["ts"] <= m["ts"] + m["dur"] for m in mms)
    )
    mm = trace.ops.row(by_predicate=pl.col("name") == "aten::mm", named=True)
    assert mm["kernels"] == by_hand == len(mms)
    model = TreeModel(trace)
    text = describe(
        trace, model, int(trace.events.filter(pl.col("name") == "aten::mm")["id"][0]), load_insight(trace)
    )
    assert "no GPU activity" not in text.plain
    assert "kernels            1\n" in text.plain


# ---- cuDNN's CUTLASS convolutions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "op", "short"),
    [
        (synth.CUDNN_FPROP, "conv forward", "cudnn cutlass conv fprop bf16 128x128"),
        (synth.CUDNN_DGRAD, "conv data grad", "cudnn cutlass conv dgrad bf16 128x128"),
        (synth.CUDNN_WGRAD, "conv weight grad", "cudnn cutlass conv wgrad bf16 128x128"),
    ],
)
def test_cudnn_cutlass_convolutions_decode_as_convolutions(name: str, op: str, short: str) -> None:
    decoded = decode_kernel_name(name)
    assert (decoded.family, decoded.kind, decoded.op, decoded.short) == ("cudnn", "convolution", op, short)
    assert (decoded.tile, decoded.dtype) == ("128x128", "bf16")


def test_cudnn_convolutions_get_the_conv_roofline_from_their_ops_shapes() -> None:
    n, c, h, w = synth.X_DIMS
    k, _, r, s = synth.W_DIMS  # stride 1, padding 1: the output is as large as the input
    forward_flops = 2 * n * h * w * k * c * r * s
    rows = kernel_insight(tracetui.load(synth.CUDNN_CONV)).sort("id")
    assert rows["cost_kind"].to_list() == ["convolution"] * 3
    assert rows["flops"].to_list() == [forward_flops, 2 * forward_flops, 2 * forward_flops]  # dgrad + wgrad
    assert rows["roof_kind"].to_list() == ["convolution"] * 3
    assert all(v.startswith("compute-bound: ") and "bf16 GEMM" in v for v in rows["verdict"])
    x_bytes, w_bytes, out_bytes = (math.prod(d) * 2 for d in (synth.X_DIMS, synth.W_DIMS, [n, k, h, w]))
    assert rows["bytes"].to_list()[1] == (out_bytes + w_bytes) + (out_bytes + x_bytes) + x_bytes + w_bytes


def test_the_details_pane_shows_a_long_kernel_name_short_first() -> None:
    trace = tracetui.load(synth.CUDNN_CONV)
    model = TreeModel(trace)
    wgrad = int(trace.gpu.filter(pl.col("name") == synth.CUDNN_WGRAD)["id"][0])
    text = describe(trace, model, wgrad, load_insight(trace)).plain
    lines = text.splitlines()
    assert lines[0] == "cudnn cutlass conv wgrad bf16 128x128   cutlass__5x_cudnn::Kernel<…>"
    from tracetui.safetext import MAX_SHOWN

    assert len(synth.CUDNN_WGRAD) > 5000 and max(len(line) for line in lines) < MAX_SHOWN + 40
    assert f"Full name ({len(synth.CUDNN_WGRAD):,} characters)" in text
    assert f"…(+{len(synth.CUDNN_WGRAD) - MAX_SHOWN:,} chars)" in text  # cut as all outside text is


# ---- the kernel's dtype --------------------------------------------------------------------------------

SDPA_BPROP = (
    "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1_cga1x1x1_kernel0_0"
)


def test_the_launching_ops_types_win_over_the_kernel_name(tmp_path: Path) -> None:
    """The transformer trace's cuDNN attention backward: the name says f16, its op's inputs are bf16."""
    q = [16, 8, 256, 64]
    shapes = {"Input Dims": [q, q, q, q, q, [16, 8, 256, 1]], "Input type": ["c10::BFloat16"] * 5 + ["float"]}
    events = [
        op("aten::_cudnn_attention_backward", 10, 50, **shapes),
        op("cudaLaunchKernel", 12, 5, cat="cuda_runtime", correlation=1),
        kernel(SDPA_BPROP, 30, 20, 1),
    ]
    trace = tracetui.load(write(tmp_path / "sdpa.json", events))
    assert decode_kernel_name(SDPA_BPROP).dtype == "fp16"  # what the name says
    row = kernel_insight(trace).row(0, named=True)
    assert row["cost_dtype"] == "bf16"
    text = describe(trace, TreeModel(trace), row["id"], load_insight(trace)).plain
    assert "  dtype              bf16 (launching op's types; the name says fp16)\n" in text


# ---- ROCm ----------------------------------------------------------------------------------------------


def test_a_rocm_device_is_labelled_by_its_gfx_architecture() -> None:
    """Issue 37 item 6: an AMD trace was labelled ``sm94`` (``sm90`` for an MI250X: HIP reports
    compute capability 9.4 / 9.0) and its multiprocessors SMs."""
    import json as json_module

    from click.testing import CliRunner

    from tracetui.cli import cli

    runner = CliRunner()
    text = runner.invoke(cli, ["summary", str(synth.ROCM)], catch_exceptions=False).output
    assert "GPU 0: AMD Instinct MI300X (gfx942, 304 CUs)" in text and "sm94" not in text
    data = json_module.loads(runner.invoke(cli, ["summary", str(synth.ROCM), "--json"]).output)
    (device,) = data["trace"]["devices"]
    assert (device["vendor"], device["arch"], device["computeMajor"]) == ("amd", "gfx942", 9)
    h200 = json_module.loads(runner.invoke(cli, ["summary", str(synth.CUDNN_CONV), "--json"]).output)
    assert [(d["vendor"], d["arch"]) for d in h200["trace"]["devices"]] == [("nvidia", "sm90")]


def test_rocm_kernels_decode_to_their_libraries() -> None:
    """Tensile's ``Cijk_…`` GEMMs were called ``triton`` (a bare identifier); each kernel of the
    fixture, by its raw name, decodes to its library."""
    names = {e["name"] for e in raw(synth.ROCM) if e.get("cat") == "kernel"}
    expected = {
        synth.ROCM_KERNELS["addmm"]: ("hipblaslt", "gemm", "hipblaslt gemm+bias bf16 256x256 NN"),
        synth.ROCM_KERNELS["mm"]: ("tensile", "gemm", "tensile gemm fp16 128x128 TN"),
        synth.ROCM_KERNELS["batch_norm"]: ("miopen", "norm", "miopen BatchNormFwdTrainSpatial"),
        synth.ROCM_KERNELS["attention"]: ("composable-kernel", "attention", "ck_tile FmhaFwdKernel"),
        synth.ROCM_KERNELS["triton"]: ("inductor", "pointwise", "inductor poi mul+silu #0"),
    }
    assert names == set(expected)
    for name, (family, kind, short) in expected.items():
        k = decode_kernel_name(name)
        assert (k.family, k.kind, k.short) == (family, kind, short), name
    gemms = [decode_kernel_name(synth.ROCM_KERNELS[n]) for n in ("addmm", "mm")]
    assert [(k.arch, k.dtype, k.tile, k.stages, k.mma) for k in gemms] == [
        ("gfx942", "bf16", "256x256", "64", "mfma 16x16x1"),
        ("gfx942", "fp16", "128x128", "32", "mfma 32x32x8x1"),
    ]
    assert gemms[0].fused_ops == ("bias",)
    rows = kernel_insight(tracetui.load(synth.ROCM))
    assert "triton" not in set(rows["family"].to_list())
    copy = rows.filter(pl.col("family") == "memcpy").row(0, named=True)
    assert copy["short"] == "memcpy HtoD (hip)" and copy["copy"] == "host"
