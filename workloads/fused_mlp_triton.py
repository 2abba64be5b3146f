"""The MLP's gate and up projections and its GeGLU in one Triton GEMM kernel.

``gate_up_geglu(x, wg, wu)`` computes ``gelu(x @ wg.T, approximate="tanh") * (x @ wu.T)`` in one
launch of ``_gate_up_gemm_geglu_kernel``. A program owns a [BLOCK_M, BLOCK_N] tile of the output
and keeps two fp32 accumulators, gate and up: each step of the K loop loads one [BLOCK_M, BLOCK_K]
tile of ``x`` and the matching [BLOCK_N, BLOCK_K] tiles of ``wg`` and ``wu`` and issues two dots on
the same ``x`` tile, so ``x`` is read once for both products. The GeGLU runs in the epilogue on the
fp32 accumulators (``0.5·g·(1 + tanh(√(2/π)(g + 0.044715 g³)))·u``, ``tanh.approx.f32`` on the
GPU) and the tile is stored once, in the input dtype: the gate and up activations never reach
memory, unless a backward needs them (``save=True`` stores them too).

Launch variants (:class:`GemmConfig`): block sizes, warps and pipeline stages; loads through TMA
descriptors (Hopper's bulk tensor copy engine; rows must be 16-byte aligned) or through pointers
(any shape: the K tail is masked, rows past the edge re-read row 0 and are never stored); one
program per tile, or a persistent grid of one program per multiprocessor walking the tiles. The
first call for a problem (M, N, K, dtype, alignment, saving or not) times every candidate with
``triton.testing.do_bench`` and keeps the fastest (:func:`tuning`); a candidate that fails to
compile or launch (too much shared memory, say) is skipped and its error kept.

The backward (``GateUpGeGLU``) reads the saved gate and up activations: ``_geglu_bwd_kernel``
(:mod:`tracetui.workloads.geglu_triton`) gives their gradients, cuBLAS the four GEMMs of dx, dWg
and dWu. bf16 and fp16; x of at most 2³¹ elements per operand (32-bit offsets).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from tracetui.workloads.geglu_triton import geglu_backward

_SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
_COEF = tl.constexpr(0.044715)
DTYPES = (torch.bfloat16, torch.float16)
# TRITON_INTERPRET=1 runs the kernel on the CPU (Triton's interpreter): no inline PTX there.
_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
_MAX_ELEMENTS = 2**31 - 1


@triton.jit
def _tanh(z, FAST: tl.constexpr):
    if FAST:  # one MUFU instruction; max abs error ~5e-4, under bf16's rounding of the output
        t = tl.inline_asm_elementwise(
            "tanh.approx.f32 $0, $1;", "=f,f", [z], dtype=tl.float32, is_pure=True, pack=1
        )
    else:
        t = 2.0 * tl.sigmoid(2.0 * z) - 1.0
    return t


@triton.jit
def _tile_origin(tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """First row and column of output tile ``tile``; GROUP_M row-tiles walk their columns together."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    in_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    first_m = (tile // in_group) * GROUP_M
    group_size = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (tile % in_group) % group_size
    pid_n = (tile % in_group) // group_size
    return pid_m * BLOCK_M, pid_n * BLOCK_N


@triton.jit
def _store_tile(dst, value, m0, n0, M, N, stride_m, stride_n, BLOCK_M, BLOCK_N, TMA: tl.constexpr):
    if TMA:  # the copy engine clips the tile at the tensor's edge
        dst.store([m0, n0], value.to(dst.dtype))
    else:
        offs_m = m0 + tl.arange(0, BLOCK_M)
        offs_n = n0 + tl.arange(0, BLOCK_N)
        mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
        ptrs = dst + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n
        tl.store(ptrs, value.to(dst.dtype.element_ty), mask=mask)


@triton.jit
def _one_tile(
    x,
    wg,
    wu,
    out,
    g_out,
    u_out,
    tile,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    TMA: tl.constexpr,
    SAVE: tl.constexpr,
    FAST_TANH: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    m0, n0 = _tile_origin(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if TMA:  # out-of-bounds parts of a box read as zeros
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = x.load([m0, k * BLOCK_K])
            acc_g = tl.dot(a, wg.load([n0, k * BLOCK_K]).T, acc_g)
            acc_u = tl.dot(a, wu.load([n0, k * BLOCK_K]).T, acc_u)
    else:
        offs_m = m0 + tl.arange(0, BLOCK_M)
        offs_n = n0 + tl.arange(0, BLOCK_N)
        # rows and columns past the edge re-read row / column 0 (in bounds, never stored): no M, N mask
        offs_m = tl.where(offs_m < M, offs_m, 0)
        offs_n = tl.where(offs_n < N, offs_n, 0)
        offs_k = tl.arange(0, BLOCK_K)
        x_ptrs = x + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
        w_offsets = offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
        wg_ptrs = wg + w_offsets
        wu_ptrs = wu + w_offsets
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            if EVEN_K:
                a = tl.load(x_ptrs)
                bg = tl.load(wg_ptrs)
                bu = tl.load(wu_ptrs)
            else:
                left = K - k * BLOCK_K
                a = tl.load(x_ptrs, mask=offs_k[None, :] < left, other=0.0)
                bg = tl.load(wg_ptrs, mask=offs_k[:, None] < left, other=0.0)
                bu = tl.load(wu_ptrs, mask=offs_k[:, None] < left, other=0.0)
            acc_g = tl.dot(a, bg, acc_g)
            acc_u = tl.dot(a, bu, acc_u)
            x_ptrs += BLOCK_K * stride_xk
            wg_ptrs += BLOCK_K * stride_wk
            wu_ptrs += BLOCK_K * stride_wk
    z = _SQRT_2_OVER_PI * (acc_g + _COEF * acc_g * acc_g * acc_g)
    h = 0.5 * acc_g * (1.0 + _tanh(z, FAST_TANH)) * acc_u
    _store_tile(out, h, m0, n0, M, N, stride_om, stride_on, BLOCK_M, BLOCK_N, TMA)
    if SAVE:
        _store_tile(g_out, acc_g, m0, n0, M, N, stride_om, stride_on, BLOCK_M, BLOCK_N, TMA)
        _store_tile(u_out, acc_u, m0, n0, M, N, stride_om, stride_on, BLOCK_M, BLOCK_N, TMA)


@triton.jit
def _gate_up_gemm_geglu_kernel(
    x,
    wg,
    wu,
    out,
    g_out,
    u_out,
    M,
    N,
    K,
    stride_xm,
    stride_xk,
    stride_wn,
    stride_wk,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    TMA: tl.constexpr,
    PERSISTENT: tl.constexpr,
    NUM_SMS: tl.constexpr,
    SAVE: tl.constexpr,
    FAST_TANH: tl.constexpr,
    EVEN_K: tl.constexpr,
):
    """``out = gelu(x @ wg.T) * (x @ wu.T)`` (and ``g_out``, ``u_out`` = the two products if SAVE).

    ``x`` [M, K], ``wg`` and ``wu`` [N, K] (nn.Linear's layout), ``out`` [M, N]: tensors, or TMA
    descriptors of them when TMA (blocks [BLOCK_M, BLOCK_K], [BLOCK_N, BLOCK_K], [BLOCK_M, BLOCK_N]).
    """
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    if PERSISTENT:
        for tile in tl.range(tl.program_id(0), tiles, NUM_SMS, flatten=True):
            _one_tile(
                x, wg, wu, out, g_out, u_out, tile, M, N, K,
                stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
                BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, TMA, SAVE, FAST_TANH, EVEN_K,
            )  # fmt: skip
    else:
        _one_tile(
            x, wg, wu, out, g_out, u_out, tl.program_id(0), M, N, K,
            stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
            BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, TMA, SAVE, FAST_TANH, EVEN_K,
        )  # fmt: skip


@dataclass(frozen=True)
class GemmConfig:
    """One launch of the kernel: tile sizes, warps, pipeline stages, TMA loads, persistent grid."""

    block_m: int = 128
    block_n: int = 128
    block_k: int = 64
    num_warps: int = 8
    num_stages: int = 3
    tma: bool = False
    persistent: bool = False
    group_m: int = 8

    def label(self) -> str:
        """``128x128x64 w8 s3 tma persistent``."""
        words = [f"{self.block_m}x{self.block_n}x{self.block_k}", f"w{self.num_warps}", f"s{self.num_stages}"]
        words += ["tma"] if self.tma else []
        return " ".join(words + (["persistent"] if self.persistent else []))


# (block_m, block_n, block_k, warps, stages): a program's two accumulators make a 128 × 256 tile
# of products for the first two, the shape Hopper's wgmma runs best (one program per SM: 154+
# registers a thread); 128 × 64 and 64 × 128 with 2 or 3 stages leave room for 2 or 3 programs
# an SM, which overlap one's epilogue with another's loads. Each with TMA loads and without; the
# first three also as a persistent grid (one program per SM, the next tile's loads pipelined
# under this one's epilogue). Every one compiles for sm_90a with wgmma (HGMMA) and no spills.
_TILES = (
    (128, 128, 64, 8, 3),
    (128, 128, 64, 8, 4),
    (128, 64, 64, 4, 4),
    (128, 64, 64, 4, 3),
    (128, 64, 64, 4, 2),
    (64, 128, 64, 4, 4),
    (64, 128, 64, 4, 2),
    (256, 64, 64, 8, 3),
    (128, 128, 128, 8, 2),
)
_PERSISTENT_TILES = 3
CANDIDATES: tuple[GemmConfig, ...] = tuple(
    GemmConfig(bm, bn, bk, warps, stages, tma=tma, persistent=persistent)
    for tma in (True, False)
    for persistent in (False, True)
    for bm, bn, bk, warps, stages in (_TILES[:_PERSISTENT_TILES] if persistent else _TILES)
)
# A saving forward (training) times only the fastest few launches of the plain one, when known.
_SAVING_CANDIDATES = 4


@dataclass(frozen=True)
class Timed:
    """One candidate's outcome: µs (``do_bench`` median), or the error that ruled it out; its resources."""

    config: GemmConfig
    us: float | None
    error: str = ""
    resources: str = ""


@dataclass
class Tuning:
    """The candidates timed for one problem, and the fastest."""

    best: GemmConfig
    timings: list[Timed] = field(default_factory=list)


_TUNED: dict[tuple[Any, ...], Tuning] = {}
_SMS: dict[int, int] = {}


def resources(kernel: Any) -> str:
    """Registers per thread, spilled registers and shared memory of a compiled kernel (``""`` if unknown)."""
    try:
        return f"{kernel.n_regs} regs, {kernel.n_spills} spills, {kernel.metadata.shared // 1024} KiB shared"
    except AttributeError:
        return ""


def _num_sms(device: torch.device) -> int:
    if device.type != "cuda":
        return 4
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


def _tma_ok(*tensors: torch.Tensor) -> bool:
    """TMA needs 16-byte aligned bases and row strides, unit column strides (and compute capability 9+)."""
    if not _INTERPRET and (tensors[0].device.type != "cuda" or torch.cuda.get_device_capability()[0] < 9):
        return False
    return all(
        t.data_ptr() % 16 == 0 and t.stride(1) == 1 and (t.stride(0) * t.element_size()) % 16 == 0
        for t in tensors
    )


def _check(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor) -> None:
    if x.dim() != 2 or wg.dim() != 2 or wg.shape != wu.shape or x.shape[1] != wg.shape[1]:
        raise ValueError(
            f"gate_up_geglu: x must be [M, K] and wg, wu [N, K], got {tuple(x.shape)}, "
            f"{tuple(wg.shape)}, {tuple(wu.shape)}"
        )
    if x.dtype not in DTYPES or wg.dtype != x.dtype or wu.dtype != x.dtype:
        raise ValueError(
            f"gate_up_geglu: x, wg and wu must all be bfloat16 or all float16, got {x.dtype}, {wg.dtype}, "
            f"{wu.dtype}"
        )
    if len({x.device, wg.device, wu.device}) != 1 or (x.device.type != "cuda" and not _INTERPRET):
        raise ValueError(f"gate_up_geglu: tensors must be on one CUDA device, got {x.device}, {wg.device}")
    if max(x.numel(), wg.numel(), x.shape[0] * wg.shape[0]) > _MAX_ELEMENTS:
        raise ValueError("gate_up_geglu: operands of more than 2**31 - 1 elements are not supported")


def _launch(
    x: torch.Tensor,
    wg: torch.Tensor,
    wu: torch.Tensor,
    out: torch.Tensor,
    saved: tuple[torch.Tensor, torch.Tensor] | None,
    config: GemmConfig,
) -> Any:
    """Launch ``config``; returns the compiled kernel (None in the interpreter)."""
    (M, K), N = x.shape, wg.shape[0]
    bm, bn, bk = config.block_m, config.block_n, config.block_k
    g, u = saved if saved is not None else (out, out)
    operands: tuple[Any, ...] = (x, wg, wu, out, g, u)
    if config.tma:
        blocks = ([bm, bk], [bn, bk], [bn, bk], [bm, bn], [bm, bn], [bm, bn])
        operands = tuple(TensorDescriptor.from_tensor(t, b) for t, b in zip(operands, blocks, strict=True))
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    sms = _num_sms(x.device)
    grid = (min(tiles, sms) if config.persistent else tiles,)
    return _gate_up_gemm_geglu_kernel[grid](
        *operands,
        M,
        N,
        K,
        x.stride(0),
        x.stride(1),
        wg.stride(0),
        wg.stride(1),
        out.stride(0),
        out.stride(1),
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        GROUP_M=config.group_m,
        TMA=config.tma,
        PERSISTENT=config.persistent,
        NUM_SMS=sms if config.persistent else 1,
        SAVE=saved is not None,
        FAST_TANH=not _INTERPRET,
        EVEN_K=K % bk == 0 and not config.tma,
        num_warps=config.num_warps,
        num_stages=config.num_stages,
    )


def _key(x: torch.Tensor, wg: torch.Tensor, save: bool, tma: bool) -> tuple[Any, ...]:
    return (x.shape[0], wg.shape[0], x.shape[1], x.dtype, str(x.device), save, tma)


def _tune(
    x: torch.Tensor,
    wg: torch.Tensor,
    wu: torch.Tensor,
    out: torch.Tensor,
    saved: tuple[torch.Tensor, torch.Tensor] | None,
    tma: bool,
) -> Tuning:
    """Time the candidates this problem can use (median of ``do_bench``); the fastest wins."""
    candidates = [c for c in CANDIDATES if tma or not c.tma]
    plain = _TUNED.get(_key(x, wg, False, tma))
    if saved is not None and plain is not None:
        ran = sorted((t.us, i, t.config) for i, t in enumerate(plain.timings) if t.us is not None)
        candidates = [c for *_, c in ran[:_SAVING_CANDIDATES]] or candidates
    timings = []
    for config in candidates:
        try:
            kernel = _launch(x, wg, wu, out, saved, config)  # compiles; errors surface here
            torch.cuda.synchronize(x.device)
            ms = triton.testing.do_bench(
                lambda c=config: _launch(x, wg, wu, out, saved, c), warmup=5, rep=25, return_mode="median"
            )
            timings.append(Timed(config, float(ms) * 1e3, resources=resources(kernel)))
        except Exception as exc:  # out of shared memory or registers, a layout it cannot lower: skip it
            timings.append(Timed(config, None, f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"))
    timed = [(t.us, i, t.config) for i, t in enumerate(timings) if t.us is not None]
    if not timed:
        raise RuntimeError(
            "gate_up_geglu: no launch configuration ran: " + "; ".join(t.error for t in timings)
        )
    return Tuning(best=min(timed)[2], timings=timings)


def tuning(x: torch.Tensor, wg: torch.Tensor, *, save: bool = False) -> Tuning | None:
    """What the first call for this problem measured, or None if none ran yet."""
    return _TUNED.get(_key(x, wg, save, _tma_ok(x, wg)))


def gate_up_geglu_forward(
    x: torch.Tensor,
    wg: torch.Tensor,
    wu: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    save: bool = False,
    config: GemmConfig | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """``(h, g, u)``: ``h = gelu(x @ wg.T, approximate="tanh") * (x @ wu.T)`` for x [M, K], wg and wu
    [N, K]; ``g`` and ``u``, the two products, only with ``save`` (else None).

    ``config`` picks the launch; without it the first call for a problem tunes (see the module).
    ``out`` (contiguous [M, N], the inputs' dtype) is optional.
    """
    _check(x, wg, wu)
    x, wg, wu = x.contiguous(), wg.contiguous(), wu.contiguous()
    (M, _), N = x.shape, wg.shape[0]
    if out is None:
        out = torch.empty(M, N, device=x.device, dtype=x.dtype)
    elif out.shape != (M, N) or out.dtype != x.dtype or not out.is_contiguous():
        raise ValueError("gate_up_geglu: out must be a contiguous [M, N] tensor of the inputs' dtype")
    saved = (torch.empty_like(out), torch.empty_like(out)) if save else None
    if M == 0 or N == 0:
        return out, *(saved or (None, None))
    if x.shape[1] == 0:  # no products: gelu(0) * 0
        out.zero_()
        for t in saved or ():
            t.zero_()
        return out, *(saved or (None, None))
    tma = _tma_ok(x, wg, wu, out)
    if config is None:
        key = _key(x, wg, save, tma)
        if key not in _TUNED:
            _TUNED[key] = _tune(x, wg, wu, out, saved, tma)
        config = _TUNED[key].best
    elif config.tma and not tma:
        raise ValueError(
            f"gate_up_geglu: {config.label()} needs 16-byte aligned rows; these tensors' are not"
        )
    _launch(x, wg, wu, out, saved, config)
    return out, *(saved or (None, None))


class GateUpGeGLU(torch.autograd.Function):
    """Autograd wrapper: the fused forward (saving g and u), then the GeGLU backward kernel and cuBLAS."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor
    ) -> torch.Tensor:
        h, g, u = gate_up_geglu_forward(x, wg, wu, save=True)
        assert g is not None and u is not None
        ctx.save_for_backward(x, wg, wu, g, u)
        return h

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, dh: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        x, wg, wu, g, u = ctx.saved_tensors  # type: ignore[attr-defined]
        needs = ctx.needs_input_grad  # type: ignore[attr-defined]
        dg, du = geglu_backward(dh, g, u)
        dx = torch.addmm(dg @ wg, du, wu) if needs[0] else None
        return dx, dg.t() @ x if needs[1] else None, du.t() @ x if needs[2] else None


@torch.compiler.disable  # a graph break under torch.compile: Dynamo does not trace the tuner
def gate_up_geglu(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor) -> torch.Tensor:
    """``gelu(x @ wg.T, approximate="tanh") * (x @ wu.T)`` for x [..., K], in one kernel; differentiable."""
    flat = x.reshape(-1, x.shape[-1])
    if torch.is_grad_enabled() and any(t.requires_grad for t in (x, wg, wu)):
        h = GateUpGeGLU.apply(flat, wg, wu)
    else:
        h = gate_up_geglu_forward(flat, wg, wu)[0]
    return h.reshape(*x.shape[:-1], wg.shape[0])
