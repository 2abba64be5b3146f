"""The Triton GeGLU kernels against a float64 PyTorch reference (GPU only; run on the H200)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

SHAPES = [(1, 1), (3, 5), (8192, 3072), (1000, 4097), (2, 3, 7)]
# ‖out − ref‖ / ‖ref‖ bounds: fp32 math, output rounded to the dtype (bf16 has an 8-bit mantissa).
TOLERANCE = {"bfloat16": 1e-2, "float32": 1e-5}


def _rel(actual, expected) -> float:
    return ((actual.double() - expected).norm() / expected.norm().clamp_min(1e-300)).item()


def _reference(g, u, dy):
    import torch
    import torch.nn.functional as F

    g64 = g.detach().double().requires_grad_()
    u64 = u.detach().double().requires_grad_()
    out = F.gelu(g64, approximate="tanh") * u64
    dg, du = torch.autograd.grad(out, (g64, u64), dy.double())
    return out.detach(), dg, du


@pytest.mark.parametrize("dtype_name", list(TOLERANCE))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_forward_and_backward_match_float64(shape: tuple[int, ...], dtype_name: str) -> None:
    import torch

    from tracetui.workloads.geglu_triton import geglu, geglu_forward

    dtype = getattr(torch, dtype_name)
    g = (torch.randn(shape, device="cuda") * 2).to(dtype).requires_grad_()
    u = torch.randn(shape, device="cuda").to(dtype).requires_grad_()
    dy = torch.randn(shape, device="cuda").to(dtype)
    ref, dg_ref, du_ref = _reference(g, u, dy)

    poisoned = torch.full(shape, float("nan"), device="cuda", dtype=dtype)
    out = geglu_forward(g.detach(), u.detach(), out=poisoned)
    assert out.data_ptr() == poisoned.data_ptr()
    assert not out.isnan().any(), "some output elements were not written"

    out = geglu(g, u)
    assert out.dtype == dtype and out.shape == g.shape
    out.backward(dy)
    tol = TOLERANCE[dtype_name]
    assert _rel(out, ref) < tol
    assert _rel(g.grad, dg_ref) < tol
    assert _rel(u.grad, du_ref) < tol


def test_non_contiguous_inputs_and_empty() -> None:
    import torch

    from tracetui.workloads.geglu_triton import geglu

    g = torch.randn(64, 130, device="cuda").t()  # non-contiguous view
    u = torch.randn(130, 64, device="cuda")
    ref, _, _ = _reference(g, u, torch.ones_like(g))
    assert _rel(geglu(g, u), ref) < TOLERANCE["float32"]
    empty = torch.empty(0, 7, device="cuda")
    assert geglu(empty, empty).shape == (0, 7)


def test_no_recompilation_per_shape() -> None:
    import torch

    from tracetui.workloads.geglu_triton import _geglu_fwd_kernel, geglu_forward

    caches = getattr(_geglu_fwd_kernel, "device_caches", None)
    if caches is None:
        pytest.skip("this triton keeps its kernel cache elsewhere")

    def run(shapes: list[tuple[int, int]]) -> int:
        for shape in shapes:
            g = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
            geglu_forward(g, g)
        return len(caches[torch.cuda.current_device()][0])

    # size classes: odd; a multiple of 16 but of no block (3216, 5360); a multiple of every block
    seen = run([(1000, 4097), (3, 1072), (64, 3072)])
    assert run([(77, 4097), (999, 4099), (5, 1072), (128, 3072), (8192, 3072)]) == seen


@pytest.mark.parametrize(
    "config",
    [(512, 2, "evict_first"), (1024, 4, ""), (2048, 8, "evict_last"), (8192, 16, "")],
    ids=lambda c: "-".join(map(str, c)),
)
def test_launch_configurations_agree(config: tuple[int, int, str]) -> None:
    import torch

    from tracetui.workloads.geglu_triton import LaunchConfig, geglu_backward, geglu_forward

    launch = LaunchConfig(block=config[0], num_warps=config[1], evict=config[2])
    g, u, dy = (torch.randn(1000, 4097, device="cuda") for _ in range(3))
    ref, dg_ref, du_ref = _reference(g, u, dy)
    assert _rel(geglu_forward(g, u, config=launch), ref) < TOLERANCE["float32"]
    dg, du = geglu_backward(dy, g, u, config=launch)
    assert _rel(dg, dg_ref) < TOLERANCE["float32"] and _rel(du, du_ref) < TOLERANCE["float32"]


def test_mismatched_inputs_are_rejected() -> None:
    import torch

    from tracetui.workloads.geglu_triton import geglu

    g = torch.randn(4, 8, device="cuda")
    with pytest.raises(ValueError, match="share shape"):
        geglu(g, torch.randn(4, 9, device="cuda"))
    with pytest.raises(ValueError, match="CUDA device"):
        geglu(g.cpu(), g.cpu())
