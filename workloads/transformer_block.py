"""``transformer-block``: one pre-norm transformer block, the shape of a training step whose memory
has a clear peak (the activations kept for the backward, then the gradients and AdamW's state).

``x + attn(ln1(x))`` with causal scaled-dot-product attention over ``dim / 64`` heads (one head
below 64), then ``+ mlp(ln2(x))`` with a tanh-GELU MLP of width ``hidden``. Runs anywhere torch
runs (tiny shapes on a CPU; the defaults on a GPU).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

HEAD_DIM = 64


class TransformerBlock(nn.Module):
    """Pre-norm attention and MLP, each around a residual."""

    def __init__(self, dim: int, hidden: int, *, device: torch.device, dtype: torch.dtype) -> None:
        super().__init__()
        self.heads = max(1, dim // HEAD_DIM) if dim % HEAD_DIM == 0 else 1
        self.ln1 = nn.LayerNorm(dim, device=device, dtype=dtype)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False, device=device, dtype=dtype)
        self.proj = nn.Linear(dim, dim, bias=False, device=device, dtype=dtype)
        self.ln2 = nn.LayerNorm(dim, device=device, dtype=dtype)
        self.up = nn.Linear(dim, hidden, bias=False, device=device, dtype=dtype)
        self.down = nn.Linear(hidden, dim, bias=False, device=device, dtype=dtype)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out: torch.Tensor = self.proj(heads.transpose(1, 2).reshape(batch, seq, dim))
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        out: torch.Tensor = x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))
        return out


def build(
    shapes: Mapping[str, int], dtype: torch.dtype, device: torch.device, kernel: str = "torch"
) -> tuple[nn.Module, torch.Tensor]:
    """The block and one input ``x`` of shape ``[batch, seq, dim]``."""
    model = TransformerBlock(shapes["dim"], shapes["hidden"], device=device, dtype=dtype)
    x = torch.randn(shapes["batch"], shapes["seq"], shapes["dim"], device=device, dtype=dtype)
    return model, x
