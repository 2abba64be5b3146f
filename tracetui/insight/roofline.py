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

A kernel with bytes but no FLOPs (a copy, a fill) counts as 0 FLOPs: memory-bound. Without bytes
there is no intensity and so no verdict, only the achieved rate.

A memcpy is read against the roof of its kind of copy (:func:`copy_kind`, the roofs of
:attr:`~tracetui.insight.devices.DevicePeaks.copy_roofs`), never the compute roofs: device to device
against the device's copy rate (half its memory roof: each byte read and written, ``memory-bound:
1.83 TB/s = 86% of 2.13 TB/s (measured device copy on H200 SXM: a copy reads and writes each byte,
4.26 TB/s of traffic)``); host to device and back against the host link (``host-link-bound: 53.5
GB/s = 84% of 64.0 GB/s (PCIe Gen5 x16 host link of H200 SXM, per direction); pinned host memory:
…``), saying whether the host memory was pinned or pageable (pageable memory goes through a
host-side staging copy first); GPU to GPU against the peer link (``peer-link-bound: …``). A copy
too small to amortise its fixed cost reads ``latency-bound: only 4 B in 1.47 µs: …``.
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
    "COPY_KINDS",
    "LOW_FRACTION",
    "MATRIX_KINDS",
    "SHORT_US",
    "Roofline",
    "copy_kind",
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

Bound = Literal["compute-bound", "memory-bound", "host-link-bound", "peer-link-bound", "latency-bound"]

CopyKind = Literal["device", "host-pinned", "host-pageable", "host", "peer"]
COPY_KINDS: tuple[CopyKind, ...] = ("device", "host-pinned", "host-pageable", "host", "peer")
"""What a copy crosses: device memory only, the host link (pinned, pageable or other host memory:
managed, unknown), the peer link."""
_COPY_DIRECTIONS = {
    "DtoD": "device",
    "DtoA": "device",
    "AtoD": "device",
    "AtoA": "device",
    "HtoD": "host",
    "DtoH": "host",
    "HtoA": "host",
    "AtoH": "host",
    "PtoP": "peer",
}
"""CUPTI's copy kinds (kineto's ``memcpyKindString``; ``A`` is a CUDA array, device memory)."""
_HOST_MEMORY = {"Pinned": "host-pinned", "Pageable": "host-pageable"}
_COPY_NOTES = {
    "host-pinned": "; pinned host memory: the copy engine reads it directly (at best ~85% of a PCIe "
    "link: 55 GB/s of Gen5 x16's 64 on an H100)",
    "host-pageable": "; pageable host memory: the driver first copies it into a pinned staging buffer "
    "on the host, so this rate is as much that host copy's as the link's (pin the tensor, "
    ".pin_memory(), and copy with non_blocking=True)",
}


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


def copy_kind(direction: str | None, memory: str | None = None) -> CopyKind | None:
    """What a memcpy crosses (see :data:`COPY_KINDS`), from its direction (``HtoD``, ``DtoD``,
    ``PtoP``, …) and its memory kinds as the name writes them (``Pageable -> Device``); None for a
    host-to-host copy or an unknown direction (no roof)."""
    side = _COPY_DIRECTIONS.get(direction or "")
    if side != "host":
        return side  # type: ignore[return-value]
    kinds = [_HOST_MEMORY[word] for word in (memory or "").replace("->", " ").split() if word in _HOST_MEMORY]
    return kinds[0] if kinds else "host"  # type: ignore[return-value]


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
    copy: CopyKind | None = None,
) -> Roofline:
    """Achieved rates and the bound verdict for one kernel: :func:`roofline_columns` on one row.

    ``peaks`` is a :class:`DevicePeaks` or a ``deviceProperties`` name (looked up with
    :func:`peaks_for`); ``matrix`` says whether the kernel runs on tensor cores (see
    :data:`MATRIX_KINDS`), which picks the dtype's matrix roof rather than the fp32 CUDA-core roof;
    ``blocks`` is its grid's size and ``sms`` the device's SM count, where known; ``copy``: a
    memcpy's kind (:func:`copy_kind`), read against its copy roof.
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
            "copy": [copy],
        },
        schema={
            "flops": pl.Float64,
            "bytes": pl.Float64,
            "dur": pl.Float64,
            "dtype": pl.String,
            "kind": pl.String,
            "blocks": pl.Int64,
            "copy": pl.String,
        },
    )
    out = roofline_columns(row, device, sms=sms).row(0, named=True)
    compute = device.compute_peak(dtype if matrix else "fp32") if device is not None else None
    memory = device.memory if device is not None else None
    if device is not None and copy is not None:
        compute, memory = None, _copy_roof(device, copy)
    valid = dur_us is not None and dur_us > 0 and (flops is not None or bytes_moved is not None)
    return Roofline(
        out["tflops"],
        out["gbs"],
        out["intensity"],
        compute if valid else None,
        memory if valid else None,
        out["ridge"] if valid else None,
        out["bound"],
        out["roof_fraction"],
        out["verdict"],
    )


def _copy_roof(device: DevicePeaks, copy: str) -> Peak | None:
    """The roof of a copy of kind ``copy`` on ``device``."""
    roofs = device.copy_roofs
    if roofs is None:
        return None
    return roofs.device if copy == "device" else roofs.peer if copy == "peer" else roofs.host


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
    copy: str = "copy",
    sms: int | None = None,
) -> pl.DataFrame:
    """``df`` with roofline columns added, computed with polars expressions (no Python per row).

    Reads ``flops`` and ``bytes_col`` (numbers, null when unknown), ``dur`` (µs) and, when present,
    ``dtype`` (roof dtype, see :func:`roof_dtype`), ``kind`` (matrix kinds get the dtype's roof,
    others the fp32 CUDA-core roof), ``blocks`` (the grid's size) and ``copy`` (a memcpy's
    :func:`copy_kind`: its copy roof, no compute roof). ``call_dur`` is the duration
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
    copy_of = col(copy).cast(pl.String) if copy in df.columns else none_s
    host = copy_of.str.starts_with("host").fill_null(False)
    peer = (copy_of == "peer").fill_null(False)
    peak_t, label_t, peak_b, label_b = none_f, none_s, none_f, none_s
    if device is not None:
        keys = {k: k for k in device.compute} | {
            alias: canonical for alias, canonical in DTYPE_ALIASES.items() if canonical in device.compute
        }
        values = {k: device.compute[c].value for k, c in keys.items()}
        labels = {k: device.compute[c].label for k, c in keys.items()}
        # a copy does no arithmetic: no compute roof (so no ridge), its own memory roof
        peak_t = pl.when(copy_of.is_null()).then(
            roof_key.replace_strict(values, default=None, return_dtype=pl.Float64)
        )
        label_t = roof_key.replace_strict(labels, default=None, return_dtype=pl.String)
        roofs = {kind: _copy_roof(device, kind) for kind in COPY_KINDS}
        peak_b = copy_of.replace_strict(
            {k: p.value for k, p in roofs.items() if p is not None},
            default=device.memory.value,
            return_dtype=pl.Float64,
        )
        label_b = copy_of.replace_strict(
            {k: p.label for k, p in roofs.items() if p is not None},
            default=device.memory.label,
            return_dtype=pl.String,
        )
    l2 = device.l2 if device is not None else None
    l2_bytes = device.l2_bytes if device is not None else None
    # Stages of small expressions (one big nested expression takes polars ~1 s to plan).
    staged = df.with_columns(
        _f=f,
        _b=b,
        _d=d,
        _one=col(call_dur).cast(pl.Float64) if call_dur is not None else d,
        _grid=col(blocks).cast(pl.Float64) if blocks in df.columns else none_f,
        _copy=copy_of,
        _host=host,
        _peer=peer,
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
        tflops=pl.when(col("_valid") & col("_f").is_not_null() & col("_copy").is_null()).then(
            col("_f") / col("_d") / 1e6
        ),
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
    # above the DRAM roof with a working set (per call) that fits in L2: L2-resident (a device
    # copy's working set is what it reads and writes; a copy over a link never is)
    staged = staged.with_columns(
        _call_bytes=col("_b") * col("_one") / col("_d"),
        _dram=col("_achieved_b") / col("peak_gbs"),
    ).with_columns(
        _working_set=pl.when(col("_copy") == "device")
        .then(2 * col("_call_bytes"))
        .otherwise(col("_call_bytes")),
    )
    staged = staged.with_columns(
        _in_l2=(col("_roof") == "memory-bound")
        & ~col("_host")
        & ~col("_peer")
        & (col("_dram") > ABOVE_ROOF)
        & (col("_working_set") <= pl.lit(l2_bytes, pl.Float64)).fill_null(False)
    )
    on_l2 = col("_in_l2") & pl.lit(l2 is not None) & col("_copy").is_null()  # the L2 roof is a read's
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
        "{} fits in the {} L2", size_expr(col("_working_set")), size_expr(pl.lit(l2_bytes, pl.Float64))
    )
    blocks_word = pl.when(col("_grid") == 1).then(pl.lit("block")).otherwise(pl.lit("blocks"))
    grid_text = pl.format("grid {} {} on {} SMs", fixed_expr(col("_grid"), 0), blocks_word, pl.lit(sms))
    staged = staged.with_columns(
        _rate=pl.when(col("_roof") == "compute-bound").then(compute_rate).otherwise(memory_rate),
        _why=pl.when(col("_on_l2"))
        .then(pl.format("; above the {} DRAM roof: {}", byte_rate_expr(col("peak_gbs")), fits))
        .when(col("_in_l2"))
        .then(pl.format("; above the DRAM roof: data likely L2-resident ({})", fits))
        .when((col("roof_fraction") > ABOVE_ROOF) & col("_copy").is_not_null())
        .then(
            pl.lit(
                "; above the roof: the copy's own bytes and time beat it, so this machine's link or "
                "memory is not the table's for this part"
            )
        )
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
                pl.when((col("_one") < SHORT_US) & col("_copy").is_not_null()).then(
                    pl.format(
                        "only {} in {}: a copy this small costs its fixed latency",
                        size_expr(col("_call_bytes")),
                        duration_expr(col("_one")),
                    )
                ),
                pl.when((col("_one") < SHORT_US) & col("_copy").is_null()).then(
                    pl.format("only {} of GPU time, too short to fill the GPU", duration_expr(col("_one")))
                ),
                pl.when(col("_grid").is_not_null() & pl.lit(sms is not None)).then(grid_text),
            ],
            separator=", ",
            ignore_nulls=True,
        ),
        _rates=pl.concat_str(
            [flops_rate_expr(col("tflops")), byte_rate_expr(col("_achieved_b"))],
            separator=", ",
            ignore_nulls=True,
        ),
    )
    roof_word = (
        pl.when(col("_host"))
        .then(pl.lit("host-link-bound"))
        .when(col("_peer"))
        .then(pl.lit("peer-link-bound"))
        .otherwise(col("_roof"))
    )
    latency_word = pl.when(col("_copy").is_not_null()).then(pl.lit("latency-bound"))
    verdict = (
        pl.when(col("_d").is_null() | ~(col("_d") > 0))
        .then(pl.lit("no duration"))
        .when(~col("_valid"))
        .then(pl.lit(""))
        .when(col("_latency"))
        .then(
            pl.format(
                "{}: {}; {}",
                latency_word.otherwise(pl.lit("latency/launch-bound")),
                col("_reason"),
                col("_rate"),
            )
        )
        .when(col("_roof").is_not_null() & col("roof_fraction").is_not_null())
        .then(
            pl.format(
                "{}: {}{}",
                pl.when(col("_on_l2")).then(pl.lit("memory-bound (L2)")).otherwise(roof_word),
                col("_rate"),
                col("_why"),
            )
        )
        .otherwise(col("_rates"))
    )
    note = col("_copy").replace_strict(_COPY_NOTES, default="", return_dtype=pl.String)
    verdict = (
        pl.when(verdict.is_not_null() & (verdict != "") & (verdict != "no duration"))
        .then(pl.concat_str([verdict, note]))
        .otherwise(verdict)
    )
    bound = (
        pl.when(col("roof_fraction").is_null())
        .then(none_s)
        .when(col("_latency"))
        .then(pl.lit("latency-bound"))
        .otherwise(roof_word)
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
