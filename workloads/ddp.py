"""``ddp``: DistributedDataParallel training of the blog's GeGLU MLP, one process per rank.

``tracetui capture ddp --ranks N`` starts N processes as torchrun does (see
:mod:`tracetui.capture.distributed`); each builds its rank here, after the process group is up
(the step itself: :mod:`workloads.data_parallel`). Parameters are fp32 (what DDP all-reduces);
``--dtype bf16``/``fp16`` runs the forward under autocast on a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from tracetui.workloads import data_parallel
from tracetui.workloads.mlp import GeGLUMLP

LABEL = "ddp_step"


def build_rank(
    shapes: Mapping[str, int],
    dtype: torch.dtype,
    device: torch.device,
    rank: int,
    straggler: int | None = None,
    straggler_ms: float | None = None,
) -> tuple[data_parallel.Step, tuple[str, ...]]:
    """One DDP training step of this rank and the ``record_function`` labels it emits."""

    def wrap(model: GeGLUMLP) -> nn.Module:
        return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)

    autocast = dtype if dtype != torch.float32 and device.type == "cuda" else None
    return data_parallel.build_rank(
        LABEL, wrap, shapes, device, rank, straggler, straggler_ms=straggler_ms, autocast=autocast
    )
