"""Achieved rates, arithmetic intensity and a bound verdict for a kernel (the roofline model).

Given the FLOPs and bytes a kernel's op implies (:mod:`tracetui.insight.flops`), its duration in µs
and the device's peaks (:mod:`tracetui.insight.devices`):

- achieved TFLOP/s = flops / dur, achieved GB/s = bytes / dur, intensity = flops / bytes;
- the compute roof is the peak for the dtype (``bf16``, ``fp16``, ``tf32``, ``fp32``, ``fp8``, …) for
  matrix kernels (GEMM, convolution, attention); other kernels get the CUDA-core ``fp32`` roof;
- the ridge is compute roof / memory roof (FLOP per byte). At or above it a kernel is
  ``compute-bound`` and its fraction is achieved TFLOP/s over the compute roof; below it
  ``memory-bound`` and its fraction is achieved GB/s over the memory roof. Either way the fraction is
  achieved FLOP/s over the attainable ``min(compute roof, intensity × memory roof)``: how close the
  kernel runs to its roof.

A kernel with bytes but no FLOPs (a copy, a fill, a memcpy) counts as 0 FLOPs: memory-bound. Without
bytes there is no intensity and so no verdict, only the achieved rate.
The verdict reads e.g. ``memory-bound: 4.04 TB/s = 95% of 4.26 TB/s (measured device copy on H200
SXM)``; without peaks (unknown device) it lists the achieved rates only.
:func:`roofline_columns` computes the same columns for a whole kernels frame with polars
expressions, and its ``verdict`` text is identical to :func:`roofline`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tracetui.formatting import (
    byte_rate,
    byte_rate_expr,
    flops_rate,
    flops_rate_expr,
    percent,
    percent_expr,
)
from tracetui.insight.devices import DTYPE_ALIASES, DevicePeaks, Peak, peaks_for

if TYPE_CHECKING:
    import polars as pl

    from tracetui.insight.kernel_names import KernelName

__all__ = [
    "MATRIX_KINDS",
    "Roofline",
    "roof_dtype",
    "roofline",
    "roofline_columns",
]

MATRIX_KINDS = frozenset({"gemm", "convolution", "attention", "template"})
"""Kernel/op kinds that run on tensor cores and so get the dtype's matrix roof."""

Bound = Literal["compute-bound", "memory-bound"]


@dataclass(frozen=True, slots=True)
class Roofline:
    """Where one kernel sits against its device's roofs."""

    tflops: float | None
    """Achieved TFLOP/s (``None`` without FLOPs or duration)."""
    gbs: float | None
    """Achieved GB/s (10⁹ bytes/s)."""
    intensity: float | None
    """FLOP per byte."""
    compute_peak: Peak | None
    memory_peak: Peak | None
    ridge: float | None
    """FLOP per byte where the compute and memory roofs meet."""
    bound: Bound | None
    fraction: float | None
    """Achieved over attainable (0–1, can exceed 1 when the roof is a measured one)."""
    verdict: str


# --------------------------------------------------------------------------------------------
# scalar


def roof_dtype(dtype: str | None, kernel: KernelName | None = None) -> str | None:
    """The dtype whose compute roof applies: the op's dtype, refined by what the kernel name says.

    An fp32 op whose kernel is a TF32 tensor-core kernel gets the ``tf32`` roof; a kernel that says it
    uses plain FMA (``ffma``/``simt``) gets ``fp32`` whatever the op's dtype.
    """
    if kernel is not None:
        if kernel.mma in ("ffma", "simt"):
            return "fp32"
        if kernel.dtype == "tf32" or (kernel.mma or "").startswith("tf32"):
            return "tf32"
        if dtype is None:
            return kernel.dtype
    return dtype


def roofline(
    flops: float | None,
    bytes_moved: float | None,
    dur_us: float | None,
    peaks: DevicePeaks | str | None = None,
    dtype: str | None = None,
    *,
    matrix: bool = True,
) -> Roofline:
    """Achieved rates and the bound verdict for one kernel.

    ``peaks`` is a :class:`DevicePeaks` or a ``deviceProperties`` name (looked up with
    :func:`peaks_for`); ``matrix`` says whether the kernel runs on tensor cores (see
    :data:`MATRIX_KINDS`), which picks the dtype's matrix roof rather than the fp32 CUDA-core roof.
    """
    device = peaks_for(peaks) if isinstance(peaks, str) else peaks
    if dur_us is None or not dur_us > 0:
        return Roofline(None, None, None, None, None, None, None, None, "no duration")
    if flops is None and bytes_moved is None:
        return Roofline(None, None, None, None, None, None, None, None, "")
    tflops = flops / dur_us / 1e6 if flops is not None else None
    gbs = bytes_moved / dur_us / 1e3 if bytes_moved is not None else None
    work = flops if flops is not None else 0.0
    intensity = work / bytes_moved if bytes_moved else None
    compute = memory = None
    ridge: float | None = None
    bound: Bound | None = None
    fraction: float | None = None
    if device is not None:
        compute = device.compute_peak(dtype if matrix else "fp32")
        memory = device.memory
        if compute is not None:
            ridge = compute.value * 1e3 / memory.value
        if intensity is not None and (ridge is not None or work == 0):
            bound = "compute-bound" if ridge is not None and intensity >= ridge else "memory-bound"
        if bound == "compute-bound" and compute is not None:
            fraction = (work / dur_us / 1e6) / compute.value
        elif bound == "memory-bound" and gbs is not None:
            fraction = gbs / memory.value
    if bound is not None and fraction is not None:
        if bound == "compute-bound" and compute is not None:
            achieved, roof, label = (
                flops_rate(work / dur_us / 1e6),
                flops_rate(compute.value),
                compute.label,
            )
        else:
            assert memory is not None and gbs is not None
            achieved, roof, label = byte_rate(gbs), byte_rate(memory.value), memory.label
        verdict = f"{bound}: {achieved} = {percent(fraction * 100)} of {roof} ({label})"
    else:
        verdict = ", ".join(
            [
                *([flops_rate(tflops)] if tflops is not None else []),
                *([byte_rate(gbs)] if gbs is not None else []),
            ]
        )
    return Roofline(tflops, gbs, intensity, compute, memory, ridge, bound, fraction, verdict)


# --------------------------------------------------------------------------------------------
# polars


def roofline_columns(
    df: pl.DataFrame,
    device_name: str | DevicePeaks | None,
    *,
    flops: str = "flops",
    bytes_col: str = "bytes",
    dur: str = "dur",
    dtype: str = "dtype",
    kind: str = "kind",
) -> pl.DataFrame:
    """``df`` with roofline columns added, computed with polars expressions (no Python per row).

    Reads ``flops`` and ``bytes_col`` (numbers, null when unknown), ``dur`` (µs) and, when present,
    ``dtype`` (roof dtype, see :func:`roof_dtype`) and ``kind`` (matrix kinds get the dtype's roof,
    others the fp32 CUDA-core roof). Adds ``tflops``, ``gbs``, ``intensity``, ``peak_tflops``,
    ``peak_gbs``, ``ridge``, ``bound``, ``roof_fraction`` (Float64/str) and ``verdict`` (str, the
    same text as :func:`roofline`).
    """
    import polars as pl

    device = peaks_for(device_name) if isinstance(device_name, str) else device_name
    f = pl.col(flops).cast(pl.Float64)
    b = pl.col(bytes_col).cast(pl.Float64)
    d = pl.col(dur).cast(pl.Float64)
    valid = d.is_not_null() & (d > 0) & (f.is_not_null() | b.is_not_null())
    work = f.fill_null(0.0)
    tflops = pl.when(valid & f.is_not_null()).then(f / d / 1e6)
    gbs = pl.when(valid & b.is_not_null()).then(b / d / 1e3)
    intensity = pl.when(valid & b.is_not_null() & (b > 0)).then(work / b)
    if dtype in df.columns:
        roof_key = pl.col(dtype).cast(pl.String).str.to_lowercase()
    else:
        roof_key = pl.lit(None, dtype=pl.String)
    if kind in df.columns:
        roof_key = pl.when(pl.col(kind).is_in(list(MATRIX_KINDS))).then(roof_key).otherwise(pl.lit("fp32"))
    if device is not None:
        keys = {k: k for k in device.compute} | {
            alias: canonical for alias, canonical in DTYPE_ALIASES.items() if canonical in device.compute
        }
        values = {k: device.compute[c].value for k, c in keys.items()}
        labels = {k: device.compute[c].label for k, c in keys.items()}
        peak_t = roof_key.replace_strict(values, default=None, return_dtype=pl.Float64)
        label_t = roof_key.replace_strict(labels, default=None, return_dtype=pl.String)
        peak_b = pl.lit(device.memory.value, dtype=pl.Float64)
        label_b = pl.lit(device.memory.label)
    else:
        peak_t = pl.lit(None, dtype=pl.Float64)
        label_t = pl.lit(None, dtype=pl.String)
        peak_b = pl.lit(None, dtype=pl.Float64)
        label_b = pl.lit(None, dtype=pl.String)
    ridge = peak_t * 1e3 / peak_b
    has_bytes = b.is_not_null() & (b > 0)
    bound = (
        pl.when(~valid | peak_b.is_null())
        .then(pl.lit(None, dtype=pl.String))
        .when(has_bytes & ridge.is_not_null() & (work / b >= ridge))
        .then(pl.lit("compute-bound"))
        .when(has_bytes & (ridge.is_not_null() | (work == 0)))
        .then(pl.lit("memory-bound"))
    )
    achieved_t = work / d / 1e6
    fraction = (
        pl.when(bound == "compute-bound")
        .then(achieved_t / peak_t)
        .when((bound == "memory-bound") & b.is_not_null())
        .then(b / d / 1e3 / peak_b)
    )
    pct = percent_expr(fraction * 100)
    compute_text = pl.concat_str(
        [
            pl.lit("compute-bound: "),
            flops_rate_expr(achieved_t),
            pl.lit(" = "),
            pct,
            pl.lit(" of "),
            flops_rate_expr(peak_t),
            pl.lit(" ("),
            label_t,
            pl.lit(")"),
        ]
    )
    memory_text = pl.concat_str(
        [
            pl.lit("memory-bound: "),
            byte_rate_expr(b / d / 1e3),
            pl.lit(" = "),
            pct,
            pl.lit(" of "),
            byte_rate_expr(peak_b),
            pl.lit(" ("),
            label_b,
            pl.lit(")"),
        ]
    )
    rates_text = pl.concat_str(
        [flops_rate_expr(f / d / 1e6), byte_rate_expr(b / d / 1e3)], separator=", ", ignore_nulls=True
    )
    verdict = (
        pl.when(d.is_null() | ~(d > 0))
        .then(pl.lit("no duration"))
        .when(~valid)
        .then(pl.lit(""))
        .when((bound == "compute-bound") & fraction.is_not_null())
        .then(compute_text)
        .when((bound == "memory-bound") & fraction.is_not_null())
        .then(memory_text)
        .otherwise(rates_text)
    )
    return df.with_columns(
        tflops.alias("tflops"),
        gbs.alias("gbs"),
        intensity.alias("intensity"),
        peak_t.alias("peak_tflops"),
        peak_b.alias("peak_gbs"),
        ridge.alias("ridge"),
        bound.alias("bound"),
        fraction.alias("roof_fraction"),
        verdict.alias("verdict"),
    )
