"""``mlp``: the GeGLU MLP ``down(gelu(gate(x), approximate="tanh") * up(x))``.

With ``kernel="torch"`` the activation is two eager ops (gelu, mul) that Inductor fuses under
``torch.compile``; with ``kernel="triton"`` it is this project's one-pass Triton kernel
(:mod:`tracetui.workloads.geglu_triton`); with ``kernel="triton-fused"`` the gate and up
projections and the activation are one Triton GEMM kernel
(:mod:`tracetui.workloads.fused_mlp_triton`), so a forward is two kernels: that one and down's GEMM.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn


def geglu_torch(g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The reference activation: ``gelu(g, approximate="tanh") * u`` (two kernels in eager mode)."""
    return F.gelu(g, approximate="tanh") * u


class GeGLUMLP(nn.Module):
    """gate/up/down projections without bias around a GeGLU activation."""

    def __init__(
        self, dim: int, hidden: int, *, kernel: str = "torch", device: torch.device, dtype: torch.dtype
    ) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False, device=device, dtype=dtype)
        self.up_proj = nn.Linear(dim, hidden, bias=False, device=device, dtype=dtype)
        self.down_proj = nn.Linear(hidden, dim, bias=False, device=device, dtype=dtype)
        if kernel == "triton":
            from tracetui.workloads.geglu_triton import geglu

            self.act = geglu
        else:
            self.act = geglu_torch
        if kernel == "triton-fused":
            from tracetui.workloads.fused_mlp_triton import gate_up_geglu

            self.gate_up_act = gate_up_geglu
        self.kernel = kernel

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kernel == "triton-fused":  # the same parameters, read by one kernel
            return self.down_proj(self.gate_up_act(x, self.gate_proj.weight, self.up_proj.weight))
        return self.down_proj(self.act(self.gate_proj(x), self.up_proj(x)))


def build(
    shapes: Mapping[str, int], dtype: torch.dtype, device: torch.device, kernel: str = "torch"
) -> tuple[nn.Module, torch.Tensor]:
    """The module and one input ``x`` of shape ``[batch, seq, dim]``."""
    model = GeGLUMLP(shapes["dim"], shapes["hidden"], kernel=kernel, device=device, dtype=dtype)
    x = torch.randn(shapes["batch"], shapes["seq"], shapes["dim"], device=device, dtype=dtype)
    return model, x
