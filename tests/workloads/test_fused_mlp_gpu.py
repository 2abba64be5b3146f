"""The fused gate/up GEMM + GeGLU kernel against float64 PyTorch, and its 2-kernel MLP trace (GPU only)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from .helpers import complete_names, read_trace, run_cli

pytestmark = pytest.mark.gpu

# (M, N, K): odd sizes in every dimension, sizes under one block, a K tail, unaligned rows (no TMA)
# and aligned ones (TMA), and the blog's shape.
SHAPES = [
    (1, 1, 1),
    (5, 3, 7),
    (33, 17, 40),
    (257, 129, 136),
    (1000, 4097, 77),
    (640, 384, 200),
    (8192, 3072, 768),
]
# ‖out − ref‖ / ‖ref‖ bounds against float64: fp32 accumulation, tanh.approx.f32 (abs error ~5e-4)
# and the output's rounding (bf16 keeps 8 bits of mantissa, fp16 11)
TOLERANCE = {"bfloat16": 1e-2, "float16": 2e-3}
TUNED = {(33, 17, 40), (8192, 3072, 768)}  # shapes also run with the tuner's choice (config None)
SMALL_MLP = ["--batch", "8", "--seq", "16", "--dim", "64", "--hidden", "256"]
KERNEL = "_gate_up_gemm_geglu_kernel"


def _rel(actual, expected) -> float:
    return ((actual.double() - expected).norm() / expected.norm().clamp_min(1e-300)).item()


def _inputs(m: int, n: int, k: int, dtype_name: str):
    import torch

    dtype = getattr(torch, dtype_name)
    x = torch.randn(m, k, device="cuda").to(dtype)
    wg, wu = ((torch.randn(n, k, device="cuda") / k**0.5).to(dtype) for _ in range(2))
    return x, wg, wu


def _reference(x, wg, wu):
    import torch.nn.functional as F

    g, u = x.double() @ wg.double().t(), x.double() @ wu.double().t()
    return F.gelu(g, approximate="tanh") * u, g, u


def _configs(x, wg, wu) -> list:
    """The first candidate of each kind this problem can take: pointers or TMA, one program a tile or
    persistent (every candidate compiles anew for each size class, so the tuner runs only on TUNED)."""
    from tracetui.workloads.fused_mlp_triton import CANDIDATES, _tma_ok

    out = x.new_empty(x.shape[0], wg.shape[0])
    kinds = {(c.tma, c.persistent): c for c in reversed(CANDIDATES) if _tma_ok(x, wg, wu, out) or not c.tma}
    return list(kinds.values())


@pytest.mark.parametrize("dtype_name", list(TOLERANCE))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_forward_matches_float64(shape: tuple[int, int, int], dtype_name: str) -> None:
    import torch

    from tracetui.workloads.fused_mlp_triton import gate_up_geglu_forward

    x, wg, wu = _inputs(*shape, dtype_name)
    ref, g_ref, u_ref = _reference(x, wg, wu)
    tol = TOLERANCE[dtype_name]
    configs = _configs(x, wg, wu)
    assert len(configs) == (4 if shape[2] % 8 == 0 and shape[1] % 8 == 0 else 2)
    for config in configs + ([None] if shape in TUNED else []):
        poisoned = torch.full((shape[0], shape[1]), float("nan"), device="cuda", dtype=x.dtype)
        out, g, u = gate_up_geglu_forward(x, wg, wu, out=poisoned, save=config is not None, config=config)
        assert out.data_ptr() == poisoned.data_ptr() and out.dtype == x.dtype
        assert not out.isnan().any(), f"{config}: some output elements were not written"
        assert _rel(out, ref) < tol, config
        if config is not None:
            assert _rel(g, g_ref) < tol and _rel(u, u_ref) < tol, config


def test_tuning_keeps_the_fastest_and_reports_every_candidate() -> None:
    from tracetui.workloads.fused_mlp_triton import CANDIDATES, gate_up_geglu_forward, tuning

    x, wg, wu = _inputs(512, 256, 128, "bfloat16")
    gate_up_geglu_forward(x, wg, wu)
    tuned = tuning(x, wg)
    assert tuned is not None and [t.config for t in tuned.timings] == list(CANDIDATES)
    ran = [t for t in tuned.timings if t.us is not None]
    assert ran and all(t.us > 0 and "regs" in t.resources for t in ran)
    assert tuned.best == min(ran, key=lambda t: t.us).config
    assert all(t.error for t in tuned.timings if t.us is None)


@pytest.mark.parametrize("dtype_name", list(TOLERANCE))
def test_backward_matches_float64(dtype_name: str) -> None:
    import torch
    import torch.nn.functional as F

    from tracetui.workloads.fused_mlp_triton import gate_up_geglu

    x, wg, wu = _inputs(3 * 67, 96, 40, dtype_name)
    x = x.reshape(3, 67, 40).requires_grad_()
    wg.requires_grad_()
    wu.requires_grad_()
    out = gate_up_geglu(x, wg, wu)
    assert out.shape == (3, 67, 96) and out.dtype == x.dtype
    dy = torch.randn_like(out)
    out.backward(dy)
    x64, wg64, wu64 = (t.detach().double().requires_grad_() for t in (x, wg, wu))
    ref = F.gelu(x64 @ wg64.t(), approximate="tanh") * (x64 @ wu64.t())
    ref.backward(dy.double())
    tol = TOLERANCE[dtype_name] * 2  # the gradients of g and u are rounded before their GEMMs
    assert _rel(out, ref.detach()) < TOLERANCE[dtype_name]
    for t, t64 in ((x, x64), (wg, wg64), (wu, wu64)):
        assert _rel(t.grad, t64.grad) < tol


def test_mlp_module_matches_eager() -> None:
    import torch

    from tracetui.workloads.mlp import build

    shapes = {"batch": 4, "seq": 33, "dim": 96, "hidden": 200}
    outputs = {}
    for kernel in ("torch", "triton-fused"):
        torch.manual_seed(0)
        model, x = build(shapes, torch.bfloat16, torch.device("cuda"), kernel)
        with torch.no_grad():
            outputs[kernel] = model(x).double()
    eager = outputs["torch"]
    assert ((outputs["triton-fused"] - eager).norm() / eager.norm()).item() < 2e-2


def test_bad_inputs_are_refused() -> None:
    import torch

    from tracetui.workloads.fused_mlp_triton import GemmConfig, gate_up_geglu_forward

    x, wg, wu = _inputs(16, 8, 8, "bfloat16")
    with pytest.raises(ValueError, match="bfloat16 or all float16"):
        gate_up_geglu_forward(x.float(), wg.float(), wu.float())
    with pytest.raises(ValueError, match=r"wg, wu \[N, K\]"):
        gate_up_geglu_forward(x, wg, wu[:4])
    odd = torch.randn(16, 7, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="16-byte aligned"):
        gate_up_geglu_forward(odd, odd[:8], odd[:8], config=GemmConfig(tma=True))


def test_capture_two_kernels_per_forward(tmp_path: Path) -> None:
    # the blog's shape, where cuBLAS runs down's GEMM as one kernel (tiny shapes can take a split-K pair)
    run = run_cli("capture", "mlp", "--kernel", "triton-fused", cwd=tmp_path, cpu=False)
    assert run.returncode == 0, run.stderr
    trace = read_trace(tmp_path / "mlp_triton_fused.json.gz")
    kernels = Counter(complete_names(trace, "kernel"))
    assert kernels[KERNEL] == 3 and sum(kernels.values()) == 6, kernels  # the fused one and down's GEMM
    assert not any("gelu" in name.lower() or "mul" in name.lower() for name in kernels if name != KERNEL)
    assert complete_names(trace, "user_annotation").count("mlp_fwd") == 3
    assert trace["tracetui"]["variant"]["kernel"] == "triton-fused"


def test_capture_train(tmp_path: Path) -> None:
    run = run_cli(
        "capture", "mlp", "--kernel", "triton-fused", "--train", *SMALL_MLP, cwd=tmp_path, cpu=False
    )
    assert run.returncode == 0, run.stderr
    trace = read_trace(tmp_path / "mlp_triton_fused_train.json.gz")
    kernels = Counter(complete_names(trace, "kernel"))
    assert kernels[KERNEL] == 3 and kernels["_geglu_bwd_kernel"] == 3
    annotations = complete_names(trace, "user_annotation")
    assert annotations.count("mlp_fwd") == 3 and annotations.count("backward") == 3
