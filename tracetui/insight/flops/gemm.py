"""FLOPs and bytes of GEMMs: ``mm``, ``addmm``, ``_scaled_mm``, ``bmm``, ``baddbmm``,
``matmul``, ``linear``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from tracetui.insight.flops.args import broadcast_shape, concrete_arg, parse_int_list, tensor_arg
from tracetui.insight.flops.fields import SCALAR_TYPE_ENUM, Arg, OpCost

# --------------------------------------------------------------------------------------------
# GEMMs


def gemm_cost(
    a: Arg, b: Arg, out: Arg | None, extra_reads: Sequence[Arg] = (), notes: Sequence[str] = ()
) -> OpCost | None:
    assert a.dims is not None and b.dims is not None
    if len(a.dims) != 2 or len(b.dims) != 2 or a.dims[1] != b.dims[0]:
        return None
    m, k = a.dims
    n = b.dims[1]
    out_size = out.itemsize if out else a.itemsize
    return OpCost(
        flops=2 * m * n * k,
        bytes_read=a.nbytes + b.nbytes + sum(t.nbytes for t in extra_reads),
        bytes_written=int(m * n * out_size),
        dtype=a.dtype,
        kind="gemm",
        notes=(f"GEMM {m}×{k} @ {k}×{n}: 2·M·N·K FLOPs", *notes),
    )


_BIAS_NOTE = "bias add (M·N FLOPs) not counted, as in torch.utils.flop_counter"


def cost_mm(args: list[Arg]) -> OpCost | None:
    a, b = tensor_arg(args, 0), tensor_arg(args, 1)
    if a is None or b is None:
        return None
    return gemm_cost(a, b, tensor_arg(args, 2))


def cost_addmm(args: list[Arg]) -> OpCost | None:
    bias, a, b = tensor_arg(args, 0), tensor_arg(args, 1), tensor_arg(args, 2)
    if a is None or b is None:
        return None
    return gemm_cost(a, b, tensor_arg(args, 5), [bias] if bias else [], [_BIAS_NOTE])


def cost_scaled_mm(args: list[Arg]) -> OpCost | None:
    a, b = tensor_arg(args, 0), tensor_arg(args, 1)
    if a is None or b is None:
        return None
    out_type = None
    enum = parse_int_list(concrete_arg(args, 6))
    if enum and len(enum) == 1:
        out_type = SCALAR_TYPE_ENUM.get(enum[0])
    notes = ["scaled (fp8) GEMM"]
    if out_type is None:
        out_type = "c10::BFloat16"
        notes.append("output dtype not recorded: assumed bf16")
    scales = [t for t in (tensor_arg(args, 2), tensor_arg(args, 3), tensor_arg(args, 4)) if t]
    out = Arg((), out_type)
    return gemm_cost(a, b, out, scales, notes)


def _bmm_shape(a: Arg, b: Arg) -> tuple[int, int, int, int] | None:
    assert a.dims is not None and b.dims is not None
    if len(a.dims) != 3 or len(b.dims) != 3 or a.dims[0] != b.dims[0] or a.dims[2] != b.dims[1]:
        return None
    return a.dims[0], a.dims[1], b.dims[2], a.dims[2]


def _bmm_cost(a: Arg, b: Arg, extra: Sequence[Arg], out: Arg | None) -> OpCost | None:
    shape = _bmm_shape(a, b)
    if shape is None:
        return None
    batch, m, n, k = shape
    return OpCost(
        flops=2 * batch * m * n * k,
        bytes_read=a.nbytes + b.nbytes + sum(t.nbytes for t in extra),
        bytes_written=int(batch * m * n * (out.itemsize if out else a.itemsize)),
        dtype=a.dtype,
        kind="gemm",
        notes=(f"batched GEMM {batch}× ({m}×{k} @ {k}×{n}): 2·B·M·N·K FLOPs",),
    )


def cost_bmm(args: list[Arg]) -> OpCost | None:
    a, b = tensor_arg(args, 0), tensor_arg(args, 1)
    if a is None or b is None:
        return None
    return _bmm_cost(a, b, (), tensor_arg(args, 2))


def cost_baddbmm(args: list[Arg]) -> OpCost | None:
    c, a, b = tensor_arg(args, 0), tensor_arg(args, 1), tensor_arg(args, 2)
    if a is None or b is None:
        return None
    return _bmm_cost(a, b, [c] if c else [], tensor_arg(args, 5))


def cost_matmul(args: list[Arg]) -> OpCost | None:
    a, b = tensor_arg(args, 0), tensor_arg(args, 1)
    if a is None or b is None or a.dims is None or b.dims is None or not a.dims or not b.dims:
        return None
    ad, bd = a.dims, b.dims
    batch: tuple[int, ...]
    if len(ad) == 1 and len(bd) == 1:
        if ad[0] != bd[0]:
            return None
        batch, m, k, n = (), 1, ad[0], 1
    elif len(bd) == 1:
        if ad[-1] != bd[0]:
            return None
        batch, m, k, n = ad[:-2], ad[-2] if len(ad) > 1 else 1, ad[-1], 1
    elif len(ad) == 1:
        if ad[0] != bd[-2]:
            return None
        batch, m, k, n = bd[:-2], 1, ad[0], bd[-1]
    else:
        if ad[-1] != bd[-2]:
            return None
        bshape = broadcast_shape([ad[:-2], bd[:-2]])
        if bshape is None:
            return None
        batch, m, k, n = bshape, ad[-2], ad[-1], bd[-1]
    nb = math.prod(batch) if batch else 1
    return OpCost(
        flops=2 * nb * m * n * k,
        bytes_read=a.nbytes + b.nbytes,
        bytes_written=int(nb * m * n * a.itemsize),
        dtype=a.dtype,
        kind="gemm",
        notes=(
            f"matmul as {nb}× ({m}×{k} @ {k}×{n}): 2·M·N·K FLOPs",
            "aten::matmul runs through aten::mm/bmm below it: count one level, not both",
        ),
    )


def cost_linear(args: list[Arg]) -> OpCost | None:
    x, w, bias = tensor_arg(args, 0), tensor_arg(args, 1), tensor_arg(args, 2)
    if x is None or w is None or not x.dims or w.dims is None or len(w.dims) != 2:
        return None
    k = x.dims[-1]
    n, wk = w.dims
    if wk != k:
        return None
    m = math.prod(x.dims[:-1]) if len(x.dims) > 1 else 1
    return OpCost(
        flops=2 * m * n * k,
        bytes_read=x.nbytes + w.nbytes + (bias.nbytes if bias else 0),
        bytes_written=int(m * n * x.itemsize),
        dtype=x.dtype,
        kind="gemm",
        notes=(
            f"linear: input {'×'.join(map(str, x.dims))} as M={m}, K={k}, N={n}: 2·M·N·K FLOPs",
            *([_BIAS_NOTE] if bias else []),
            "aten::linear runs through aten::mm/addmm below it: count one level, not both",
        ),
    )
