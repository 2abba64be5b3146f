"""``ddp``: DistributedDataParallel training of the blog's GeGLU MLP, one process per rank.

``tracetui capture ddp --ranks N`` starts N processes as torchrun does (see
:mod:`tracetui.capture.distributed`); each builds its rank here, after the process group is up.
Parameters are fp32 (what DDP all-reduces); ``--dtype bf16``/``fp16`` runs the forward under autocast
on a GPU. ``--straggler RANK`` makes that rank spend 4–8 ms on the host (a labelled sleep) before
its backward, so the others wait for it at every all-reduce.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext

import torch
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import record_function

from tracetui.workloads.mlp import GeGLUMLP

LABEL = "ddp_step"
STRAGGLER_LABEL = "straggler_delay"
STRAGGLER_MS = (4.0, 8.0)
LEARNING_RATE = 1e-4


def build_rank(
    shapes: Mapping[str, int],
    dtype: torch.dtype,
    device: torch.device,
    rank: int,
    straggler: int | None = None,
) -> tuple[Callable[[], None], tuple[str, ...]]:
    """One training step of this rank (forward, backward with DDP's all-reduces, AdamW) and the
    ``record_function`` labels it emits. The process group must be initialised."""
    torch.manual_seed(0)  # the same weights on every rank, as DDP expects
    model = GeGLUMLP(shapes["dim"], shapes["hidden"], device=device, dtype=torch.float32)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=LEARNING_RATE)
    generator = torch.Generator(device="cpu").manual_seed(rank)  # each rank its own batch
    x = torch.randn(shapes["batch"], shapes["seq"], shapes["dim"], generator=generator).to(device)
    delays = random.Random(rank)
    autocast = dtype != torch.float32 and device.type == "cuda"

    def step() -> None:
        with record_function(LABEL):
            with torch.autocast(device.type, dtype=dtype) if autocast else nullcontext():
                loss = ddp(x).float().square().mean()
            if rank == straggler:
                with record_function(STRAGGLER_LABEL):
                    time.sleep(delays.uniform(*STRAGGLER_MS) / 1000)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    labels = (LABEL, STRAGGLER_LABEL) if rank == straggler else (LABEL,)
    return step, labels
