"""Text fitted to terminal cells, and the command palette's name score."""

from __future__ import annotations

from tracetui.app.palette import name_score
from tracetui.app.widgets.cells import fit, pad


def test_fit_and_pad_count_cells() -> None:
    assert fit("aten::linear", 8) == "aten::l…"
    assert fit("核函数名字", 5) == "核函…"
    assert pad("ab", 5, "right") == "   ab" and pad("abcdef", 4) == "abc…"
    assert pad("ab", 6, "center") == "  ab  " and fit("ab", 0) == ""


def test_palette_name_score_is_linear_and_ranks_substrings_first() -> None:
    kernel = "void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(" * 8
    assert name_score("aten::gelu", "aten::gelu") == 1.0
    assert name_score("gelu", "aten::gelu") > name_score("gelu", kernel) > 0
    assert name_score("aten gelu", "aten::gelu") > name_score("agl", "aten::gelu") > 0
    assert name_score("aten::gelu", kernel) == 0.3  # the letters in order, found at once
    assert name_score("xyz", "aten::gelu") == 0.0
