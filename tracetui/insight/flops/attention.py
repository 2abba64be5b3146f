"""FLOPs and bytes of scaled-dot-product attention, forward and backward."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from tracetui.insight.flops.args import concrete_arg, parse_bool, parse_int_list, tensor_arg
from tracetui.insight.flops.fields import Arg, OpCost

# --------------------------------------------------------------------------------------------
# attention

# op → (q, k, v positions, is_causal position, layout "bhle" | "blhe", backward)
SDPA_ARGS: dict[str, tuple[int, int, int, int, str, bool]] = {
    "scaled_dot_product_attention": (0, 1, 2, 5, "bhle", False),
    "_scaled_dot_product_flash_attention": (0, 1, 2, 4, "bhle", False),
    "_scaled_dot_product_efficient_attention": (0, 1, 2, 6, "bhle", False),
    "_scaled_dot_product_cudnn_attention": (0, 1, 2, 6, "bhle", False),
    "_scaled_dot_product_fused_attention_overrideable": (0, 1, 2, 5, "bhle", False),
    "_cudnn_attention_forward": (0, 1, 2, 10, "bhle", False),
    "_flash_attention_forward": (0, 1, 2, 8, "blhe", False),
    "_efficient_attention_forward": (0, 1, 2, -9, "blhe", False),
    "_scaled_dot_product_flash_attention_backward": (1, 2, 3, 11, "bhle", True),
    "_scaled_dot_product_efficient_attention_backward": (1, 2, 3, 11, "bhle", True),
    "_scaled_dot_product_cudnn_attention_backward": (1, 2, 3, 14, "bhle", True),
    "_cudnn_attention_backward": (1, 2, 3, 14, "bhle", True),
    "_flash_attention_backward": (1, 2, 3, 11, "blhe", True),
    "_efficient_attention_backward": (1, 2, 3, -14, "blhe", True),
}


def cost_attention(op: str, args: list[Arg]) -> OpCost | None:
    qp, kp, vp, causal_pos, layout, backward = SDPA_ARGS[op]
    q, k, v = tensor_arg(args, qp), tensor_arg(args, kp), tensor_arg(args, vp)
    if q is None or k is None or v is None or not q.dims or not k.dims or not v.dims:
        return None
    if len(q.dims) < 2 or len(k.dims) < 2:
        return None
    e = q.dims[-1]
    ev = v.dims[-1]
    s = k.dims[1] if layout == "blhe" else k.dims[-2]
    if e == 0:
        return None
    rows = q.numel // e  # B·H·L
    flops = 2 * rows * s * (e + ev)
    notes = ["attention: QKᵀ and PV, 2·B·H·L·S·(E+Ev) FLOPs (4·B·H·L·S·E when Ev = E)"]
    text = concrete_arg(args, abs(causal_pos))
    if causal_pos < 0:  # a custom_mask_type int: 1 and 2 are causal masks
        mask = parse_int_list(text)
        causal = None if mask is None else mask[0] in (1, 2)
    else:
        causal = parse_bool(text)
    if causal:
        flops //= 2
        notes.append("is_causal: half the score matrix is computed")
    elif causal is None:
        notes.append("is_causal not recorded: assumed a full (non-causal) score matrix")
    out_bytes = int(rows * ev * q.itemsize)
    if backward:
        flops = flops * 5 // 2
        notes.append("backward: 5 matmuls of the forward's size (QKᵀ recomputed, dP, dV, dQ, dK)")
        read = sum(a.nbytes for a in args if a.is_tensor)
        written = q.nbytes + k.nbytes + v.nbytes
    else:
        mask_bytes = sum(a.nbytes for i, a in enumerate(args) if a.is_tensor and i not in (qp, kp, vp))
        read = q.nbytes + k.nbytes + v.nbytes + mask_bytes
        written = out_bytes
    notes.append("bytes assume a fused kernel that never writes the L×S score matrix")
    return OpCost(
        flops=flops,
        bytes_read=read,
        bytes_written=written,
        dtype=q.dtype,
        kind="attention",
        notes=tuple(notes),
    )
