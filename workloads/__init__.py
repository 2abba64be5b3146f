"""The experiments of "Profiling in PyTorch (Part 2)": matmul-add, nn.Linear and a GeGLU MLP.

Importing this package (and :mod:`tracetui.workloads.registry`) needs no torch; the modules that build
and run a workload import torch, and triton only for ``--kernel triton``. Nothing here imports
``tracetui.app``.
"""

from __future__ import annotations

from tracetui.workloads.registry import WORKLOADS, ConfigError, RunConfig, Variant, Workload, make_config

__all__ = ["WORKLOADS", "ConfigError", "RunConfig", "Variant", "Workload", "make_config"]
