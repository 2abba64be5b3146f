"""What ``ddp`` and ``fsdp`` share: one data-parallel training step of the GeGLU MLP on one rank.

Each rank builds the same weights (seed 0), its own batch (seeded by its rank) and AdamW; the
workload module only says how the model is wrapped (``DistributedDataParallel``, ``fully_shard``).

``--straggler RANK`` makes that rank spend ``--straggler-ms`` (default 6, so 4–8 ms: a third either
way at random) a step on the host in its backward: a sleep labelled ``straggler_delay`` before the
backward of each projection (down, up, gate), a third of it each. So the rank is late at every
collective its backward starts — DDP's all-reduce of each gradient bucket, FSDP's all-gather and
reduce-scatter of each unit — not only at the first one: a single sleep before ``loss.backward()``
would delay only the first collective after it, and the ranks, in step again once it is done, would
arrive at the later ones in no set order.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext

import torch
from torch import nn
from torch.profiler import record_function

from tracetui.workloads.mlp import GeGLUMLP
from tracetui.workloads.registry import STRAGGLER_MS

STRAGGLER_LABEL = "straggler_delay"
LEARNING_RATE = 1e-4

Step = Callable[[], None]


def build_rank(
    label: str,
    wrap: Callable[[GeGLUMLP], nn.Module],
    shapes: Mapping[str, int],
    device: torch.device,
    rank: int,
    straggler: int | None = None,
    *,
    straggler_ms: float | None = None,
    autocast: torch.dtype | None = None,
) -> tuple[Step, tuple[str, ...]]:
    """One training step of this rank under ``label`` (forward, loss, backward with the wrapper's
    collectives, AdamW) and the ``record_function`` labels it emits. The process group must be up.

    The model is built in fp32 and given to ``wrap``; ``autocast`` runs the forward under
    ``torch.autocast`` in that dtype. Rank ``straggler`` sleeps ``straggler_ms`` a step (± a third; default
    ``STRAGGLER_MS``)."""
    torch.manual_seed(0)  # the same weights on every rank, as data parallelism expects
    mlp = GeGLUMLP(shapes["dim"], shapes["hidden"], device=device, dtype=torch.float32)
    if rank == straggler:
        _straggle(mlp, random.Random(rank), STRAGGLER_MS if straggler_ms is None else straggler_ms)
    model = wrap(mlp)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    generator = torch.Generator(device="cpu").manual_seed(rank)  # each rank its own batch
    x = torch.randn(shapes["batch"], shapes["seq"], shapes["dim"], generator=generator).to(device)

    def step() -> None:
        with record_function(label):
            with torch.autocast(device.type, dtype=autocast) if autocast else nullcontext():
                loss = model(x).float().square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    labels = (label, STRAGGLER_LABEL) if rank == straggler else (label,)
    return step, labels


def _straggle(mlp: GeGLUMLP, delays: random.Random, per_step_ms: float) -> None:
    """Before the backward of each projection, sleep a third of ``per_step_ms`` ± a third (labelled)."""
    low, high = (per_step_ms * scale / 3 / 1000 for scale in (2 / 3, 4 / 3))

    def delay(module: nn.Module, grad_output: object) -> None:
        with record_function(STRAGGLER_LABEL):
            time.sleep(delays.uniform(low, high))

    for projection in (mlp.gate_proj, mlp.up_proj, mlp.down_proj):
        projection.register_full_backward_pre_hook(delay)
