"""This project's GeGLU kernel in Triton: ``gelu(g, approximate="tanh") * u`` in one pass.

The forward reads ``g`` and ``u`` once and writes the output once; the backward reads ``dy``,
``g`` and ``u`` once and writes ``dg`` and ``du`` once. Both kernels walk the flattened tensors
with a 1-D grid (a masked tail when the size is not a multiple of the block), so any shape works
without a recompilation per shape: the compiled variants depend only on the dtype, pointer
alignment and a few size classes (a multiple of the block or not, of 16 or not, over 2³¹
elements or not). Math is fp32 inside; outputs are in the input dtype.

gelu_tanh(g) = 0.5·g·(1 + tanh(z)) with z = √(2/π)·(g + 0.044715·g³); since
0.5·(1 + tanh(z)) = sigmoid(2z), the kernels compute g·sigmoid(2z), and the derivative
sigmoid(2z) + 2·g·s·(1 − s)·√(2/π)·(1 + 3·0.044715·g²) with s = sigmoid(2z).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

# Globals used inside @triton.jit functions must be constexpr.
_SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
_COEF = tl.constexpr(0.044715)
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# TRITON_INTERPRET=1 runs the kernels on the CPU (Triton's interpreter), for debugging without a GPU.
_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def _offsets(BLOCK: tl.constexpr, INDEX64: tl.constexpr):
    pid = tl.program_id(0)
    if INDEX64:
        pid = pid.to(tl.int64)
    return pid * BLOCK + tl.arange(0, BLOCK)


@triton.jit
def _load(ptr, offsets, n_elements, EVEN: tl.constexpr, EVICT: tl.constexpr):
    if EVEN:
        x = tl.load(ptr + offsets, eviction_policy=EVICT)
    else:
        x = tl.load(ptr + offsets, mask=offsets < n_elements, other=0.0, eviction_policy=EVICT)
    return x.to(tl.float32)


@triton.jit
def _store(ptr, offsets, value, n_elements, EVEN: tl.constexpr):
    if EVEN:
        tl.store(ptr + offsets, value.to(ptr.dtype.element_ty))
    else:
        tl.store(ptr + offsets, value.to(ptr.dtype.element_ty), mask=offsets < n_elements)


@triton.jit
def _geglu_fwd_kernel(
    g_ptr,
    u_ptr,
    out_ptr,
    n_elements,
    BLOCK: tl.constexpr,
    EVEN: tl.constexpr,
    INDEX64: tl.constexpr,
    EVICT: tl.constexpr,
):
    offsets = _offsets(BLOCK, INDEX64)
    g = _load(g_ptr, offsets, n_elements, EVEN, EVICT)
    u = _load(u_ptr, offsets, n_elements, EVEN, EVICT)
    z = _SQRT_2_OVER_PI * (g + _COEF * g * g * g)
    _store(out_ptr, offsets, g * tl.sigmoid(2.0 * z) * u, n_elements, EVEN)


@triton.jit
def _geglu_bwd_kernel(
    dy_ptr,
    g_ptr,
    u_ptr,
    dg_ptr,
    du_ptr,
    n_elements,
    BLOCK: tl.constexpr,
    EVEN: tl.constexpr,
    INDEX64: tl.constexpr,
    EVICT: tl.constexpr,
):
    offsets = _offsets(BLOCK, INDEX64)
    dy = _load(dy_ptr, offsets, n_elements, EVEN, EVICT)
    g = _load(g_ptr, offsets, n_elements, EVEN, EVICT)
    u = _load(u_ptr, offsets, n_elements, EVEN, EVICT)
    g2 = g * g
    s = tl.sigmoid(2.0 * _SQRT_2_OVER_PI * (g + _COEF * g2 * g))
    dgelu = s + 2.0 * _SQRT_2_OVER_PI * g * s * (1.0 - s) * (1.0 + 3.0 * _COEF * g2)
    _store(du_ptr, offsets, dy * g * s, n_elements, EVEN)
    _store(dg_ptr, offsets, dy * u * dgelu, n_elements, EVEN)


@dataclass(frozen=True)
class LaunchConfig:
    """How the kernels are launched: elements per program, warps per program, load eviction hint.

    The defaults come from ``python -m tracetui.workloads.bench --sweep`` on an H200 (bf16, [8192, 3072]):
    every block from 512 to 8192 elements lands within ~4% of the best, about twice the run-to-run
    noise; 4096 × 16 warps was at or near the top in every run; an eviction hint only cost time.
    """

    block: int = 4096
    num_warps: int = 16
    evict: str = ""  # "", "evict_first" or "evict_last"

    def meta(self, n: int) -> dict[str, object]:
        """Compile-time arguments for ``n`` elements: a class of sizes, never one particular size."""
        return {
            "BLOCK": self.block,
            "EVEN": n % self.block == 0,
            "INDEX64": n + self.block > 2**31 - 1,
            "EVICT": self.evict,
            "num_warps": self.num_warps,
        }


DEFAULT = LaunchConfig()


def _check(*tensors: torch.Tensor) -> None:
    first = tensors[0]
    for t in tensors:
        if t.shape != first.shape or t.dtype != first.dtype or t.device != first.device:
            raise ValueError(
                f"geglu: tensors must share shape, dtype and device, got {tuple(first.shape)} {first.dtype} "
                f"{first.device} and {tuple(t.shape)} {t.dtype} {t.device}"
            )
    if first.dtype not in _DTYPES:
        raise ValueError(f"geglu: dtype {first.dtype} is not supported (float16, bfloat16, float32)")
    if first.device.type != "cuda" and not _INTERPRET:
        raise ValueError(f"geglu: tensors must be on a CUDA device, not {first.device}")


def geglu_forward(
    g: torch.Tensor,
    u: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    config: LaunchConfig | None = None,
) -> torch.Tensor:
    """``gelu(g, approximate="tanh") * u`` in one kernel; ``out`` (contiguous, same shape) is optional."""
    _check(g, u)
    g, u = g.contiguous(), u.contiguous()
    if out is None:
        out = torch.empty_like(g)
    elif out.shape != g.shape or out.dtype != g.dtype or not out.is_contiguous():
        raise ValueError("geglu: out must be a contiguous tensor of the inputs' shape and dtype")
    n = g.numel()
    if n:
        config = config or DEFAULT
        _geglu_fwd_kernel[(triton.cdiv(n, config.block),)](g, u, out, n, **config.meta(n))
    return out


def geglu_backward(
    dy: torch.Tensor, g: torch.Tensor, u: torch.Tensor, *, config: LaunchConfig | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients ``(dg, du)`` of ``gelu(g) * u`` for the output gradient ``dy``, in one kernel."""
    _check(dy, g, u)
    dy, g, u = dy.contiguous(), g.contiguous(), u.contiguous()
    dg, du = torch.empty_like(g), torch.empty_like(u)
    n = g.numel()
    if n:
        config = config or DEFAULT
        _geglu_bwd_kernel[(triton.cdiv(n, config.block),)](dy, g, u, dg, du, n, **config.meta(n))
    return dg, du


class GeGLUFunction(torch.autograd.Function):
    """Autograd wrapper: Triton forward, Triton backward; saves ``g`` and ``u`` (no extra memory)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(g, u)
        return geglu_forward(g, u)

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, dy: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        g, u = ctx.saved_tensors  # type: ignore[attr-defined]
        return geglu_backward(dy, g, u)


def geglu(g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """``gelu(g, approximate="tanh") * u`` with the Triton kernels, differentiable in ``g`` and ``u``."""
    return GeGLUFunction.apply(g, u)
