"""The decoder tables (:data:`RULES`, :data:`HEAD_RULES`), :func:`decode_kernel_name`, and
:func:`kernel_name_columns` (decode the distinct names of a column)."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

import polars as pl

from tracetui.insight.kernel_names.aten import decode_aten, decode_cub, decode_other
from tracetui.insight.kernel_names.attention import (
    decode_cudnn,
    decode_cudnn_sdpa,
    decode_flash,
    decode_mem_efficient,
    decode_mem_efficient_generic,
)
from tracetui.insight.kernel_names.blas import (
    decode_arch_blas,
    decode_cublas_helper,
    decode_cudnn_cutlass,
    decode_cutlass,
    decode_nvjet,
    decode_xmma,
)
from tracetui.insight.kernel_names.cpp import function_head
from tracetui.insight.kernel_names.distinct import distinct_shorts
from tracetui.insight.kernel_names.fields import Handler, KernelName, Rule
from tracetui.insight.kernel_names.inductor import decode_inductor, decode_user_triton
from tracetui.insight.kernel_names.rocm import (
    decode_ck,
    decode_hipblaslt,
    decode_miopen,
    decode_rocblas,
    decode_tensile,
)
from tracetui.insight.kernel_names.runtime import decode_memcpy, decode_memset, decode_nccl

# --------------------------------------------------------------------------------------------
# the table


def _rule(family: str, pattern: str, handler: Handler, flags: int = 0) -> Rule:
    return Rule(family, re.compile(pattern, flags), handler)


RULES: list[Rule] = [
    _rule("memcpy", r"^Memcpy (\w+) \((\w+) -> (\w+)\)", decode_memcpy),
    _rule("memset", r"^Memset \((\w+)\)", decode_memset),
    _rule("nccl", r"nccl(?:Dev)?Kernel_([A-Za-z0-9_]+)", decode_nccl),
    _rule("inductor", r"^triton_(poi|red|per|tem|for|unk)_(fused_)?(\w*?)_?(\d+)?$", decode_inductor),
    _rule(
        "cublasLt nvjet",
        r"^nvjet_(?:(sm\d+a?)_)?([a-z]+)_(\d+x\d+)_(\d+x\d+)_(\d+x\d+)_([hv])_?(\w*?)_([TN]{2,3})$",
        decode_nvjet,
    ),
    _rule("cudnn", r"^cudnn_generated\w*?_sdpa_(sm\d+)\w*?_(fprop|bprop)", decode_cudnn_sdpa),
    _rule(
        "flash-attention",
        r"(?:(?:pytorch_flash|flash)::|^(?:void )?)(flash_(?:fwd|bwd)\w*?_kernel)",
        decode_flash,
    ),
    _rule(
        "mem-efficient-attention",
        r"fmha_cutlass([FB])_(bf16|f16|f32)_(?:not)?aligned_(\d+x\d+)\w*?(?:_sm(\d+))?(?=\(|$)",
        decode_mem_efficient,
    ),
    _rule(
        "mem-efficient-attention",
        r"PyTorchMemEffAttention|fmha_cutlass|attention_kernel_batched|efficient_attention",
        decode_mem_efficient_generic,
    ),
    _rule("cublas", r"^(sm\d+a?)_xmma_(gemm|fprop|dgrad|wgrad|\w+?)_", decode_xmma),
    _rule(
        "cublas",
        r"^(maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell|sm\d+a?)_(?=\w*(?:gemm|cudnn))",
        decode_arch_blas,
    ),
    _rule("cudnn", r"cutlass__\w*cudnn", decode_cudnn_cutlass),
    _rule("cutlass", r"cutlass", decode_cutlass),
    _rule("tensile", r"^(?:Custom_)?Cijk_A([a-z]+)C?_B([a-z]+)C?_", decode_tensile),
]


# Rules matched against the qualified function name (``function_head``) rather than the whole name.
HEAD_RULES: list[Rule] = [
    _rule(
        "cublas",
        r"^(?:cublasLt::|cublas::)|(?:^|::)(?:splitKreduce_kernel|scal_kernel|sgemm_largek\w*|"
        r"gemv\w*|gemmk1_kernel|gemmSN_\w+_kernel|dot_kernel|reduce_1Block_kernel|asum_kernel|"
        r"nrm2_kernel|axpy_kernel|swap_kernel)$",
        decode_cublas_helper,
    ),
    _rule("aten", r"^(?:at::|at_cuda_detail::(?!cub::)|cunn_|softmax_warp_)", decode_aten),
    _rule("rocblas", r"^rocblas_", decode_rocblas),
    _rule("hipblaslt", r"^hipblaslt", decode_hipblaslt, re.IGNORECASE),
    _rule(
        "miopen",
        r"^(?:MIOpen|miopen|naive_conv_|igemm_(?:fwd|bwd|wrw)_|gridwise_convolution)",
        decode_miopen,
    ),
    _rule("composable-kernel", r"^ck(?:_tile)?::", decode_ck),
    _rule("cudnn", r"(?:^|::|_)cudnn|^xmma_cudnn|implicit_convolve|winograd", decode_cudnn),
    _rule("cub", r"(?:^|::)cub(?:_\w+)?::", decode_cub),
    _rule("triton", r"^(?!Kernel$|kernel$)[A-Za-z_][A-Za-z0-9_]*$", decode_user_triton),
]
"""Second table, matched against the qualified function name (no ``void``, templates, params).

Names with a C++ signature are routed by their function name: ``void at::native::…<…>(…)`` is
ATen whatever its template arguments mention (``at::cuda::philox::unpack_cudnn`` is ATen, not cuDNN).
A bare identifier that no rule claimed is taken for a user ``@triton.jit`` kernel; the full name
must then be that identifier (no ``(`` or spaces).
"""


KERNEL_DESCRIPTOR = ".kd"
"""ROCm's tools may name a kernel by its descriptor's symbol (``_rmsnorm_kernel.kd``,
``triton_poi_fused_mul_0.kd``): the name decodes as the kernel's own."""


def decode_strict(name: str) -> KernelName:
    """Decode without the safety net (tests use this to find handler bugs)."""
    if name.endswith(KERNEL_DESCRIPTOR) and len(name) > len(KERNEL_DESCRIPTOR):
        own = _decode_strict(name[: -len(KERNEL_DESCRIPTOR)])
        note = f"{KERNEL_DESCRIPTOR}: ROCm's kernel-descriptor symbol of {own.name}"
        return dataclasses.replace(own, name=name, notes=(*own.notes, note))
    return _decode_strict(name)


def _decode_strict(name: str) -> KernelName:
    for rule in RULES:
        m = rule.pattern.search(name)
        if m:
            return rule.handler(m, name)
    head = function_head(name)
    for rule in HEAD_RULES:
        m = rule.pattern.search(head)
        if m:
            if rule.family == "triton" and head != name.strip():
                continue
            return rule.handler(m, name)
    return decode_other(name)


@functools.lru_cache(maxsize=16384)
def decode_kernel_name(name: str) -> KernelName:
    """Decode a kernel name (see the module docstring). Never raises; cached per distinct name."""
    if not isinstance(name, str):
        name = str(name)
    try:
        return decode_strict(name)
    except Exception:  # a malformed name must never break a view; show it undecoded instead
        try:
            return decode_other(name)
        except Exception:
            return KernelName(name=name, family="other", kind="other", short="\ufffd")


# --------------------------------------------------------------------------------------------
# vectorised helper

_COLUMN_FIELDS: tuple[str, ...] = (
    "family",
    "kind",
    "op",
    "arch",
    "tile",
    "stages",
    "layout",
    "cluster",
    "dtype",
    "mma",
    "alignment",
    "vector_width",
    "variant",
    "fused_ops",
    "kernel_id",
    "collective",
    "reduce_op",
    "algorithm",
    "protocol",
    "short",
    "notes",
)


def kernel_name_columns(names: pl.Series | Iterable[str]) -> pl.DataFrame:
    """One row per distinct non-null name with the decoded fields; join it back on ``name``. The
    ``short`` forms tell the given names apart (:func:`distinct.distinct_shorts`): pass every name
    of the trace, so that each surface writes the same short form.

    Columns: ``name`` (same dtype as the input Series), ``family, kind, op, arch, tile, stages,
    layout, cluster, dtype, mma, alignment`` (str), ``vector_width`` (Int64), ``variant``,
    ``fused_ops`` (comma-joined str, ``""`` when none), ``kernel_id`` (Int64), ``collective,
    reduce_op, algorithm, protocol, short`` (str) and ``notes`` (List[str]).
    """

    series = names if isinstance(names, pl.Series) else pl.Series("name", list(names), dtype=pl.String)
    # distinct first: a dictionary-encoded column is compared by code, and only its few names become text
    unique = series.drop_nulls().unique(maintain_order=True).cast(pl.String)
    decoded = [decode_kernel_name(n) for n in unique.to_list()]
    shorts = distinct_shorts(decoded)
    data: dict[str, list[Any]] = {"name": unique.to_list()}
    for field in _COLUMN_FIELDS:
        values = [shorts[k.name] if field == "short" else getattr(k, field) for k in decoded]
        if field == "fused_ops":
            values = [",".join(v) for v in values]
        elif field == "notes":
            values = [list(v) for v in values]
        data[field] = values
    schema: dict[str, Any] = {"name": pl.String}
    for field in _COLUMN_FIELDS:
        schema[field] = (
            pl.Int64
            if field in ("vector_width", "kernel_id")
            else pl.List(pl.String)
            if field == "notes"
            else pl.String
        )
    frame = pl.DataFrame(data, schema=schema)
    if series.dtype != pl.String:
        frame = frame.with_columns(pl.col("name").cast(series.dtype))
    return frame
