"""What ``ddp`` and ``fsdp`` share: one data-parallel training step of the GeGLU MLP on one rank.

Each rank builds the same weights (seed 0), its own batch (seeded by its rank) and AdamW; the
workload module only says how the model is wrapped (``DistributedDataParallel``, ``fully_shard``).
``--straggler RANK`` makes that rank spend 4–8 ms on the host (a sleep labelled
``straggler_delay``) before its backward, so the others wait for it at the next collective.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext

import torch
from torch import nn
from torch.profiler import record_function

from workloads.mlp import GeGLUMLP

STRAGGLER_LABEL = "straggler_delay"
STRAGGLER_MS = (4.0, 8.0)
LEARNING_RATE = 1e-4

Step = Callable[[], None]


def build_rank(
    label: str,
    wrap: Callable[[nn.Module], nn.Module],
    shapes: Mapping[str, int],
    device: torch.device,
    rank: int,
    straggler: int | None = None,
    *,
    autocast: torch.dtype | None = None,
) -> tuple[Step, tuple[str, ...]]:
    """One training step of this rank under ``label`` (forward, loss, backward with the wrapper's
    collectives, AdamW) and the ``record_function`` labels it emits. The process group must be up.

    The model is built in fp32 and given to ``wrap``; ``autocast`` runs the forward under
    ``torch.autocast`` in that dtype."""
    torch.manual_seed(0)  # the same weights on every rank, as data parallelism expects
    model = wrap(GeGLUMLP(shapes["dim"], shapes["hidden"], device=device, dtype=torch.float32))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    generator = torch.Generator(device="cpu").manual_seed(rank)  # each rank its own batch
    x = torch.randn(shapes["batch"], shapes["seq"], shapes["dim"], generator=generator).to(device)
    delays = random.Random(rank)

    def step() -> None:
        with record_function(label):
            with torch.autocast(device.type, dtype=autocast) if autocast else nullcontext():
                loss = model(x).float().square().mean()
            if rank == straggler:
                with record_function(STRAGGLER_LABEL):
                    time.sleep(delays.uniform(*STRAGGLER_MS) / 1000)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    labels = (label, STRAGGLER_LABEL) if rank == straggler else (label,)
    return step, labels
