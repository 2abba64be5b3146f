"""Text fitted to terminal cells (wide characters counted), for widgets that draw their own lines.

Numbers are written by :mod:`tracetui.formatting`; this module only cuts and pads the text. Every
text goes through :func:`tracetui.safetext.shown` first: these widgets show trace names.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size

from tracetui.safetext import shown

ELLIPSIS = "…"


def fit(text: str, width: int) -> str:
    """``text`` as a terminal may show it (:func:`~tracetui.safetext.shown`), cut to ``width``
    terminal cells with an ellipsis (wide characters counted)."""
    if width <= 0:
        return ""
    text = shown(text)
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + ELLIPSIS


def pad(text: str, width: int, align: str = "left") -> str:
    """``text`` fitted and padded to exactly ``width`` cells."""
    text = fit(text, width)
    gap = width - cell_len(text)
    if align == "right":
        return " " * gap + text
    if align == "center":
        return " " * (gap // 2) + text + " " * (gap - gap // 2)
    return text + " " * gap
