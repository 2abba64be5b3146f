"""FLOPs and bytes of elementwise ops, dropout, reductions, softmax, norms, copies and fills."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from tracetui.insight.flops.args import (
    broadcast_shape,
    concrete_arg,
    parse_bool,
    parse_int_list,
    promote_dtype,
    tensor_arg,
)
from tracetui.insight.flops.fields import SCALAR_TYPE_ENUM, Arg, OpCost

# --------------------------------------------------------------------------------------------
# elementwise, reductions, norms, copies

ELEMENTWISE_FLOPS: dict[str, int] = {
    # 1 FLOP per output element: arithmetic, comparisons, selections
    "add": 1,
    "sub": 1,
    "rsub": 1,
    "mul": 1,
    "div": 1,
    "neg": 1,
    "abs": 1,
    "relu": 1,
    "threshold": 1,
    "threshold_backward": 1,
    "clamp": 1,
    "clamp_min": 1,
    "clamp_max": 1,
    "hardtanh": 1,
    "maximum": 1,
    "minimum": 1,
    "where": 1,
    "masked_fill": 1,
    "eq": 1,
    "ne": 1,
    "lt": 1,
    "le": 1,
    "gt": 1,
    "ge": 1,
    "sign": 1,
    "reciprocal": 1,
    "square": 1,
    "leaky_relu": 1,
    # one transcendental function counts 1
    "exp": 1,
    "log": 1,
    "sqrt": 1,
    "rsqrt": 1,
    "sin": 1,
    "cos": 1,
    "tanh": 1,
    "erf": 1,
    "pow": 1,
    "log1p": 1,
    "expm1": 1,
    # composites: the arithmetic of the formula
    "sigmoid": 4,  # 1 / (1 + exp(-x))
    "silu": 5,  # x · sigmoid(x)
    "gelu": 8,  # erf form 0.5·x·(1+erf(x/√2)) ≈ 5, tanh form ≈ 9
    "mish": 6,
    "softplus": 3,
    "elu": 3,
    "hardswish": 4,
    "gelu_backward": 12,
    "silu_backward": 7,
    "sigmoid_backward": 2,
    "tanh_backward": 2,
    "leaky_relu_backward": 1,
    "hardtanh_backward": 1,
    "lerp": 3,
    "addcmul": 3,
    "addcdiv": 3,
    "native_dropout_backward": 2,
}
"""FLOPs per output element for elementwise ops (documented approximations; see the module doc)."""

# op → (number of leading positional args that may be tensor inputs, length of the functional
# schema: a tensor at or after that position is an ``out=`` argument).
_ELEMENTWISE_ARITY: dict[str, tuple[int, int]] = {
    "add": (2, 3),
    "sub": (2, 3),
    "rsub": (2, 3),
    "mul": (2, 2),
    "div": (2, 2),
    "threshold": (1, 3),
    "threshold_backward": (2, 3),
    "clamp": (3, 3),
    "clamp_min": (2, 2),
    "clamp_max": (2, 2),
    "hardtanh": (1, 3),
    "maximum": (2, 2),
    "minimum": (2, 2),
    "where": (3, 3),
    "masked_fill": (3, 3),
    "eq": (2, 2),
    "ne": (2, 2),
    "lt": (2, 2),
    "le": (2, 2),
    "gt": (2, 2),
    "ge": (2, 2),
    "pow": (2, 2),
    "leaky_relu": (1, 2),
    "gelu": (1, 2),
    "softplus": (1, 3),
    "elu": (1, 4),
    "gelu_backward": (2, 3),
    "silu_backward": (2, 2),
    "sigmoid_backward": (2, 2),
    "tanh_backward": (2, 2),
    "leaky_relu_backward": (2, 4),
    "hardtanh_backward": (2, 4),
    "lerp": (3, 3),
    "addcmul": (3, 4),
    "addcdiv": (3, 4),
    "native_dropout_backward": (2, 3),
}
_BOOL_RESULT = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def cost_elementwise(op: str, args: list[Arg], inplace: bool) -> OpCost | None:
    n_in, n_schema = _ELEMENTWISE_ARITY.get(op, (1, 1))
    inputs = [a for a in args[:n_in] if a.is_tensor]
    outs = [a for a in args[n_schema:] if a.is_tensor]
    if not inputs:
        return None
    result: Arg | None
    if inplace:
        result = inputs[0]
        shape = result.dims or ()
    else:
        shape_b = broadcast_shape([a.dims or () for a in inputs])
        if shape_b is None:
            return None
        shape = shape_b
        result = outs[0] if outs else promote_dtype(inputs)
    assert result is not None
    numel = math.prod(shape) if shape else 1
    out_size = 1.0 if op in _BOOL_RESULT and not outs and not inplace else result.itemsize
    return OpCost(
        flops=numel * ELEMENTWISE_FLOPS[op],
        bytes_read=sum(a.nbytes for a in inputs),
        bytes_written=int(numel * out_size),
        dtype=result.dtype,
        kind="elementwise",
        notes=(
            f"elementwise {op}: each input read once, {numel} outputs written"
            + (" in place" if inplace else "")
            + f"; {ELEMENTWISE_FLOPS[op]} FLOP/element",
        ),
    )


def cost_dropout(args: list[Arg]) -> OpCost | None:
    x = tensor_arg(args, 0)
    if x is None:
        return None
    train = parse_bool(concrete_arg(args, 2))
    if train is False:
        return OpCost(0, x.nbytes, x.nbytes, x.dtype, "copy", ("dropout in eval mode: a copy",))
    return OpCost(
        flops=2 * x.numel,
        bytes_read=x.nbytes,
        bytes_written=x.nbytes + x.numel,
        dtype=x.dtype,
        kind="elementwise",
        notes=("dropout: reads x, writes the output and a bool mask; 2 FLOP/element",),
    )


REDUCE_FLOPS = {"sum": 1, "mean": 1, "amax": 1, "amin": 1, "max": 1, "min": 1, "prod": 1, "var": 3, "std": 3}


def cost_reduction(op: str, args: list[Arg]) -> OpCost | None:
    x = tensor_arg(args, 0)
    if x is None:
        return None
    notes = [f"reduction {op}: reads the input once"]
    dims_text = concrete_arg(args, 1)
    reduced = parse_int_list(dims_text)
    if reduced and x.dims:
        nd = len(x.dims)
        axes = {d % nd for d in reduced if -nd <= d < nd}
        out_numel = math.prod(s for i, s in enumerate(x.dims) if i not in axes)
    else:
        out_numel = 1  # no dims, or an empty dim list: a full reduction
        if len(args) > 1 and args[1].type == "ScalarList" and not any(a.concrete for a in args):
            notes.append("reduced dims not recorded: assumed a full reduction")
    return OpCost(
        flops=x.numel * REDUCE_FLOPS[op],
        bytes_read=x.nbytes,
        bytes_written=int(out_numel * x.itemsize),
        dtype=x.dtype,
        kind="reduction",
        notes=tuple(notes),
    )


def cost_softmax(op: str, args: list[Arg]) -> OpCost | None:
    backward = op.endswith("_backward_data")
    if backward:
        grad, out = tensor_arg(args, 0), tensor_arg(args, 1)
        if grad is None or out is None:
            return None
        return OpCost(
            flops=4 * grad.numel,
            bytes_read=grad.nbytes + out.nbytes,
            bytes_written=grad.nbytes,
            dtype=grad.dtype,
            kind="softmax",
            notes=("softmax backward: reads grad and output, writes grad input; 4 FLOP/element",),
        )
    x = tensor_arg(args, 0)
    if x is None:
        return None
    return OpCost(
        flops=5 * x.numel,
        bytes_read=x.nbytes,
        bytes_written=x.nbytes,
        dtype=x.dtype,
        kind="softmax",
        notes=("softmax: max, subtract, exp, sum, divide: 5 FLOP/element, one read and one write",),
    )


def cost_layer_norm(op: str, args: list[Arg]) -> OpCost | None:
    if op == "native_layer_norm_backward":
        grad, x = tensor_arg(args, 0), tensor_arg(args, 1)
        if grad is None or x is None:
            return None
        params = [t for t in (tensor_arg(args, 5), tensor_arg(args, 6)) if t]
        stats = [t for t in (tensor_arg(args, 3), tensor_arg(args, 4)) if t]
        return OpCost(
            flops=10 * x.numel,
            bytes_read=grad.nbytes + x.nbytes + sum(t.nbytes for t in (*params, *stats)),
            bytes_written=grad.nbytes + sum(t.nbytes for t in params),
            dtype=x.dtype,
            kind="norm",
            notes=("layer_norm backward: ~10 FLOP/element; writes grad input and weight/bias grads",),
        )
    x = tensor_arg(args, 0)
    if x is None:
        return None
    params = [t for t in (tensor_arg(args, 2), tensor_arg(args, 3)) if t]
    per = 4 if "rms" in op else 8
    return OpCost(
        flops=per * x.numel,
        bytes_read=x.nbytes + sum(t.nbytes for t in params),
        bytes_written=x.nbytes,
        dtype=x.dtype,
        kind="norm",
        notes=(f"{op}: statistics, normalise, scale and shift: ~{per} FLOP/element",),
    )


def cost_copy(op: str, args: list[Arg]) -> OpCost | None:
    if op == "copy_":
        dst, src = tensor_arg(args, 0), tensor_arg(args, 1)
        if dst is None or src is None:
            return None
        return OpCost(0, src.nbytes, dst.nbytes, dst.dtype, "copy", ("copy_: reads src, writes self",))
    x = tensor_arg(args, 0)
    if x is None:
        return None
    notes = [f"{op}: one read, one write"]
    out_type = x.type
    if op == "_to_copy":
        enum = parse_int_list(concrete_arg(args, 1))
        if enum and len(enum) == 1 and enum[0] in SCALAR_TYPE_ENUM:
            out_type = SCALAR_TYPE_ENUM[enum[0]]
        else:
            notes.append("target dtype not recorded: assumed unchanged")
    out = Arg(x.dims, out_type)
    return OpCost(0, x.nbytes, out.nbytes, out.dtype, "copy", tuple(notes))


def cost_fill(op: str, args: list[Arg]) -> OpCost | None:
    x = tensor_arg(args, 0)
    if x is None:
        return None
    return OpCost(0, 0, x.nbytes, x.dtype, "fill", (f"{op}: writes every element once",))
