"""``fsdp``: FSDP2 (``torch.distributed.fsdp.fully_shard``) training of the blog's GeGLU MLP, one
process per rank.

Each projection (gate, up, down) is its own FSDP unit, then the root: the forward all-gathers each
unit's parameters before it runs (the next unit's all-gather overlaps the current one's compute),
frees them after it, and the backward all-gathers them again and reduce-scatters the gradients
(``reshard_after_forward=True``, FSDP2's default). On a GPU, ``--dtype bf16``/``fp16`` is FSDP's
``MixedPrecisionPolicy`` (parameters gathered and computed in that dtype, gradients reduced in
fp32); on the CPU everything stays fp32. The step itself: :mod:`workloads.data_parallel`.

With gloo (torch 2.13) every collective FSDP2 needs runs: ``all_gather_into_tensor`` is a
``gloo:all_gather``, but gloo has no reduce-scatter of its own — ``reduce_scatter_tensor``
(``c10d::_reduce_scatter_base_``) all-reduces a copy of the whole gradient buffer (a
``gloo:all_reduce``) and keeps the rank's chunk (``ProcessGroupGloo::reduce_scatter_tensor_coalesced``).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from tracetui.workloads import data_parallel
from tracetui.workloads.mlp import GeGLUMLP

LABEL = "fsdp_step"


def build_rank(
    shapes: Mapping[str, int],
    dtype: torch.dtype,
    device: torch.device,
    rank: int,
    straggler: int | None = None,
    straggler_ms: float | None = None,
) -> tuple[data_parallel.Step, tuple[str, ...]]:
    """One FSDP2 training step of this rank and the ``record_function`` labels it emits."""
    mixed = dtype != torch.float32 and device.type == "cuda"
    policy = (
        MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
        if mixed
        else MixedPrecisionPolicy()
    )

    def wrap(model: GeGLUMLP) -> nn.Module:
        for layer in (model.gate_proj, model.up_proj, model.down_proj):
            fully_shard(layer, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        return model

    return data_parallel.build_rank(LABEL, wrap, shapes, device, rank, straggler, straggler_ms=straggler_ms)
