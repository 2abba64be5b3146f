"""Fixtures for the workload and capture tests: tiny CPU captures made once; GPU tests skip without CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import (
    DISTRIBUTED_EXPECT,
    STRAGGLER_MS,
    TINY_LINEAR,
    TINY_MLP,
    TINY_RANKS,
    Run,
    finish,
    popen_cli,
)


@pytest.fixture(scope="session")
def cpu_captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Two tiny CPU captures run side by side once per session: mlp eager and linear --train."""
    procs = {}
    for name, args in {
        "mlp": ["mlp", *TINY_MLP],
        "linear_train": ["linear", "--train", *TINY_LINEAR],
    }.items():
        cwd = tmp_path_factory.mktemp(name)
        procs[name] = (popen_cli(["capture", *args], cwd), cwd)
    return {name: finish(proc, cwd) for name, (proc, cwd) in procs.items()}


@pytest.fixture(scope="session")
def rank_captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """``capture ddp`` and ``capture fsdp``, 2 ranks (gloo on the CPU), rank 1 a straggler, the default
    3 steps, every rank checked against ``workloads/expect/distributed.toml``; once per session, one
    after the other (side by side, four ranks on two cores would be late at random). The straggler
    sleeps 40–80 ms a step, not the default 4–8: on a busy 2-core machine a rank descheduled at the
    collectives lost ~23 ms a step (a CI run named rank 0), and the test is of the analysis, not of
    the machine's scheduler."""
    runs = {}
    for name in ("ddp", "fsdp"):
        cwd = tmp_path_factory.mktemp(name)
        straggler = ["--straggler", "1", "--straggler-ms", str(STRAGGLER_MS)]
        args = ["capture", name, "--ranks", "2", *straggler, *TINY_RANKS]
        runs[name] = finish(popen_cli([*args, "--expect", str(DISTRIBUTED_EXPECT)], cwd), cwd)
    return runs


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip this folder's ``gpu`` tests where torch sees no CUDA GPU (torch is imported only if any run)."""
    here = Path(__file__).parent
    gpu_items = [item for item in items if item.get_closest_marker("gpu") and here in item.path.parents]
    if not gpu_items:
        return
    try:
        import torch

        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if not available:
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in gpu_items:
            item.add_marker(skip)
