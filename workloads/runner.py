"""One warmed-up step of a :class:`~tracetui.workloads.registry.RunConfig`: a forward or a training step.

The step carries the blog's ``record_function`` labels (``mlp_fwd``; ``backward`` and
``optimizer`` when training), so the same code serves ``tracetui capture`` and the benchmark.
Compilation, warm-up and CUDA-graph capture happen here, before any profiling; each warm-up step
(the first compiles, under ``--compile``) and the capture shows one progress line on stderr.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch.profiler import record_function

from tracetui.workloads.registry import DTYPES, RunConfig

WARMUP_STEPS = 3
LEARNING_RATE = 1e-4
# Label of a replayed training graph: forward, backward and optimizer are one graph launch.
GRAPH_TRAIN_LABEL = "train_step"


@dataclass
class Prepared:
    """A workload ready to profile: call ``step()`` once per profiler step."""

    step: Callable[[], None]
    device: torch.device
    optimizer: str | None  # e.g. "AdamW(lr=0.0001)" when training
    labels: tuple[str, ...]  # the record_function labels one step emits
    forward: Callable[[], torch.Tensor]  # the (compiled) model on the step's input, no grad, no label


def torch_dtype(name: str) -> torch.dtype:
    """``"bf16"`` -> ``torch.bfloat16``."""
    return getattr(torch, DTYPES[name])


def default_device() -> torch.device:
    """The first CUDA device when there is one, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@contextlib.contextmanager
def progress(what: str) -> Iterator[None]:
    """Print ``what… done in 1.2 s`` (or ``what… failed``) on one stderr line when a slow phase ends:
    written whole, so that what torch itself prints meanwhile (Kineto's ``USDT: profiler_start``)
    lands on a line of its own."""
    start = time.perf_counter()
    try:
        yield
    except BaseException:
        print(f"{what}… failed", file=sys.stderr, flush=True)
        raise
    print(f"{what}… done in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)


def warmup_label(what: str, index: int, compiling: bool) -> str:
    """``warming up mlp on cpu: step 1/3``; compiling, the first step says it compiles."""
    label = f"{what}: step {index + 1}/{WARMUP_STEPS}"
    return label + (" (compiles the graph)" if compiling and index == 0 else "")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


Stage = Callable[[str], contextlib.AbstractContextManager[None]]


def prepare(config: RunConfig, device: torch.device | None = None, stage: Stage = progress) -> Prepared:
    """Build the workload on ``device``, compile it if asked, warm it up and capture its graph;
    ``stage(what)`` wraps each slow phase (default: one line on stderr)."""
    device = device or default_device()
    variant, label = config.variant, config.workload.label
    torch.manual_seed(0)
    module = importlib.import_module(config.workload.module)
    model, x = module.build(config.shapes, torch_dtype(config.dtype), device, variant.kernel)
    fn: Callable[[torch.Tensor], torch.Tensor] = model
    if variant.compile:
        fn = torch.compile(model, mode=variant.mode)

    optimizer: torch.optim.Optimizer | None = None
    if variant.train:
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, capturable=variant.cuda_graph)
        optimizer = opt

        def body() -> None:
            with record_function(label):
                out = fn(x)
            with record_function("backward"):
                out.float().square().mean().backward()
            with record_function("optimizer"):
                opt.step()
                if not variant.cuda_graph:  # a graph keeps its gradient buffers (see _graphed)
                    opt.zero_grad(set_to_none=True)

        labels: tuple[str, ...] = (label, "backward", "optimizer")
    else:
        model.eval()

        def body() -> None:
            with torch.no_grad(), record_function(label):
                fn(x)

        labels = (label,)

    what = f"compiling {config.workload.name} (torch.compile, mode {variant.mode or 'default'})"
    if not variant.compile:
        what = f"warming up {config.workload.name} on {device.type}"
    step = body
    if variant.cuda_graph:
        step, labels = _graphed(body, device, optimizer, what, label, variant.train, stage, variant.compile)
    else:
        for n in range(WARMUP_STEPS):
            with stage(warmup_label(what, n, variant.compile)):
                body()
                _sync(device)
    name = f"AdamW(lr={LEARNING_RATE})" if optimizer is not None else None

    def forward() -> torch.Tensor:
        with torch.no_grad():
            return fn(x)

    return Prepared(step=step, device=device, optimizer=name, labels=labels, forward=forward)


def _graphed(
    body: Callable[[], None],
    device: torch.device,
    optimizer: torch.optim.Optimizer | None,
    what: str,
    label: str,
    train: bool,
    stage: Stage = progress,
    compiling: bool = False,
) -> tuple[Callable[[], None], tuple[str, ...]]:
    """Warm ``body`` up on a side stream, capture it once in a CUDA graph, return a replaying step.

    For training, gradients are set to None before capture so the captured backward writes
    (rather than accumulates) them in the graph's own memory, and AdamW runs ``capturable``.
    """
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    for n in range(WARMUP_STEPS):
        with stage(warmup_label(what, n, compiling)), torch.cuda.stream(side):
            body()
            if optimizer is not None:
                optimizer.zero_grad(set_to_none=True)
            _sync(device)
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with stage("capturing a CUDA graph"):
        with torch.cuda.graph(graph):
            body()
        graph.replay()
        _sync(device)
    replay_label = GRAPH_TRAIN_LABEL if train else label

    def step() -> None:
        with record_function(replay_label):
            graph.replay()

    return step, (replay_label,)
