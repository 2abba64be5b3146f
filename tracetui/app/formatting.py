"""Number, time and text formatting shared by the tree, the tables, the details and the timeline."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size

ELLIPSIS = "…"


def fmt_us(us: float | None) -> str:
    """A duration given in µs, in the unit that keeps it short: ``56.4 µs``, ``1.23 ms``, ``2.50 s``."""
    if us is None:
        return ""
    size = abs(us)
    if size < 1000:
        return f"{us:.1f} µs" if size >= 10 or us == 0 else f"{us:.2f} µs"
    if size < 1_000_000:
        return f"{us / 1000:.2f} ms"
    return f"{us / 1_000_000:.2f} s"


def fmt_ns_offset(ns: int | None, t0_ns: int) -> str:
    """A timestamp relative to the trace's time zero, in ms with µs precision."""
    if ns is None:
        return ""
    return f"{(ns - t0_ns) / 1_000_000:.3f} ms"


def fmt_count(value: int | float | None) -> str:
    """An integer with thousands separators (a float with one decimal)."""
    if value is None:
        return ""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}"
    return f"{int(value):,}"


def fmt_bytes(value: float | None) -> str:
    """A byte count in B, KiB, MiB or GiB."""
    if value is None:
        return ""
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - the loop always returns


def fmt_si(value: float | None, unit: str) -> str:
    """A quantity with an SI prefix and 3 significant digits: ``38.7 GFLOP``, ``655 kFLOP``."""
    if value is None:
        return ""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal cells with an ellipsis (wide characters counted)."""
    if width <= 0:
        return ""
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
