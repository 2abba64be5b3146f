"""FLOPs and bytes of an op, from the ``Input Dims`` / ``Input type`` (and ``Concrete Inputs``) args.

The profiler records, per op, a shape per argument (``[[8192, 768], [768, 3072]]``, ``[]`` for a
non-tensor) and a type string per argument (``"c10::BFloat16"``, ``"Scalar"``, ``""``, ``"TensorList"``).
The model keeps them as the JSON text found in the trace; :func:`op_cost` parses that text (or
already-decoded lists) and returns an :class:`OpCost`, or ``None`` for ops it has no formula for.

Conventions (each also stated in :attr:`OpCost.notes` where it applies):

- A multiply-add is 2 FLOPs. GEMMs count ``2·M·N·K``; the bias add of ``addmm``/``linear`` is not
  counted (``M·N``, negligible), as in ``torch.utils.flop_counter``.
- Convolutions count ``2·N·prod(out_spatial)·prod(weight.shape)`` (grouping is in the weight's
  shape); the output size comes from stride/padding/dilation in ``Concrete Inputs`` when recorded,
  otherwise stride 1 and an output as large as the input are assumed.
- Attention counts the two matmuls of the forward, ``2·B·H·L·S·(E + Ev)`` (``4·B·H·L·S·E`` when
  ``Ev = E``), halved when ``is_causal`` is recorded true. A backward counts five matmuls of that size
  (recomputed QKᵀ, dP, dV, dQ, dK): 2.5× the forward. Bytes assume a fused kernel that never
  writes the L×S score matrix.
- Elementwise ops read each input once and write the broadcast output once; FLOPs are output
  elements × a small per-op constant (:data:`ELEMENTWISE_FLOPS`, transcendental functions counted
  as 1). Rough on purpose: these ops are memory-bound, and the bytes are what matter.
- Bytes are the minimum traffic to DRAM (each tensor read or written once); real kernels can move
  more (re-reads of tiles that miss in L2), never less, so achieved GB/s computed from them is a
  lower bound on the traffic actually served.
"""

from tracetui.insight.flops.args import parse_args
from tracetui.insight.flops.dispatch import op_cost, op_cost_columns
from tracetui.insight.flops.fields import Arg, OpCost, dtype_name, dtype_size
from tracetui.insight.flops.pointwise import ELEMENTWISE_FLOPS

__all__ = [
    "ELEMENTWISE_FLOPS",
    "Arg",
    "OpCost",
    "dtype_name",
    "dtype_size",
    "op_cost",
    "op_cost_columns",
    "parse_args",
]
