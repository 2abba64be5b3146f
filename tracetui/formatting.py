"""How every surface writes a number: durations, counts, percentages, sizes, rates, time offsets.

One module for the explorer (tree, details pane, tables, timeline, comparison screen), the
summary, the verdicts and the diff/check reports, so one value reads the same everywhere:

* durations (given in µs) pick their unit: ``3.26 µs``, ``56.4 µs``, ``1.23 ms``, ``2.50 s``
  (zero: ``0.0 µs``);
* counts and every integer part of more than three digits carry thousands separators
  (``1,234,567``, ``1,234.57 s``); averages show two decimals (``2.33``);
* percentages are whole (``45%``), changes signed with one decimal (``+11.7%``).

A figure shown beside a limit (``check``'s results) goes through :func:`beside_limit`: the kind's
text, with as many more decimals as it takes to fall on the same side of the limit as the figure
(a peak of 4,345,501,184 B against ``"4 GiB"`` reads ``4.05 GiB``, never ``4.0 GiB``).

:func:`parse_size` reads a size back (``"900 MiB"``), the one place sizes are parsed.

Plain text, no markup; ``None`` becomes ``""`` (each surface decides how a missing value shows).
Rounding is half-up on the decimal digits shown, in integer arithmetic, so the polars twins
(``*_expr``, for texts built over whole columns such as verdicts) write exactly the same text as
the scalar functions. JSON outputs keep raw numbers and never pass through here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import polars as pl

Figure = Literal["size", "duration", "count", "percent"]
"""The kinds of figure :func:`beside_limit` writes."""
BESIDE_EXTRA = 3
"""At most this many decimals more than a figure's own to tell it from its limit; beyond them a size
is written in exact bytes, other figures with as many decimals as it takes."""

# Below these magnitudes (µs) a duration keeps this unit and number of decimals. The bounds are
# where the rounded text would reach the next step (9.995 µs shows as 10.0 µs, not 10.00 µs).
_DURATION_STEPS = ((9.995, 1.0, 2, "µs"), (999.95, 1.0, 1, "µs"), (999_995.0, 1e3, 2, "ms"))
_SECONDS = (1e6, 2, "s")
_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def fixed(value: float, decimals: int) -> str:
    """``value`` rounded half-up to ``decimals`` places, with thousands separators."""
    if not math.isfinite(value):
        return "?"
    scaled = math.floor(abs(value) * 10**decimals + 0.5)
    if scaled >= 2**63:  # as the polars twin, whose integers are 64-bit
        return "?"
    sign = "-" if value < 0 and scaled else ""
    whole, part = divmod(scaled, 10**decimals)
    return sign + f"{whole:,}" + (f".{part:0{decimals}d}" if decimals else "")


def _duration_unit(us: float) -> tuple[float, int, str]:
    """``(scale, decimals, unit)`` a duration of ``us`` µs is written in."""
    size = abs(us)
    for bound, scale, decimals, unit in _DURATION_STEPS:
        if size < bound:
            return scale, decimals, unit
    return _SECONDS


def duration(us: float | None) -> str:
    """A duration given in µs, in the unit that keeps it short (see the module's docstring)."""
    if us is None:
        return ""
    if us == 0:
        return "0.0 µs"
    scale, decimals, unit = _duration_unit(us)
    return f"{fixed(us / scale, decimals)} {unit}"


def count(value: float | None) -> str:
    """``1,234,567``; a fractional value (an average) with two decimals: ``2.33``."""
    if value is None:
        return ""
    if isinstance(value, float) and not value.is_integer():
        return fixed(value, 2)
    return f"{int(value):,}"


def kernel_count(kernels: int | None, gpu_events: int | None) -> str:
    """A kernels column's cell: the kernel count; for work with memcpys/memsets only (``0`` beside
    non-zero GPU time) how many of those: ``2 mem``."""
    if kernels is None:
        return ""
    if kernels == 0 and gpu_events:
        return f"{count(gpu_events)} mem"
    return count(kernels)


def tally(items: Iterable[str]) -> str:
    """Repeated items once, with their number, in first-seen order: ``2 × NVIDIA H200, NVIDIA A100``."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return ", ".join(item if n == 1 else f"{count(n)} × {item}" for item, n in counts.items())


def percent(value: float | None) -> str:
    """A percentage, whole: ``45%``."""
    return "" if value is None else f"{fixed(value, 0)}%"


def signed_percent(value: float | None) -> str:
    """A change in percent, signed, one decimal: ``+11.7%``, ``-3.0%``."""
    if value is None:
        return ""
    return ("+" if value > 0 else "") + f"{fixed(value, 1)}%"


def percent_change(before: float | None, after: float | None) -> str:
    """``+11.7%``: ``after`` relative to ``before``; empty when either is missing or ``before`` is 0."""
    if before is None or after is None or not before:
        return ""
    return signed_percent(100.0 * (after - before) / before)


def signed_duration(us: float | None) -> str:
    """A change of duration, signed: ``+27.2 µs``, ``-1.05 ms``."""
    if us is None:
        return ""
    return ("+" if us > 0 else "") + duration(us)


def duration_change(before: float | None, after: float | None) -> str:
    """``-27.2 µs (-11.7%)``; empty when nothing changed or a side is missing."""
    if before is None or after is None or before == after:
        return ""
    relative = percent_change(before, after)
    text = signed_duration(after - before)
    return f"{text} ({relative})" if relative else text


def count_change(before: float | None, after: float | None) -> str:
    """``+2``, ``-1``; empty when nothing changed or a side is missing."""
    if before is None or after is None or before == after:
        return ""
    delta = after - before
    return ("+" if delta > 0 else "") + count(delta)


def number(value: float) -> str:
    """Three significant digits, whole numbers from 100 up: ``9.99``, ``12.3``, ``661``, ``4,037``."""
    if not math.isfinite(value):
        return "?"
    size = abs(value)
    if size < 9.995:
        return fixed(value, 2)
    return fixed(value, 1) if size < 99.5 else fixed(value, 0)


def si(value: float | None, unit: str) -> str:
    """A quantity with an SI prefix: ``38.7 GFLOP``, ``655 kFLOP``, ``12.5 B``."""
    if value is None:
        return ""
    for factor, prefix in _SI:
        if abs(value) >= factor:
            return f"{number(value / factor)} {prefix}{unit}"
    return f"{number(value)} {unit}"


def flops_rate(tflops: float) -> str:
    """``661.2`` (TFLOP/s) → ``661 TFLOP/s``; below 1 TFLOP/s in GFLOP/s."""
    return f"{number(tflops * 1e3)} GFLOP/s" if tflops < 1 else f"{number(tflops)} TFLOP/s"


def byte_rate(gbs: float) -> str:
    """``4040`` (GB/s) → ``4.04 TB/s``; below 1000 GB/s in GB/s."""
    return f"{number(gbs)} GB/s" if gbs < 1000 else f"{number(gbs / 1e3)} TB/s"


def _size_unit(value: float) -> tuple[float, int, str]:
    """``(scale, decimals, unit)`` a byte count is written in."""
    for power, unit in enumerate(("B", "KiB", "MiB")):
        if abs(value) < 1024 ** (power + 1):
            return 1024.0**power, 0 if unit == "B" else 1, unit
    return 1024.0**3, 1, "GiB"


def size(value: float | None) -> str:
    """A byte count in B, KiB, MiB or GiB: ``512 B``, ``208.2 KiB``."""
    if value is None:
        return ""
    scale, decimals, unit = _size_unit(float(value))
    return f"{fixed(value / scale, decimals)} {unit}"


def _rounded(value: float, decimals: int) -> float:
    """``value`` as :func:`fixed` rounds it (half-up on the magnitude)."""
    whole = math.floor(abs(value) * 10**decimals + 0.5) / 10**decimals
    return math.copysign(whole, value)


def _form(value: float, kind: Figure) -> tuple[float, int, str]:
    """``(scale, decimals, suffix)`` a figure of ``kind`` is written in."""
    if kind == "duration":
        scale, decimals, unit = _duration_unit(value)
        return scale, decimals, f" {unit}"
    if kind == "size":
        scale, decimals, unit = _size_unit(value)
        return scale, decimals, f" {unit}"
    if kind == "percent":
        return 1.0, 0, "%"
    return 1.0, 0 if float(value).is_integer() else 2, ""  # a count: an average has two decimals


def beside_limit(value: float, limit: float, kind: Figure) -> str:
    """``value`` written as ``kind`` writes it (:func:`size`, :func:`duration`, :func:`count`,
    :func:`percent`), with as many more decimals as it takes to differ from ``limit`` written the
    same way, on the side of it that ``value`` is (a figure that broke its limit never reads as
    equal to it, nor one within it as beyond; at the limit, as written anywhere). Up to
    :data:`BESIDE_EXTRA` decimals more; beyond, a size is written in exact bytes
    (``4,294,967,297 B``), other figures with the decimals it takes (past 15 more, the exact float:
    ``1.4e-45 µs`` beside ``6.6e-64 µs``)."""
    side = (value > limit) - (value < limit)
    plain = {"size": size, "duration": duration, "count": count, "percent": percent}[kind]
    scale, decimals, suffix = _form(value, kind)
    for extra in range(16):
        if extra > BESIDE_EXTRA and kind == "size" and float(value).is_integer():
            return f"{int(value):,} B"
        places = decimals + extra
        shown, bound = _rounded(value / scale, places), _rounded(limit / scale, places)
        if (shown > bound) - (shown < bound) == side:
            return plain(value) if extra == 0 else f"{fixed(value / scale, places)}{suffix}"
    return f"{value / scale!r}{suffix}"  # beyond 15 more decimals (e.g. 1e-45 µs): the exact float


_SIZE_UNITS = {
    "b": 1,
    **{f"{prefix}b": 1000**power for power, prefix in enumerate("kmgt", 1)},
    **{f"{prefix}ib": 1024**power for power, prefix in enumerate("kmgt", 1)},
    **{prefix: 1024**power for power, prefix in enumerate("kmgt", 1)},
}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*")


def parse_size(text: str) -> int:
    """A size as people write it, in bytes: ``"900 MiB"``, ``"1.5GiB"``, ``"8M"``, ``"2 GB"``, ``"512 B"``,
    ``"4096"``. Units as written: KiB, MiB, GiB, TiB and the bare K, M, G, T are powers of 1024; kB,
    MB, GB, TB powers of 1000 (units ignore case). The one reader of sizes (expectations files, the
    settings). ValueError, with a message for the user, for anything else."""
    match = _SIZE.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _SIZE_UNITS | {"": 1}:
        raise ValueError(f'not a size: {text!r} (write e.g. "900 MiB", "1.5 GiB" or a number of bytes)')
    return math.floor(Fraction(match.group(1)) * _SIZE_UNITS.get(unit, 1) + Fraction(1, 2))  # half-up


def offset(ns: int | None, t0_ns: int) -> str:
    """A timestamp relative to the trace's time zero, in ms to the µs: ``1,234.567 ms``."""
    return "" if ns is None else f"{fixed((ns - t0_ns) / 1e6, 3)} ms"


# ---- the same texts over polars columns ---------------------------------------------------------


def fixed_expr(value: pl.Expr, decimals: int) -> pl.Expr:
    """:func:`fixed` over a column (null stays null; NaN and infinities: ``?``)."""
    import polars as pl

    scaled = (value.abs() * 10**decimals + 0.5).floor().cast(pl.Int64, strict=False)
    whole = (
        (scaled // 10**decimals)
        .cast(pl.String)
        .str.reverse()
        .str.replace_all(r"(\d{3})", "$1,")
        .str.reverse()
        .str.strip_chars_start(",")
    )
    if decimals:
        part = (scaled % 10**decimals).cast(pl.String).str.zfill(decimals)
        whole = pl.concat_str([whole, pl.lit("."), part])
    text = pl.when((value < 0) & (scaled > 0)).then(pl.concat_str([pl.lit("-"), whole])).otherwise(whole)
    return pl.when(value.is_null()).then(None).when(scaled.is_null()).then(pl.lit("?")).otherwise(text)


def duration_expr(us: pl.Expr) -> pl.Expr:
    """:func:`duration` over a column of µs."""
    import polars as pl

    size = us.abs()
    scale, decimals, unit = _SECONDS
    text = pl.concat_str([fixed_expr(us / scale, decimals), pl.lit(f" {unit}")])
    for bound, scale, decimals, unit in reversed(_DURATION_STEPS):
        shorter = pl.concat_str([fixed_expr(us / scale, decimals), pl.lit(f" {unit}")])
        text = pl.when(size < bound).then(shorter).otherwise(text)
    return pl.when(us == 0).then(pl.lit("0.0 µs")).otherwise(text)


def count_expr(value: pl.Expr) -> pl.Expr:
    """:func:`count` over a column (whole values without decimals, others with two)."""
    import polars as pl

    whole = value.is_finite() & (value == value.floor())
    return pl.when(whole).then(fixed_expr(value, 0)).otherwise(fixed_expr(value, 2))


def size_expr(value: pl.Expr) -> pl.Expr:
    """:func:`size` over a column of bytes."""
    import polars as pl

    size = value.abs()
    text = pl.concat_str([fixed_expr(value / 1024**3, 1), pl.lit(" GiB")])
    for power, unit, decimals in ((2, "MiB", 1), (1, "KiB", 1), (0, "B", 0)):
        shorter = pl.concat_str([fixed_expr(value / 1024**power, decimals), pl.lit(f" {unit}")])
        text = pl.when(size < 1024 ** (power + 1)).then(shorter).otherwise(text)
    return text


def percent_expr(value: pl.Expr) -> pl.Expr:
    """:func:`percent` over a column."""
    import polars as pl

    return pl.concat_str([fixed_expr(value, 0), pl.lit("%")])


def number_expr(value: pl.Expr) -> pl.Expr:
    """:func:`number` over a column."""
    import polars as pl

    size = value.abs()
    return (
        pl.when(size < 9.995)
        .then(fixed_expr(value, 2))
        .when(size < 99.5)
        .then(fixed_expr(value, 1))
        .otherwise(fixed_expr(value, 0))
    )


def flops_rate_expr(tflops: pl.Expr) -> pl.Expr:
    """:func:`flops_rate` over a column of TFLOP/s."""
    import polars as pl

    return (
        pl.when(tflops < 1)
        .then(pl.concat_str([number_expr(tflops * 1e3), pl.lit(" GFLOP/s")]))
        .otherwise(pl.concat_str([number_expr(tflops), pl.lit(" TFLOP/s")]))
    )


def byte_rate_expr(gbs: pl.Expr) -> pl.Expr:
    """:func:`byte_rate` over a column of GB/s."""
    import polars as pl

    return (
        pl.when(gbs < 1000)
        .then(pl.concat_str([number_expr(gbs), pl.lit(" GB/s")]))
        .otherwise(pl.concat_str([number_expr(gbs / 1e3), pl.lit(" TB/s")]))
    )
