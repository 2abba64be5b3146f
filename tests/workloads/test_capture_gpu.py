"""``tracetui capture`` on the GPU: Triton kernels in the trace, CUDA-graph replays (run on the H200)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from .helpers import TINY_MLP, complete_names, read_trace, run_cli

pytestmark = pytest.mark.gpu
SMALL_MLP = ["--batch", "8", "--seq", "16", "--dim", "64", "--hidden", "256"]


def test_triton_train_capture(tmp_path: Path) -> None:
    run = run_cli("capture", "mlp", "--kernel", "triton", "--train", *SMALL_MLP, cwd=tmp_path, cpu=False)
    assert run.returncode == 0, run.stderr
    trace = read_trace(tmp_path / "mlp_triton_train.json.gz")
    kernels = Counter(complete_names(trace, "kernel"))
    assert kernels["_geglu_fwd_kernel"] == 3 and kernels["_geglu_bwd_kernel"] == 3
    assert not any("gelu" in name.lower() and not name.startswith("_geglu") for name in kernels)
    annotations = complete_names(trace, "user_annotation")
    assert annotations.count("mlp_fwd") == 3 and annotations.count("backward") == 3
    meta = trace["tracetui"]
    assert meta["device"] == "cuda" and meta["versions"]["gpu"] and meta["versions"]["triton"]


def test_cuda_graph_capture_replays_one_launch(tmp_path: Path) -> None:
    run = run_cli("capture", "mlp", "--cuda-graph", *TINY_MLP, cwd=tmp_path, cpu=False)
    assert run.returncode == 0, run.stderr
    trace = read_trace(tmp_path / "mlp_cudagraph.json.gz")
    launches = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["name"] == "cudaGraphLaunch"]
    assert len(launches) == 3
    correlation = launches[0]["args"]["correlation"]
    kernels = [
        e
        for e in trace["traceEvents"]
        if e.get("cat") == "kernel" and e["args"].get("correlation") == correlation
    ]
    assert len(kernels) >= 4  # gate, up, gelu, mul, down: several kernels share one launch
    assert complete_names(trace, "user_annotation").count("mlp_fwd") == 3
