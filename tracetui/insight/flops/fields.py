"""Dtypes of the profiler's type strings, a recorded argument (:class:`Arg`) and an op's cost
(:class:`OpCost`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


# Trace type string → (short dtype name, bytes per element).
_DTYPES: dict[str, tuple[str, float]] = {
    "c10::BFloat16": ("bf16", 2),
    "c10::Half": ("fp16", 2),
    "float": ("fp32", 4),
    "double": ("fp64", 8),
    "c10::Float8_e4m3fn": ("fp8", 1),
    "c10::Float8_e5m2": ("fp8", 1),
    "c10::Float8_e4m3fnuz": ("fp8", 1),
    "c10::Float8_e5m2fnuz": ("fp8", 1),
    "c10::Float8_e8m0fnu": ("fp8", 1),
    "c10::Float4_e2m1fn_x2": ("fp4x2", 1),
    "long int": ("int64", 8),
    "long": ("int64", 8),
    "int64_t": ("int64", 8),
    "long long": ("int64", 8),
    "int": ("int32", 4),
    "short int": ("int16", 2),
    "short": ("int16", 2),
    "signed char": ("int8", 1),
    "unsigned char": ("uint8", 1),
    "unsigned short": ("uint16", 2),
    "unsigned int": ("uint32", 4),
    "unsigned long": ("uint64", 8),
    "bool": ("bool", 1),
    "c10::complex<c10::Half>": ("complex32", 4),
    "c10::complex<float>": ("complex64", 8),
    "c10::complex<double>": ("complex128", 16),
    "c10::qint8": ("qint8", 1),
    "c10::quint8": ("quint8", 1),
    "c10::qint32": ("qint32", 4),
    "c10::quint4x2": ("quint4x2", 1),
}

# c10::ScalarType enum values, as ``Concrete Inputs`` records a dtype argument (``"15"`` = bf16).
SCALAR_TYPE_ENUM: dict[int, str] = {
    0: "unsigned char",
    1: "signed char",
    2: "short int",
    3: "int",
    4: "long int",
    5: "c10::Half",
    6: "float",
    7: "double",
    8: "c10::complex<c10::Half>",
    9: "c10::complex<float>",
    10: "c10::complex<double>",
    11: "bool",
    15: "c10::BFloat16",
    23: "c10::Float8_e5m2",
    24: "c10::Float8_e4m3fn",
}

# Promotion order for the result dtype of mixed-dtype elementwise ops (higher wins).
PROMOTE_RANK = {
    "bool": 0,
    "uint8": 1,
    "int8": 1,
    "int16": 2,
    "int32": 3,
    "int64": 4,
    "fp8": 5,
    "fp16": 6,
    "bf16": 6,
    "fp32": 7,
    "fp64": 8,
    "complex64": 9,
    "complex128": 10,
}


def dtype_size(type_name: str | None) -> float | None:
    """Bytes per element of a trace type string (``"c10::BFloat16"`` → 2), ``None`` if not a dtype."""
    entry = _DTYPES.get(type_name or "")
    return entry[1] if entry else None


def dtype_name(type_name: str | None) -> str | None:
    """Short dtype name of a trace type string (``"c10::BFloat16"`` → ``"bf16"``)."""
    entry = _DTYPES.get(type_name or "")
    return entry[0] if entry else None


@dataclass(frozen=True, slots=True)
class Arg:
    """One recorded argument: its dims (``None`` unless a flat int list), type and concrete value."""

    dims: tuple[int, ...] | None
    type: str
    concrete: str = ""

    @property
    def is_tensor(self) -> bool:
        return self.dims is not None and self.type in _DTYPES

    @property
    def numel(self) -> int:
        return math.prod(self.dims) if self.dims else 1

    @property
    def itemsize(self) -> float:
        return _DTYPES[self.type][1] if self.type in _DTYPES else 0

    @property
    def nbytes(self) -> int:
        return int(self.numel * self.itemsize)

    @property
    def dtype(self) -> str | None:
        return dtype_name(self.type)


@dataclass(frozen=True, slots=True)
class OpCost:
    """The arithmetic and minimum memory traffic of one op call."""

    flops: int
    bytes_read: int
    bytes_written: int
    dtype: str | None
    """Compute dtype: the GEMM/conv/attention input dtype, or an elementwise op's output dtype."""
    kind: str
    """``gemm``, ``convolution``, ``attention``, ``elementwise``, ``reduction``, ``softmax``, ``norm``,
    ``copy``, ``fill``, ``pointwise`` (Inductor), ``persistent-reduction``, ``template``."""
    notes: tuple[str, ...] = ()
    """Assumptions made for this count."""

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity in FLOP per byte (``None`` when no bytes move)."""
        return self.flops / self.bytes if self.bytes else None
