"""Fixtures for the workload and capture tests: tiny CPU captures made once; GPU tests skip without CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import TINY_LINEAR, TINY_MLP, Run, finish, popen_cli


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
