"""What a decoded kernel name holds (:class:`KernelName`), the families and kinds, and the rule type."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FAMILIES: tuple[str, ...] = (
    "cublasLt nvjet",
    "cublas",
    "cublasLt",
    "cutlass",
    "inductor",
    "triton",
    "aten",
    "flash-attention",
    "mem-efficient-attention",
    "cudnn",
    "nccl",
    "cub",
    "tensile",
    "hipblaslt",
    "rocblas",
    "miopen",
    "composable-kernel",
    "memcpy",
    "memset",
    "other",
)
"""Every value :attr:`KernelName.family` can take."""

KINDS: tuple[str, ...] = (
    "gemm",
    "gemv",
    "blas",
    "elementwise",
    "pointwise",
    "reduction",
    "persistent-reduction",
    "template",
    "foreach",
    "attention",
    "convolution",
    "collective",
    "copy",
    "fill",
    "softmax",
    "norm",
    "loss",
    "rng",
    "index",
    "sort",
    "scan",
    "pooling",
    "epilogue",
    "layout",
    "custom",
    "other",
)
"""Every value :attr:`KernelName.kind` can take."""

SHORT_MAX = 96


@dataclass(frozen=True, slots=True)
class KernelName:
    """What a kernel name says. Fields the name does not carry are ``None`` (or empty)."""

    name: str
    """The name as given."""
    family: str
    """Library or generator: one of :data:`FAMILIES`."""
    kind: str
    """Kind of work: one of :data:`KINDS`."""
    short: str
    """A short readable form for a tree label; never contains control characters."""
    op: str | None = None
    """The operation: ``gelu``, ``mul``, ``sum``, ``log_softmax forward``, ``HtoD``, …"""
    arch: str | None = None
    """Target architecture, e.g. ``sm90``."""
    tile: str | None = None
    """Output (CTA) tile, e.g. ``256x128``."""
    stages: str | None = None
    """K tile × pipeline stages (``64x4``), or the stage count alone (``3``) where that is all."""
    layout: str | None = None
    """Operand layouts as written in the name, e.g. ``TNT`` or ``tn``."""
    cluster: str | None = None
    """Thread-block cluster shape (Hopper), e.g. ``1x2``."""
    dtype: str | None = None
    """Data type: ``bf16``, ``fp16``, ``fp32``, ``tf32``, ``fp64``, ``fp8``, ``int8``, …"""
    mma: str | None = None
    """Math instruction: tensor-core MMA shape token (``s16816``), ``wgmma``, ``ffma``, ``simt``, …"""
    alignment: str | None = None
    """Operand alignment in elements, e.g. ``8`` (``align8``) or ``a4 c4``."""
    vector_width: int | None = None
    """Elements per vector access (ATen ``vectorized_elementwise_kernel<8, …>``, ``ldg8``)."""
    variant: str | None = None
    """Schedule / epilogue / path variant, e.g. ``coopA``, ``bias epilogue``, ``split-K``."""
    fused_ops: tuple[str, ...] = ()
    """Ops fused into the kernel (Inductor's fused list, a GEMM's epilogue)."""
    kernel_id: int | None = None
    """Inductor's kernel index (the trailing ``_0``), cuDNN's knob, …"""
    collective: str | None = None
    """NCCL collective, e.g. ``AllReduce``."""
    reduce_op: str | None = None
    """NCCL reduction operator, e.g. ``Sum``."""
    algorithm: str | None = None
    """NCCL algorithm, e.g. ``RING``."""
    protocol: str | None = None
    """NCCL protocol, e.g. ``LL``."""
    notes: tuple[str, ...] = ()
    """Human sentences explaining the fields."""

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (tuples kept)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


Handler = Callable[[re.Match[str], str], KernelName]


@dataclass(frozen=True, slots=True)
class Rule:
    """One decoder table entry: the first rule whose ``pattern`` matches (``re.search``) decodes."""

    family: str
    pattern: re.Pattern[str]
    handler: Handler
