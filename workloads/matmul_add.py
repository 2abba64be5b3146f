"""``matmul-add``: ``torch.add(torch.matmul(x, w), b)``, the blog's first trace (two kernels, no epilogue)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn


class MatmulAdd(nn.Module):
    """``x @ w + b`` spelled as two separate ops, so eager mode launches a GEMM and an add."""

    def __init__(self, in_dim: int, out_dim: int, *, device: torch.device, dtype: torch.dtype) -> None:
        super().__init__()
        scale = in_dim**-0.5
        self.w = nn.Parameter(torch.randn(in_dim, out_dim, device=device, dtype=dtype) * scale)
        self.b = nn.Parameter(torch.randn(out_dim, device=device, dtype=dtype) * scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.add(torch.matmul(x, self.w), self.b)


def build(
    shapes: Mapping[str, int], dtype: torch.dtype, device: torch.device, kernel: str = "torch"
) -> tuple[nn.Module, torch.Tensor]:
    """The module and one input ``x`` of shape ``[batch, in_dim]``."""
    model = MatmulAdd(shapes["in_dim"], shapes["out_dim"], device=device, dtype=dtype)
    x = torch.randn(shapes["batch"], shapes["in_dim"], device=device, dtype=dtype)
    return model, x
