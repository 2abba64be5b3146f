"""FLOPs and bytes of convolutions (output size from stride, padding and dilation when recorded)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from tracetui.insight.flops.args import concrete_arg, parse_bool, parse_int_list, tensor_arg
from tracetui.insight.flops.fields import Arg, OpCost

# --------------------------------------------------------------------------------------------
# convolution

# op → positions of (stride, padding, dilation, transposed, output_padding, groups); a transposed
# position of -1 means "never transposed", -2 "always transposed".
CONV_ARGS: dict[str, tuple[int, int, int, int, int, int]] = {
    "convolution": (3, 4, 5, 6, 7, 8),
    "_convolution": (3, 4, 5, 6, 7, 8),
    "conv1d": (3, 4, 5, -1, -1, 6),
    "conv2d": (3, 4, 5, -1, -1, 6),
    "conv3d": (3, 4, 5, -1, -1, 6),
    "cudnn_convolution": (3, 2, 4, -1, -1, 5),
    "conv_transpose1d": (3, 4, 7, -2, 5, 6),
    "conv_transpose2d": (3, 4, 7, -2, 5, 6),
    "conv_transpose3d": (3, 4, 7, -2, 5, 6),
    "cudnn_convolution_transpose": (4, 2, 5, -2, 3, 6),
}


def _per_dim(values: tuple[int, ...] | None, ndim: int, default: int) -> tuple[int, ...]:
    if not values:
        return (default,) * ndim
    if len(values) == 1:
        return values * ndim
    return values[:ndim] if len(values) >= ndim else values + (values[-1],) * (ndim - len(values))


def cost_conv(op: str, args: list[Arg]) -> OpCost | None:
    x, w = tensor_arg(args, 0), tensor_arg(args, 1)
    if x is None or w is None or x.dims is None or w.dims is None:
        return None
    if len(x.dims) < 3 or len(w.dims) != len(x.dims):
        return None
    bias = tensor_arg(args, 2) if op not in ("cudnn_convolution", "cudnn_convolution_transpose") else None
    s_pos, p_pos, d_pos, t_pos, op_pos, g_pos = CONV_ARGS[op]
    ndim = len(x.dims) - 2
    n, spatial = x.dims[0], x.dims[2:]
    kernel = w.dims[2:]
    notes: list[str] = []
    if t_pos == -2:
        transposed = True
    elif t_pos == -1:
        transposed = False
    else:
        recorded = parse_bool(concrete_arg(args, t_pos))
        transposed = bool(recorded)
        if recorded is None:
            notes.append("transposed flag not recorded: assumed a regular convolution")
    groups_rec = parse_int_list(concrete_arg(args, g_pos))
    groups = groups_rec[0] if groups_rec and groups_rec[0] > 0 else 1
    stride_text, pad_text = concrete_arg(args, s_pos), concrete_arg(args, p_pos)
    stride_rec = parse_int_list(stride_text)
    pad_rec = parse_int_list(pad_text)
    dil_rec = parse_int_list(concrete_arg(args, d_pos))
    if stride_rec is None and pad_rec is None and pad_text not in ("same", "valid"):
        out_spatial = tuple(spatial)
        notes.append(
            "stride/padding/dilation not recorded (no Concrete Inputs): assumed stride 1 and an "
            "output as large as the input"
        )
    else:
        stride = _per_dim(stride_rec, ndim, 1)
        dilation = _per_dim(dil_rec, ndim, 1)
        if pad_text == "same":
            padding = tuple(dilation[i] * (kernel[i] - 1) // 2 for i in range(ndim))
        else:
            padding = _per_dim(pad_rec, ndim, 0)
        if transposed:
            out_pad = _per_dim(parse_int_list(concrete_arg(args, op_pos)), ndim, 0)
            out_spatial = tuple(
                (spatial[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + out_pad[i] + 1
                for i in range(ndim)
            )
        else:
            out_spatial = tuple(
                (spatial[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
                for i in range(ndim)
            )
        if pad_text == "same":
            out_spatial = tuple(spatial)
        if any(o <= 0 for o in out_spatial):
            return None
    if transposed:
        c_out = w.dims[1] * groups
        flops = 2 * n * math.prod(spatial) * math.prod(w.dims)
        notes.insert(0, "transposed convolution: 2·N·prod(input spatial)·prod(weight) FLOPs")
    else:
        c_out = w.dims[0]
        flops = 2 * n * math.prod(out_spatial) * math.prod(w.dims)
        notes.insert(0, "convolution: 2·N·prod(output spatial)·prod(weight) FLOPs (groups are in the weight)")
    out_numel = n * c_out * math.prod(out_spatial)
    return OpCost(
        flops=flops,
        bytes_read=x.nbytes + w.nbytes + (bias.nbytes if bias else 0),
        bytes_written=int(out_numel * x.itemsize),
        dtype=x.dtype,
        kind="convolution",
        notes=tuple(notes),
    )


def cost_conv_backward(args: list[Arg]) -> OpCost | None:
    """``aten::convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
    dilation, transposed, output_padding, groups, output_mask)``: the data gradient (dgrad) and
    the weight gradient (wgrad) each cost what the forward does; ``output_mask`` says which ran."""
    grad = tensor_arg(args, 0)
    forward_args = [args[i] if i < len(args) else Arg(None, "", "") for i in (1, 2, 3, 4, 5, 6, 7, 8, 9)]
    forward_args[2] = Arg(None, "", "")  # bias_sizes is a size list, not the bias
    forward = cost_conv("convolution", forward_args)
    x, w = tensor_arg(args, 1), tensor_arg(args, 2)
    if forward is None or grad is None or x is None or w is None:
        return None
    mask_text = concrete_arg(args, 10)
    mask = [parse_bool(v) for v in mask_text.strip("[]").split(",")] if mask_text else []
    dgrad = mask[0] if mask and mask[0] is not None else True
    wgrad = mask[1] if len(mask) > 1 and mask[1] is not None else True
    notes = ["convolution backward: the data and the weight gradient each cost the forward's FLOPs"]
    if not mask_text:
        notes.append("output_mask not recorded (no Concrete Inputs): assumed both gradients")
    notes += [n for n in forward.notes[1:] if n not in notes]
    return OpCost(
        flops=forward.flops * (int(dgrad) + int(wgrad)),
        bytes_read=(grad.nbytes + w.nbytes if dgrad else 0) + (grad.nbytes + x.nbytes if wgrad else 0),
        bytes_written=(x.nbytes if dgrad else 0) + (w.nbytes if wgrad else 0),
        dtype=forward.dtype,
        kind="convolution",
        notes=tuple(notes),
    )
