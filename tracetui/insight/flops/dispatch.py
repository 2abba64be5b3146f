"""The op → cost-function table, :func:`op_cost` and the vectorised :func:`op_cost_columns`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

import polars as pl

from tracetui.insight.flops.args import parse_args
from tracetui.insight.flops.attention import SDPA_ARGS, cost_attention
from tracetui.insight.flops.conv import CONV_ARGS, cost_conv, cost_conv_backward
from tracetui.insight.flops.fields import Arg, OpCost
from tracetui.insight.flops.gemm import (
    cost_addmm,
    cost_baddbmm,
    cost_bmm,
    cost_linear,
    cost_matmul,
    cost_mm,
    cost_scaled_mm,
)
from tracetui.insight.flops.inductor import cost_inductor
from tracetui.insight.flops.pointwise import (
    ELEMENTWISE_FLOPS,
    REDUCE_FLOPS,
    cost_copy,
    cost_dropout,
    cost_elementwise,
    cost_fill,
    cost_layer_norm,
    cost_reduction,
    cost_softmax,
)

# --------------------------------------------------------------------------------------------
# dispatch

_Handler = Callable[[str, list[Arg]], "OpCost | None"]


def _handlers() -> dict[str, _Handler]:
    table: dict[str, _Handler] = {
        "mm": lambda op, a: cost_mm(a),
        "addmm": lambda op, a: cost_addmm(a),
        "_addmm_activation": lambda op, a: cost_addmm(a),
        "_scaled_mm": lambda op, a: cost_scaled_mm(a),
        "bmm": lambda op, a: cost_bmm(a),
        "baddbmm": lambda op, a: cost_baddbmm(a),
        "matmul": lambda op, a: cost_matmul(a),
        "linear": lambda op, a: cost_linear(a),
        "native_dropout": lambda op, a: cost_dropout(a),
        "convolution_backward": lambda op, a: cost_conv_backward(a),
    }
    for op in ELEMENTWISE_FLOPS:
        table[op] = lambda op, a: cost_elementwise(op, a, inplace=False)
    groups: list[tuple[Sequence[str], _Handler]] = [
        (tuple(CONV_ARGS), cost_conv),
        (tuple(SDPA_ARGS), cost_attention),
        (tuple(REDUCE_FLOPS), cost_reduction),
        (
            (
                "softmax",
                "_softmax",
                "log_softmax",
                "_log_softmax",
                "_softmax_backward_data",
                "_log_softmax_backward_data",
            ),
            cost_softmax,
        ),
        (
            ("layer_norm", "native_layer_norm", "native_layer_norm_backward", "rms_norm", "_fused_rms_norm"),
            cost_layer_norm,
        ),
        (("copy_", "clone", "contiguous", "_to_copy"), cost_copy),
        (("fill_", "zero_"), cost_fill),
    ]
    for names, handler in groups:
        for op in names:
            table[op] = handler
    return table


_HANDLERS: dict[str, _Handler] = _handlers()
"""``aten::`` op name (without the prefix) → cost function. Adding an op is one entry."""


def op_cost(
    name: str,
    input_dims: str | Sequence[Any] | None,
    input_type: str | Sequence[Any] | None,
    concrete_inputs: str | Sequence[Any] | None = None,
) -> OpCost | None:
    """FLOPs and bytes of one op call, or ``None`` for ops without a formula or without shapes.

    ``name`` is the cpu_op name (``aten::mm``, ``triton_poi_fused_…``); ``input_dims``,
    ``input_type`` and ``concrete_inputs`` are the args as recorded (JSON text or decoded lists).
    Never raises on malformed input.
    """
    try:
        args = parse_args(input_dims, input_type, concrete_inputs)
        if args is None or not isinstance(name, str):
            return None
        if name.startswith("triton_"):
            return cost_inductor(name, args)
        if not name.startswith("aten::"):
            return None
        op = name[6:]
        if op in _HANDLERS:
            return _HANDLERS[op](op, args)
        if op.endswith("_") and op[:-1] in ELEMENTWISE_FLOPS:  # in-place: add_, mul_, relu_, …
            return cost_elementwise(op[:-1], args, inplace=True)
        return None
    except (ArithmeticError, ValueError, IndexError, TypeError, KeyError):
        return None


# --------------------------------------------------------------------------------------------
# vectorised helper


def op_cost_columns(
    df: pl.DataFrame,
    *,
    name: str = "name",
    input_dims: str = "input_dims",
    input_type: str = "input_type",
    concrete_inputs: str = "concrete_inputs",
) -> pl.DataFrame:
    """Costs for each distinct (name, input_dims, input_type[, concrete_inputs]) row of ``df``.

    Returns those key columns plus ``flops``, ``bytes_read``, ``bytes_written``, ``bytes`` (Int64),
    ``intensity`` (Float64), ``cost_dtype``, ``cost_kind`` (str) and ``cost_notes`` (List[str]);
    nulls where :func:`op_cost` has no answer. Join it back on the key columns. The concrete-inputs
    column is used when ``df`` has it.
    """

    keys = [name, input_dims, input_type]
    if concrete_inputs in df.columns:
        keys.append(concrete_inputs)
    unique = df.select(keys).unique(maintain_order=True)
    rows = unique.rows()
    costs = [op_cost(*row) for row in rows]
    extra = pl.DataFrame(
        {
            "flops": [c.flops if c else None for c in costs],
            "bytes_read": [c.bytes_read if c else None for c in costs],
            "bytes_written": [c.bytes_written if c else None for c in costs],
            "bytes": [c.bytes if c else None for c in costs],
            "intensity": [c.intensity if c else None for c in costs],
            "cost_dtype": [c.dtype if c else None for c in costs],
            "cost_kind": [c.kind if c else None for c in costs],
            "cost_notes": [list(c.notes) if c else None for c in costs],
        },
        schema={
            "flops": pl.Int64,
            "bytes_read": pl.Int64,
            "bytes_written": pl.Int64,
            "bytes": pl.Int64,
            "intensity": pl.Float64,
            "cost_dtype": pl.String,
            "cost_kind": pl.String,
            "cost_notes": pl.List(pl.String),
        },
    )
    return pl.concat([unique, extra], how="horizontal")
