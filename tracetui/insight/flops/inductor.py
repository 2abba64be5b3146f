"""FLOPs and bytes of Inductor kernels, from the ``cpu_op`` named after the Triton kernel."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from tracetui.insight.kernel_names import decode_kernel_name

if TYPE_CHECKING:
    pass

from tracetui.insight.flops.args import parse_int_list
from tracetui.insight.flops.fields import Arg, OpCost
from tracetui.insight.flops.gemm import gemm_cost
from tracetui.insight.flops.pointwise import ELEMENTWISE_FLOPS

# --------------------------------------------------------------------------------------------
# Inductor kernels (the cpu_op named after the Triton kernel records its tensor arguments)


def cost_inductor(name: str, args: list[Arg]) -> OpCost | None:
    decoded = decode_kernel_name(name)
    if decoded.family != "inductor":
        return None
    tensors = [a for a in args if a.is_tensor]
    if not tensors:
        return None
    numbers = [n[0] for a in args if not a.is_tensor and (n := parse_int_list(a.concrete)) and len(n) == 1]
    per_element = sum(
        0
        if op in ("_unsafe_view", "view", "reshape", "permute", "expand", "squeeze", "unsqueeze", "clone")
        else ELEMENTWISE_FLOPS.get(op.rstrip("_"), 1)
        for op in decoded.fused_ops
    )
    ops_note = ", ".join(decoded.fused_ops) or "?"
    if decoded.kind == "pointwise":
        xnumel = numbers[0] if numbers else max(t.numel for t in tensors)
        out = next((t for t in tensors if t.numel == xnumel), max(tensors, key=lambda t: t.numel))
        return OpCost(
            flops=xnumel * per_element,
            bytes_read=sum(t.nbytes for t in tensors),
            bytes_written=int(xnumel * out.itemsize),
            dtype=out.dtype,
            kind="pointwise",
            notes=(
                f"Inductor pointwise kernel over {xnumel} elements fusing {ops_note}",
                "every tensor argument read once and one output of the iteration size written: exact "
                "when the output is an in/out buffer (Inductor's in_out_ptr), one buffer's read too "
                "many otherwise",
            ),
        )
    if decoded.kind in ("reduction", "persistent-reduction"):
        if len(numbers) >= 2:
            xnumel, rnumel = numbers[0], numbers[1]
        else:
            xnumel, rnumel = min(t.numel for t in tensors), max(t.numel for t in tensors)
        out = next((t for t in reversed(tensors) if t.numel == xnumel), min(tensors, key=lambda t: t.numel))
        reads = [t for t in tensors if t is not out]
        return OpCost(
            flops=xnumel * rnumel * max(per_element, 1),
            bytes_read=sum(t.nbytes for t in reads),
            bytes_written=int(xnumel * out.itemsize),
            dtype=(reads[0] if reads else out).dtype,
            kind=decoded.kind,
            notes=(
                f"Inductor reduction: {xnumel} outputs, each reducing {rnumel} elements, fusing {ops_note}",
                "the last argument of the output size is taken as the output; the others are read once",
            ),
        )
    if decoded.kind == "template" and any(op in ("mm", "addmm", "bmm") for op in decoded.fused_ops):
        mats = [t for t in tensors if t.dims and len(t.dims) == 2]
        for a, b in itertools.pairwise(mats):
            cost = gemm_cost(a, b, None)
            if cost is not None:
                return OpCost(
                    flops=cost.flops,
                    bytes_read=cost.bytes_read,
                    bytes_written=cost.bytes_written,
                    dtype=cost.dtype,
                    kind="gemm",
                    notes=(*cost.notes, "Inductor's Triton GEMM template: the first chained matrix pair"),
                )
    return None
