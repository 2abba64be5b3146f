"""``linear``: ``nn.Linear(in, out, bias=True)``; the bias add is the GEMM's epilogue (``aten::addmm``)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn


def build(
    shapes: Mapping[str, int], dtype: torch.dtype, device: torch.device, kernel: str = "torch"
) -> tuple[nn.Module, torch.Tensor]:
    """The module and one input ``x`` of shape ``[batch, in_dim]``."""
    model = nn.Linear(shapes["in_dim"], shapes["out_dim"], bias=True, device=device, dtype=dtype)
    x = torch.randn(shapes["batch"], shapes["in_dim"], device=device, dtype=dtype)
    return model, x
