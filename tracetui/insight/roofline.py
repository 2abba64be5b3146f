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
SXM)``; without peaks (unknown device) it lists the achieved rates only. Two readings refine it:

- **Above a roof** the verdict says why. Faster than the DRAM roof with a working set that fits in
  L2: ``… ; above the DRAM roof: data likely L2-resident (36.0 MiB fits in the 50.0 MiB L2)``, and
  where the device's L2 bandwidth is measured, the fraction is of that L2 roof instead
  (``memory-bound (L2): …``). Faster with more data than L2 holds, or above the compute roof: the
  op's shapes overstate what this kernel did (an in-place op, a broadcast, work shared by kernels).
  Above it by less than :data:`ABOVE_ROOF` (a measured roof is itself a measurement):
  ``… = 103% of 4.26 TB/s (…); at the roof (within the 5 % a measured roof is good to)``.
- **Latency/launch-bound**: a kernel far below its roof (under :data:`LOW_FRACTION`) that is too
  short to fill the GPU (under :data:`SHORT_US`) or launched with fewer blocks than the device has
  SMs: ``latency/launch-bound: only 2.94 µs of GPU time, too short to fill the GPU, grid 16 blocks
  on 132 SMs; 27.0 GB/s = 1% of …``.

:func:`roofline_columns` computes the columns for a whole kernels frame with polars expressions;
:func:`roofline` is the same computation for one kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import polars as pl

from tracetui.formatting import (
    byte_rate_expr,
    duration_expr,
    fixed_expr,
    flops_rate_expr,
    percent_expr,
    size_expr,
)
from tracetui.insight.devices import DTYPE_ALIASES, DevicePeaks, Peak, peaks_for

if TYPE_CHECKING:
    import polars as pl

    from tracetui.insight.kernel_names import KernelName

__all__ = [
    "ABOVE_ROOF",
    "LOW_FRACTION",
    "MATRIX_KINDS",
    "SHORT_US",
    "Roofline",
    "roof_dtype",
    "roofline",
    "roofline_columns",
]

MATRIX_KINDS = frozenset({"gemm", "convolution", "attention", "template"})
"""Kernel/op kinds that run on tensor cores and so get the dtype's matrix roof."""
SHORT_US = 10.0
"""A kernel shorter than this (µs) cannot amortise its launch and ramp: a few µs of fixed cost."""
LOW_FRACTION = 0.25
"""Below this share of its roof a short or small-grid kernel is latency/launch-bound."""
ABOVE_ROOF = 1.05
"""Above this share of its roof a kernel is beyond what the roof allows (a measured roof is itself a
measurement: within 5 % of it is at the roof)."""

Bound = Literal["compute-bound", "memory-bound", "latency-bound"]


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
    """Achieved over attainable (0–1; above 1 the verdict says why)."""
    verdict: str


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
    blocks: int | None = None,
    sms: int | None = None,
) -> Roofline:
    """Achieved rates and the bound verdict for one kernel: :func:`roofline_columns` on one row.

    ``peaks`` is a :class:`DevicePeaks` or a ``deviceProperties`` name (looked up with
    :func:`peaks_for`); ``matrix`` says whether the kernel runs on tensor cores (see
    :data:`MATRIX_KINDS`), which picks the dtype's matrix roof rather than the fp32 CUDA-core roof;
    ``blocks`` is its grid's size and ``sms`` the device's SM count, where known.
    """

    device = peaks_for(peaks) if isinstance(peaks, str) else peaks
    row = pl.DataFrame(
        {
            "flops": [flops],
            "bytes": [bytes_moved],
            "dur": [dur_us],
            "dtype": [dtype],
            "kind": ["gemm" if matrix else "pointwise"],
            "blocks": [blocks],
        },
        schema={
            "flops": pl.Float64,
            "bytes": pl.Float64,
            "dur": pl.Float64,
            "dtype": pl.String,
            "kind": pl.String,
            "blocks": pl.Int64,
        },
    )
    out = roofline_columns(row, device, sms=sms).row(0, named=True)
    compute = device.compute_peak(dtype if matrix else "fp32") if device is not None else None
    valid = dur_us is not None and dur_us > 0 and (flops is not None or bytes_moved is not None)
    return Roofline(
        out["tflops"],
        out["gbs"],
        out["intensity"],
        compute if valid else None,
        device.memory if device is not None and valid else None,
        out["ridge"] if valid else None,
        out["bound"],
        out["roof_fraction"],
        out["verdict"],
    )


def roofline_columns(
    df: pl.DataFrame,
    device_name: str | DevicePeaks | None,
    *,
    flops: str = "flops",
    bytes_col: str = "bytes",
    dur: str = "dur",
    dtype: str = "dtype",
    kind: str = "kind",
    call_dur: str | None = None,
    blocks: str = "blocks",
    sms: int | None = None,
) -> pl.DataFrame:
    """``df`` with roofline columns added, computed with polars expressions (no Python per row).

    Reads ``flops`` and ``bytes_col`` (numbers, null when unknown), ``dur`` (µs) and, when present,
    ``dtype`` (roof dtype, see :func:`roof_dtype`), ``kind`` (matrix kinds get the dtype's roof,
    others the fp32 CUDA-core roof) and ``blocks`` (the grid's size). ``call_dur`` is the duration
    of one call where a row sums several (default ``dur``); ``sms`` the device's SM count. Adds
    ``tflops``, ``gbs``, ``intensity``, ``peak_tflops``, ``peak_gbs``, ``ridge``, ``bound``,
    ``roof_fraction`` (Float64/str) and ``verdict`` (str).
    """

    device = peaks_for(device_name) if isinstance(device_name, str) else device_name
    col = pl.col
    f, b, d = (col(c).cast(pl.Float64) for c in (flops, bytes_col, dur))
    if dtype in df.columns:
        roof_key = col(dtype).cast(pl.String).str.to_lowercase()
    else:
        roof_key = pl.lit(None, dtype=pl.String)
    if kind in df.columns:
        roof_key = pl.when(col(kind).is_in(list(MATRIX_KINDS))).then(roof_key).otherwise(pl.lit("fp32"))
    none_f, none_s = pl.lit(None, pl.Float64), pl.lit(None, pl.String)
    peak_t, label_t, peak_b, label_b = none_f, none_s, none_f, none_s
    if device is not None:
        keys = {k: k for k in device.compute} | {
            alias: canonical for alias, canonical in DTYPE_ALIASES.items() if canonical in device.compute
        }
        values = {k: device.compute[c].value for k, c in keys.items()}
        labels = {k: device.compute[c].label for k, c in keys.items()}
        peak_t = roof_key.replace_strict(values, default=None, return_dtype=pl.Float64)
        label_t = roof_key.replace_strict(labels, default=None, return_dtype=pl.String)
        peak_b, label_b = pl.lit(device.memory.value, pl.Float64), pl.lit(device.memory.label)
    l2 = device.l2 if device is not None else None
    l2_bytes = device.l2_bytes if device is not None else None
    # Stages of small expressions (one big nested expression takes polars ~1 s to plan).
    staged = df.with_columns(
        _f=f,
        _b=b,
        _d=d,
        _one=col(call_dur).cast(pl.Float64) if call_dur is not None else d,
        _grid=col(blocks).cast(pl.Float64) if blocks in df.columns else none_f,
        _valid=d.is_not_null() & (d > 0) & (f.is_not_null() | b.is_not_null()),
        peak_tflops=peak_t,
        _label_t=label_t,
        peak_gbs=peak_b,
    ).with_columns(
        _work=col("_f").fill_null(0.0),
        _achieved_b=col("_b") / col("_d") / 1e3,
        ridge=col("peak_tflops") * 1e3 / col("peak_gbs"),
        _has_bytes=col("_b").is_not_null() & (col("_b") > 0),
    )
    staged = staged.with_columns(
        tflops=pl.when(col("_valid") & col("_f").is_not_null()).then(col("_f") / col("_d") / 1e6),
        gbs=pl.when(col("_valid") & col("_b").is_not_null()).then(col("_achieved_b")),
        intensity=pl.when(col("_valid") & col("_has_bytes")).then(col("_work") / col("_b")),
        _achieved_t=col("_work") / col("_d") / 1e6,
        _roof=pl.when(~col("_valid") | col("peak_gbs").is_null())
        .then(none_s)
        .when(col("_has_bytes") & col("ridge").is_not_null() & (col("_work") / col("_b") >= col("ridge")))
        .then(pl.lit("compute-bound"))
        .when(col("_has_bytes") & (col("ridge").is_not_null() | (col("_work") == 0)))
        .then(pl.lit("memory-bound")),
    )
    # above the DRAM roof with a working set (per call) that fits in L2: L2-resident
    staged = staged.with_columns(
        _call_bytes=col("_b") * col("_one") / col("_d"),
        _dram=col("_achieved_b") / col("peak_gbs"),
    ).with_columns(
        _in_l2=(col("_roof") == "memory-bound")
        & (col("_dram") > ABOVE_ROOF)
        & (col("_call_bytes") <= pl.lit(l2_bytes, pl.Float64)).fill_null(False)
    )
    on_l2 = col("_in_l2") & pl.lit(l2 is not None)
    staged = staged.with_columns(
        _on_l2=on_l2,
        roof_fraction=pl.when(col("_roof") == "compute-bound")
        .then(col("_achieved_t") / col("peak_tflops"))
        .when(on_l2)
        .then(col("_achieved_b") / pl.lit(l2.value if l2 else None, pl.Float64))
        .when((col("_roof") == "memory-bound") & col("_b").is_not_null())
        .then(col("_dram")),
        _memory_roof=pl.when(on_l2)
        .then(pl.lit(l2.value if l2 else None, pl.Float64))
        .otherwise(col("peak_gbs")),
        _memory_label=pl.when(on_l2).then(pl.lit(l2.label if l2 else None)).otherwise(label_b),
    )
    small_grid = col("_grid") < pl.lit(sms, pl.Float64) if sms is not None else pl.lit(False)
    staged = staged.with_columns(
        _latency=(
            col("_roof").is_not_null()
            & (col("roof_fraction") < LOW_FRACTION)
            & ((col("_one") < SHORT_US) | small_grid.fill_null(False))
        ).fill_null(False),
        _pct=percent_expr(col("roof_fraction") * 100),
    )
    compute_rate = pl.format(
        "{} = {} of {} ({})",
        flops_rate_expr(col("_achieved_t")),
        col("_pct"),
        flops_rate_expr(col("peak_tflops")),
        col("_label_t"),
    )
    memory_rate = pl.format(
        "{} = {} of {} ({})",
        byte_rate_expr(col("_achieved_b")),
        col("_pct"),
        byte_rate_expr(col("_memory_roof")),
        col("_memory_label"),
    )
    fits = pl.format(
        "{} fits in the {} L2", size_expr(col("_call_bytes")), size_expr(pl.lit(l2_bytes, pl.Float64))
    )
    blocks_word = pl.when(col("_grid") == 1).then(pl.lit("block")).otherwise(pl.lit("blocks"))
    grid_text = pl.format("grid {} {} on {} SMs", fixed_expr(col("_grid"), 0), blocks_word, pl.lit(sms))
    staged = staged.with_columns(
        _rate=pl.when(col("_roof") == "compute-bound").then(compute_rate).otherwise(memory_rate),
        _why=pl.when(col("_on_l2"))
        .then(pl.format("; above the {} DRAM roof: {}", byte_rate_expr(col("peak_gbs")), fits))
        .when(col("_in_l2"))
        .then(pl.format("; above the DRAM roof: data likely L2-resident ({})", fits))
        .when(col("roof_fraction") > ABOVE_ROOF)
        .then(
            pl.lit(
                "; above the roof: the op's shapes overstate what this kernel did (in place, broadcast, "
                "or work shared with its other kernels)"
            )
        )
        .when(col("roof_fraction") > 1)
        .then(pl.lit("; at the roof (within the 5 % a measured roof is good to)"))
        .otherwise(pl.lit("")),
        _reason=pl.concat_str(
            [
                pl.when(col("_one") < SHORT_US).then(
                    pl.format("only {} of GPU time, too short to fill the GPU", duration_expr(col("_one")))
                ),
                pl.when(col("_grid").is_not_null() & pl.lit(sms is not None)).then(grid_text),
            ],
            separator=", ",
            ignore_nulls=True,
        ),
        _rates=pl.concat_str(
            [flops_rate_expr(col("_f") / col("_d") / 1e6), byte_rate_expr(col("_achieved_b"))],
            separator=", ",
            ignore_nulls=True,
        ),
    )
    verdict = (
        pl.when(col("_d").is_null() | ~(col("_d") > 0))
        .then(pl.lit("no duration"))
        .when(~col("_valid"))
        .then(pl.lit(""))
        .when(col("_latency"))
        .then(pl.format("latency/launch-bound: {}; {}", col("_reason"), col("_rate")))
        .when(col("_roof").is_not_null() & col("roof_fraction").is_not_null())
        .then(
            pl.format(
                "{}: {}{}",
                pl.when(col("_on_l2")).then(pl.lit("memory-bound (L2)")).otherwise(col("_roof")),
                col("_rate"),
                col("_why"),
            )
        )
        .otherwise(col("_rates"))
    )
    bound = (
        pl.when(col("roof_fraction").is_null())
        .then(none_s)
        .when(col("_latency"))
        .then(pl.lit("latency-bound"))
        .otherwise(col("_roof"))
    )
    out = staged.with_columns(bound.alias("bound"), verdict.alias("verdict"))
    columns = [
        "tflops",
        "gbs",
        "intensity",
        "peak_tflops",
        "peak_gbs",
        "ridge",
        "bound",
        "roof_fraction",
        "verdict",
    ]
    return df.drop([c for c in columns if c in df.columns]).hstack(out.select(columns))
