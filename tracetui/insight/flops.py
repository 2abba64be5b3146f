"""FLOPs and bytes of an op, from the ``Input Dims`` / ``Input type`` (and ``Concrete Inputs``) args.

The profiler records, per op, a shape per argument (``[[8192, 768], [768, 3072]]``, ``[]`` for a
non-tensor) and a type string per argument (``"c10::BFloat16"``, ``"Scalar"``, ``""``, ``"TensorList"``).
The model keeps them as the JSON text found in the trace; :func:`op_cost` parses that text (or
already-decoded lists) and returns an :class:`OpCost`, or ``None`` for ops it has no formula for.

Conventions (each also stated in :attr:`OpCost.notes` where it applies):

- A multiply-add is 2 FLOPs. GEMMs count ``2·M·N·K``; the bias add of ``addmm``/``linear`` is not
  counted (``M·N``, negligible), as in ``torch.utils.flop_counter``.
- Convolutions count ``2·N·prod(out_spatial)·prod(weight.shape)`` (grouping is in the weight's
  shape); the output size comes from stride/padding/dilation in ``Concrete Inputs`` when recorded,
  otherwise stride 1 and an output as large as the input are assumed.
- Attention counts the two matmuls of the forward, ``2·B·H·L·S·(E + Ev)`` (``4·B·H·L·S·E`` when
  ``Ev = E``), halved when ``is_causal`` is recorded true. A backward counts five matmuls of that size
  (recomputed QKᵀ, dP, dV, dQ, dK): 2.5× the forward. Bytes assume a fused kernel that never
  writes the L×S score matrix.
- Elementwise ops read each input once and write the broadcast output once; FLOPs are output
  elements × a small per-op constant (:data:`ELEMENTWISE_FLOPS`, transcendental functions counted
  as 1). Rough on purpose: these ops are memory-bound, and the bytes are what matter.
- Bytes are the minimum traffic to DRAM (each tensor read or written once); real kernels can move
  more (re-reads of tiles that miss in L2), never less, so achieved GB/s computed from them is a
  lower bound on the traffic actually served.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from tracetui.insight.kernel_names import decode_kernel_name

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "ELEMENTWISE_FLOPS",
    "Arg",
    "OpCost",
    "dtype_name",
    "dtype_size",
    "op_cost",
    "op_cost_columns",
    "parse_args",
]

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
_SCALAR_TYPE_ENUM: dict[int, str] = {
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
_PROMOTE_RANK = {
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


# --------------------------------------------------------------------------------------------
# parsing

_decoder = msgspec.json.Decoder()


def _load(value: str | Sequence[Any] | None) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = _decoder.decode(value)
        except (msgspec.DecodeError, ValueError):
            return None
    return list(value) if isinstance(value, list | tuple) else None


def _dims(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list | tuple) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        return tuple(value)
    return None


def parse_args(
    input_dims: str | Sequence[Any] | None,
    input_type: str | Sequence[Any] | None,
    concrete_inputs: str | Sequence[Any] | None = None,
) -> list[Arg] | None:
    """The recorded arguments, or ``None`` when dims/types are missing or malformed."""
    dims = _load(input_dims)
    types = _load(input_type)
    if dims is None or types is None:
        return None
    concrete = _load(concrete_inputs) or []
    args: list[Arg] = []
    for i, d in enumerate(dims):
        t = types[i] if i < len(types) and isinstance(types[i], str) else ""
        c = concrete[i] if i < len(concrete) and isinstance(concrete[i], str) else ""
        args.append(Arg(_dims(d), t, c))
    return args


def _tensor(args: list[Arg], pos: int) -> Arg | None:
    if 0 <= pos < len(args) and args[pos].is_tensor:
        return args[pos]
    return None


def _concrete(args: list[Arg], pos: int) -> str:
    return args[pos].concrete.strip() if 0 <= pos < len(args) else ""


def _int_list(text: str) -> tuple[int, ...] | None:
    text = text.strip()
    if not text:
        return None
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        if not inner:
            return ()
        try:
            return tuple(int(p) for p in inner.split(","))
        except ValueError:
            return None
    try:
        return (int(text),)
    except ValueError:
        return None


def _bool(text: str) -> bool | None:
    return {"True": True, "true": True, "1": True, "False": False, "false": False, "0": False}.get(
        text.strip()
    )


def _broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(ndim):
        sizes = {s[len(s) - ndim + axis] for s in shapes if len(s) - ndim + axis >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _promote(tensors: Sequence[Arg]) -> Arg | None:
    """The input whose dtype the result takes (0-dim CPU scalars promote only across categories)."""
    full = [t for t in tensors if t.dims] or list(tensors)
    if not full:
        return None
    return max(full, key=lambda t: _PROMOTE_RANK.get(t.dtype or "", -1))


# --------------------------------------------------------------------------------------------
# GEMMs


def _gemm(
    a: Arg, b: Arg, out: Arg | None, extra_reads: Sequence[Arg] = (), notes: Sequence[str] = ()
) -> OpCost | None:
    assert a.dims is not None and b.dims is not None
    if len(a.dims) != 2 or len(b.dims) != 2 or a.dims[1] != b.dims[0]:
        return None
    m, k = a.dims
    n = b.dims[1]
    out_size = out.itemsize if out else a.itemsize
    return OpCost(
        flops=2 * m * n * k,
        bytes_read=a.nbytes + b.nbytes + sum(t.nbytes for t in extra_reads),
        bytes_written=int(m * n * out_size),
        dtype=a.dtype,
        kind="gemm",
        notes=(f"GEMM {m}×{k} @ {k}×{n}: 2·M·N·K FLOPs", *notes),
    )


_BIAS_NOTE = "bias add (M·N FLOPs) not counted, as in torch.utils.flop_counter"


def _mm(args: list[Arg]) -> OpCost | None:
    a, b = _tensor(args, 0), _tensor(args, 1)
    if a is None or b is None:
        return None
    return _gemm(a, b, _tensor(args, 2))


def _addmm(args: list[Arg]) -> OpCost | None:
    bias, a, b = _tensor(args, 0), _tensor(args, 1), _tensor(args, 2)
    if a is None or b is None:
        return None
    return _gemm(a, b, _tensor(args, 5), [bias] if bias else [], [_BIAS_NOTE])


def _scaled_mm(args: list[Arg]) -> OpCost | None:
    a, b = _tensor(args, 0), _tensor(args, 1)
    if a is None or b is None:
        return None
    out_type = None
    enum = _int_list(_concrete(args, 6))
    if enum and len(enum) == 1:
        out_type = _SCALAR_TYPE_ENUM.get(enum[0])
    notes = ["scaled (fp8) GEMM"]
    if out_type is None:
        out_type = "c10::BFloat16"
        notes.append("output dtype not recorded: assumed bf16")
    scales = [t for t in (_tensor(args, 2), _tensor(args, 3), _tensor(args, 4)) if t]
    out = Arg((), out_type)
    return _gemm(a, b, out, scales, notes)


def _bmm_shape(a: Arg, b: Arg) -> tuple[int, int, int, int] | None:
    assert a.dims is not None and b.dims is not None
    if len(a.dims) != 3 or len(b.dims) != 3 or a.dims[0] != b.dims[0] or a.dims[2] != b.dims[1]:
        return None
    return a.dims[0], a.dims[1], b.dims[2], a.dims[2]


def _bmm_cost(a: Arg, b: Arg, extra: Sequence[Arg], out: Arg | None) -> OpCost | None:
    shape = _bmm_shape(a, b)
    if shape is None:
        return None
    batch, m, n, k = shape
    return OpCost(
        flops=2 * batch * m * n * k,
        bytes_read=a.nbytes + b.nbytes + sum(t.nbytes for t in extra),
        bytes_written=int(batch * m * n * (out.itemsize if out else a.itemsize)),
        dtype=a.dtype,
        kind="gemm",
        notes=(f"batched GEMM {batch}× ({m}×{k} @ {k}×{n}): 2·B·M·N·K FLOPs",),
    )


def _bmm(args: list[Arg]) -> OpCost | None:
    a, b = _tensor(args, 0), _tensor(args, 1)
    if a is None or b is None:
        return None
    return _bmm_cost(a, b, (), _tensor(args, 2))


def _baddbmm(args: list[Arg]) -> OpCost | None:
    c, a, b = _tensor(args, 0), _tensor(args, 1), _tensor(args, 2)
    if a is None or b is None:
        return None
    return _bmm_cost(a, b, [c] if c else [], _tensor(args, 5))


def _matmul(args: list[Arg]) -> OpCost | None:
    a, b = _tensor(args, 0), _tensor(args, 1)
    if a is None or b is None or a.dims is None or b.dims is None or not a.dims or not b.dims:
        return None
    ad, bd = a.dims, b.dims
    if len(ad) == 1 and len(bd) == 1:
        if ad[0] != bd[0]:
            return None
        batch, m, k, n = (), 1, ad[0], 1
    elif len(bd) == 1:
        if ad[-1] != bd[0]:
            return None
        batch, m, k, n = ad[:-2], ad[-2] if len(ad) > 1 else 1, ad[-1], 1
    elif len(ad) == 1:
        if ad[0] != bd[-2]:
            return None
        batch, m, k, n = bd[:-2], 1, ad[0], bd[-1]
    else:
        if ad[-1] != bd[-2]:
            return None
        bshape = _broadcast([ad[:-2], bd[:-2]])
        if bshape is None:
            return None
        batch, m, k, n = bshape, ad[-2], ad[-1], bd[-1]
    nb = math.prod(batch) if batch else 1
    return OpCost(
        flops=2 * nb * m * n * k,
        bytes_read=a.nbytes + b.nbytes,
        bytes_written=int(nb * m * n * a.itemsize),
        dtype=a.dtype,
        kind="gemm",
        notes=(
            f"matmul as {nb}× ({m}×{k} @ {k}×{n}): 2·M·N·K FLOPs",
            "aten::matmul runs through aten::mm/bmm below it: count one level, not both",
        ),
    )


def _linear(args: list[Arg]) -> OpCost | None:
    x, w, bias = _tensor(args, 0), _tensor(args, 1), _tensor(args, 2)
    if x is None or w is None or not x.dims or w.dims is None or len(w.dims) != 2:
        return None
    k = x.dims[-1]
    n, wk = w.dims
    if wk != k:
        return None
    m = math.prod(x.dims[:-1]) if len(x.dims) > 1 else 1
    return OpCost(
        flops=2 * m * n * k,
        bytes_read=x.nbytes + w.nbytes + (bias.nbytes if bias else 0),
        bytes_written=int(m * n * x.itemsize),
        dtype=x.dtype,
        kind="gemm",
        notes=(
            f"linear: input {'×'.join(map(str, x.dims))} as M={m}, K={k}, N={n}: 2·M·N·K FLOPs",
            *([_BIAS_NOTE] if bias else []),
            "aten::linear runs through aten::mm/addmm below it: count one level, not both",
        ),
    )


# --------------------------------------------------------------------------------------------
# convolution

# op → positions of (stride, padding, dilation, transposed, output_padding, groups); a transposed
# position of -1 means "never transposed", -2 "always transposed".
_CONV_ARGS: dict[str, tuple[int, int, int, int, int, int]] = {
    "convolution": (3, 4, 5, 6, 7, 8),
    "_convolution": (3, 4, 5, 6, 7, 8),
    "conv1d": (3, 4, 5, -1, -1, 6),
    "conv2d": (3, 4, 5, -1, -1, 6),
    "conv3d": (3, 4, 5, -1, -1, 6),
    "cudnn_convolution": (3, 2, 4, -1, -1, 5),
    "conv_transpose1d": (3, 4, 7, -2, 5, 6),
    "conv_transpose2d": (3, 4, 7, -2, 5, 6),
    "conv_transpose3d": (3, 4, 7, -2, 5, 6),
    "cudnn_convolution_transpose": (4, 2, 5, -2, 3, 6),
}


def _per_dim(values: tuple[int, ...] | None, ndim: int, default: int) -> tuple[int, ...]:
    if not values:
        return (default,) * ndim
    if len(values) == 1:
        return values * ndim
    return values[:ndim] if len(values) >= ndim else values + (values[-1],) * (ndim - len(values))


def _conv(op: str, args: list[Arg]) -> OpCost | None:
    x, w = _tensor(args, 0), _tensor(args, 1)
    if x is None or w is None or x.dims is None or w.dims is None:
        return None
    if len(x.dims) < 3 or len(w.dims) != len(x.dims):
        return None
    bias = _tensor(args, 2) if op not in ("cudnn_convolution", "cudnn_convolution_transpose") else None
    s_pos, p_pos, d_pos, t_pos, op_pos, g_pos = _CONV_ARGS[op]
    ndim = len(x.dims) - 2
    n, spatial = x.dims[0], x.dims[2:]
    kernel = w.dims[2:]
    notes: list[str] = []
    if t_pos == -2:
        transposed = True
    elif t_pos == -1:
        transposed = False
    else:
        recorded = _bool(_concrete(args, t_pos))
        transposed = bool(recorded)
        if recorded is None:
            notes.append("transposed flag not recorded: assumed a regular convolution")
    groups_rec = _int_list(_concrete(args, g_pos))
    groups = groups_rec[0] if groups_rec and groups_rec[0] > 0 else 1
    stride_text, pad_text = _concrete(args, s_pos), _concrete(args, p_pos)
    stride_rec = _int_list(stride_text)
    pad_rec = _int_list(pad_text)
    dil_rec = _int_list(_concrete(args, d_pos))
    if stride_rec is None and pad_rec is None and pad_text not in ("same", "valid"):
        out_spatial = tuple(spatial)
        notes.append(
            "stride/padding/dilation not recorded (no Concrete Inputs): assumed stride 1 and an "
            "output as large as the input"
        )
    else:
        stride = _per_dim(stride_rec, ndim, 1)
        dilation = _per_dim(dil_rec, ndim, 1)
        if pad_text == "same":
            padding = tuple(dilation[i] * (kernel[i] - 1) // 2 for i in range(ndim))
        else:
            padding = _per_dim(pad_rec, ndim, 0)
        if transposed:
            out_pad = _per_dim(_int_list(_concrete(args, op_pos)), ndim, 0)
            out_spatial = tuple(
                (spatial[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + out_pad[i] + 1
                for i in range(ndim)
            )
        else:
            out_spatial = tuple(
                (spatial[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
                for i in range(ndim)
            )
        if pad_text == "same":
            out_spatial = tuple(spatial)
        if any(o <= 0 for o in out_spatial):
            return None
    if transposed:
        c_out = w.dims[1] * groups
        flops = 2 * n * math.prod(spatial) * math.prod(w.dims)
        notes.insert(0, "transposed convolution: 2·N·prod(input spatial)·prod(weight) FLOPs")
    else:
        c_out = w.dims[0]
        flops = 2 * n * math.prod(out_spatial) * math.prod(w.dims)
        notes.insert(0, "convolution: 2·N·prod(output spatial)·prod(weight) FLOPs (groups are in the weight)")
    out_numel = n * c_out * math.prod(out_spatial)
    return OpCost(
        flops=flops,
        bytes_read=x.nbytes + w.nbytes + (bias.nbytes if bias else 0),
        bytes_written=int(out_numel * x.itemsize),
        dtype=x.dtype,
        kind="convolution",
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------------------------
# attention

# op → (q, k, v positions, is_causal position, layout "bhle" | "blhe", backward)
_SDPA_ARGS: dict[str, tuple[int, int, int, int, str, bool]] = {
    "scaled_dot_product_attention": (0, 1, 2, 5, "bhle", False),
    "_scaled_dot_product_flash_attention": (0, 1, 2, 4, "bhle", False),
    "_scaled_dot_product_efficient_attention": (0, 1, 2, 6, "bhle", False),
    "_scaled_dot_product_cudnn_attention": (0, 1, 2, 6, "bhle", False),
    "_scaled_dot_product_fused_attention_overrideable": (0, 1, 2, 5, "bhle", False),
    "_cudnn_attention_forward": (0, 1, 2, 10, "bhle", False),
    "_flash_attention_forward": (0, 1, 2, 8, "blhe", False),
    "_efficient_attention_forward": (0, 1, 2, -9, "blhe", False),
    "_scaled_dot_product_flash_attention_backward": (1, 2, 3, 11, "bhle", True),
    "_scaled_dot_product_efficient_attention_backward": (1, 2, 3, 11, "bhle", True),
    "_scaled_dot_product_cudnn_attention_backward": (1, 2, 3, 14, "bhle", True),
    "_cudnn_attention_backward": (1, 2, 3, 14, "bhle", True),
    "_flash_attention_backward": (1, 2, 3, 11, "blhe", True),
    "_efficient_attention_backward": (1, 2, 3, -14, "blhe", True),
}


def _attention(op: str, args: list[Arg]) -> OpCost | None:
    qp, kp, vp, causal_pos, layout, backward = _SDPA_ARGS[op]
    q, k, v = _tensor(args, qp), _tensor(args, kp), _tensor(args, vp)
    if q is None or k is None or v is None or not q.dims or not k.dims or not v.dims:
        return None
    if len(q.dims) < 2 or len(k.dims) < 2:
        return None
    e = q.dims[-1]
    ev = v.dims[-1]
    s = k.dims[1] if layout == "blhe" else k.dims[-2]
    if e == 0:
        return None
    rows = q.numel // e  # B·H·L
    flops = 2 * rows * s * (e + ev)
    notes = ["attention: QKᵀ and PV, 2·B·H·L·S·(E+Ev) FLOPs (4·B·H·L·S·E when Ev = E)"]
    text = _concrete(args, abs(causal_pos))
    if causal_pos < 0:  # a custom_mask_type int: 1 and 2 are causal masks
        mask = _int_list(text)
        causal = None if mask is None else mask[0] in (1, 2)
    else:
        causal = _bool(text)
    if causal:
        flops //= 2
        notes.append("is_causal: half the score matrix is computed")
    elif causal is None:
        notes.append("is_causal not recorded: assumed a full (non-causal) score matrix")
    out_bytes = int(rows * ev * q.itemsize)
    if backward:
        flops = flops * 5 // 2
        notes.append("backward: 5 matmuls of the forward's size (QKᵀ recomputed, dP, dV, dQ, dK)")
        read = sum(a.nbytes for a in args if a.is_tensor)
        written = q.nbytes + k.nbytes + v.nbytes
    else:
        mask_bytes = sum(a.nbytes for i, a in enumerate(args) if a.is_tensor and i not in (qp, kp, vp))
        read = q.nbytes + k.nbytes + v.nbytes + mask_bytes
        written = out_bytes
    notes.append("bytes assume a fused kernel that never writes the L×S score matrix")
    return OpCost(
        flops=flops,
        bytes_read=read,
        bytes_written=written,
        dtype=q.dtype,
        kind="attention",
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------------------------
# elementwise, reductions, norms, copies

ELEMENTWISE_FLOPS: dict[str, int] = {
    # 1 FLOP per output element: arithmetic, comparisons, selections
    "add": 1,
    "sub": 1,
    "rsub": 1,
    "mul": 1,
    "div": 1,
    "neg": 1,
    "abs": 1,
    "relu": 1,
    "threshold": 1,
    "threshold_backward": 1,
    "clamp": 1,
    "clamp_min": 1,
    "clamp_max": 1,
    "hardtanh": 1,
    "maximum": 1,
    "minimum": 1,
    "where": 1,
    "masked_fill": 1,
    "eq": 1,
    "ne": 1,
    "lt": 1,
    "le": 1,
    "gt": 1,
    "ge": 1,
    "sign": 1,
    "reciprocal": 1,
    "square": 1,
    "leaky_relu": 1,
    # one transcendental function counts 1
    "exp": 1,
    "log": 1,
    "sqrt": 1,
    "rsqrt": 1,
    "sin": 1,
    "cos": 1,
    "tanh": 1,
    "erf": 1,
    "pow": 1,
    "log1p": 1,
    "expm1": 1,
    # composites: the arithmetic of the formula
    "sigmoid": 4,  # 1 / (1 + exp(-x))
    "silu": 5,  # x · sigmoid(x)
    "gelu": 8,  # erf form 0.5·x·(1+erf(x/√2)) ≈ 5, tanh form ≈ 9
    "mish": 6,
    "softplus": 3,
    "elu": 3,
    "hardswish": 4,
    "gelu_backward": 12,
    "silu_backward": 7,
    "sigmoid_backward": 2,
    "tanh_backward": 2,
    "leaky_relu_backward": 1,
    "hardtanh_backward": 1,
    "lerp": 3,
    "addcmul": 3,
    "addcdiv": 3,
    "native_dropout_backward": 2,
}
"""FLOPs per output element for elementwise ops (documented approximations; see the module doc)."""

# op → (number of leading positional args that may be tensor inputs, length of the functional
# schema: a tensor at or after that position is an ``out=`` argument).
_ELEMENTWISE_ARITY: dict[str, tuple[int, int]] = {
    "add": (2, 3),
    "sub": (2, 3),
    "rsub": (2, 3),
    "mul": (2, 2),
    "div": (2, 2),
    "threshold": (1, 3),
    "threshold_backward": (2, 3),
    "clamp": (3, 3),
    "clamp_min": (2, 2),
    "clamp_max": (2, 2),
    "hardtanh": (1, 3),
    "maximum": (2, 2),
    "minimum": (2, 2),
    "where": (3, 3),
    "masked_fill": (3, 3),
    "eq": (2, 2),
    "ne": (2, 2),
    "lt": (2, 2),
    "le": (2, 2),
    "gt": (2, 2),
    "ge": (2, 2),
    "pow": (2, 2),
    "leaky_relu": (1, 2),
    "gelu": (1, 2),
    "softplus": (1, 3),
    "elu": (1, 4),
    "gelu_backward": (2, 3),
    "silu_backward": (2, 2),
    "sigmoid_backward": (2, 2),
    "tanh_backward": (2, 2),
    "leaky_relu_backward": (2, 4),
    "hardtanh_backward": (2, 4),
    "lerp": (3, 3),
    "addcmul": (3, 4),
    "addcdiv": (3, 4),
    "native_dropout_backward": (2, 3),
}
_BOOL_RESULT = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def _elementwise(op: str, args: list[Arg], inplace: bool) -> OpCost | None:
    n_in, n_schema = _ELEMENTWISE_ARITY.get(op, (1, 1))
    inputs = [a for a in args[:n_in] if a.is_tensor]
    outs = [a for a in args[n_schema:] if a.is_tensor]
    if not inputs:
        return None
    if inplace:
        result = inputs[0]
        shape = result.dims or ()
    else:
        shape_b = _broadcast([a.dims or () for a in inputs])
        if shape_b is None:
            return None
        shape = shape_b
        result = outs[0] if outs else _promote(inputs)
    assert result is not None
    numel = math.prod(shape) if shape else 1
    out_size = 1.0 if op in _BOOL_RESULT and not outs and not inplace else result.itemsize
    return OpCost(
        flops=numel * ELEMENTWISE_FLOPS[op],
        bytes_read=sum(a.nbytes for a in inputs),
        bytes_written=int(numel * out_size),
        dtype=result.dtype,
        kind="elementwise",
        notes=(
            f"elementwise {op}: each input read once, {numel} outputs written"
            + (" in place" if inplace else "")
            + f"; {ELEMENTWISE_FLOPS[op]} FLOP/element",
        ),
    )


def _dropout(args: list[Arg]) -> OpCost | None:
    x = _tensor(args, 0)
    if x is None:
        return None
    train = _bool(_concrete(args, 2))
    if train is False:
        return OpCost(0, x.nbytes, x.nbytes, x.dtype, "copy", ("dropout in eval mode: a copy",))
    return OpCost(
        flops=2 * x.numel,
        bytes_read=x.nbytes,
        bytes_written=x.nbytes + x.numel,
        dtype=x.dtype,
        kind="elementwise",
        notes=("dropout: reads x, writes the output and a bool mask; 2 FLOP/element",),
    )


_REDUCE_FLOPS = {"sum": 1, "mean": 1, "amax": 1, "amin": 1, "max": 1, "min": 1, "prod": 1, "var": 3, "std": 3}


def _reduction(op: str, args: list[Arg]) -> OpCost | None:
    x = _tensor(args, 0)
    if x is None:
        return None
    notes = [f"reduction {op}: reads the input once"]
    dims_text = _concrete(args, 1)
    reduced = _int_list(dims_text)
    if reduced and x.dims:
        nd = len(x.dims)
        axes = {d % nd for d in reduced if -nd <= d < nd}
        out_numel = math.prod(s for i, s in enumerate(x.dims) if i not in axes)
    else:
        out_numel = 1  # no dims, or an empty dim list: a full reduction
        if len(args) > 1 and args[1].type == "ScalarList" and not any(a.concrete for a in args):
            notes.append("reduced dims not recorded: assumed a full reduction")
    return OpCost(
        flops=x.numel * _REDUCE_FLOPS[op],
        bytes_read=x.nbytes,
        bytes_written=int(out_numel * x.itemsize),
        dtype=x.dtype,
        kind="reduction",
        notes=tuple(notes),
    )


def _softmax(op: str, args: list[Arg]) -> OpCost | None:
    backward = op.endswith("_backward_data")
    if backward:
        grad, out = _tensor(args, 0), _tensor(args, 1)
        if grad is None or out is None:
            return None
        return OpCost(
            flops=4 * grad.numel,
            bytes_read=grad.nbytes + out.nbytes,
            bytes_written=grad.nbytes,
            dtype=grad.dtype,
            kind="softmax",
            notes=("softmax backward: reads grad and output, writes grad input; 4 FLOP/element",),
        )
    x = _tensor(args, 0)
    if x is None:
        return None
    return OpCost(
        flops=5 * x.numel,
        bytes_read=x.nbytes,
        bytes_written=x.nbytes,
        dtype=x.dtype,
        kind="softmax",
        notes=("softmax: max, subtract, exp, sum, divide: 5 FLOP/element, one read and one write",),
    )


def _layer_norm(op: str, args: list[Arg]) -> OpCost | None:
    if op == "native_layer_norm_backward":
        grad, x = _tensor(args, 0), _tensor(args, 1)
        if grad is None or x is None:
            return None
        params = [t for t in (_tensor(args, 5), _tensor(args, 6)) if t]
        stats = [t for t in (_tensor(args, 3), _tensor(args, 4)) if t]
        return OpCost(
            flops=10 * x.numel,
            bytes_read=grad.nbytes + x.nbytes + sum(t.nbytes for t in (*params, *stats)),
            bytes_written=grad.nbytes + sum(t.nbytes for t in params),
            dtype=x.dtype,
            kind="norm",
            notes=("layer_norm backward: ~10 FLOP/element; writes grad input and weight/bias grads",),
        )
    x = _tensor(args, 0)
    if x is None:
        return None
    params = [t for t in (_tensor(args, 2), _tensor(args, 3)) if t]
    per = 4 if "rms" in op else 8
    return OpCost(
        flops=per * x.numel,
        bytes_read=x.nbytes + sum(t.nbytes for t in params),
        bytes_written=x.nbytes,
        dtype=x.dtype,
        kind="norm",
        notes=(f"{op}: statistics, normalise, scale and shift: ~{per} FLOP/element",),
    )


def _copy(op: str, args: list[Arg]) -> OpCost | None:
    if op == "copy_":
        dst, src = _tensor(args, 0), _tensor(args, 1)
        if dst is None or src is None:
            return None
        return OpCost(0, src.nbytes, dst.nbytes, dst.dtype, "copy", ("copy_: reads src, writes self",))
    x = _tensor(args, 0)
    if x is None:
        return None
    notes = [f"{op}: one read, one write"]
    out_type = x.type
    if op == "_to_copy":
        enum = _int_list(_concrete(args, 1))
        if enum and len(enum) == 1 and enum[0] in _SCALAR_TYPE_ENUM:
            out_type = _SCALAR_TYPE_ENUM[enum[0]]
        else:
            notes.append("target dtype not recorded: assumed unchanged")
    out = Arg(x.dims, out_type)
    return OpCost(0, x.nbytes, out.nbytes, out.dtype, "copy", tuple(notes))


def _fill(op: str, args: list[Arg]) -> OpCost | None:
    x = _tensor(args, 0)
    if x is None:
        return None
    return OpCost(0, 0, x.nbytes, x.dtype, "fill", (f"{op}: writes every element once",))


# --------------------------------------------------------------------------------------------
# Inductor kernels (the cpu_op named after the Triton kernel records its tensor arguments)


def _inductor(name: str, args: list[Arg]) -> OpCost | None:
    decoded = decode_kernel_name(name)
    if decoded.family != "inductor":
        return None
    tensors = [a for a in args if a.is_tensor]
    if not tensors:
        return None
    numbers = [n[0] for a in args if not a.is_tensor and (n := _int_list(a.concrete)) and len(n) == 1]
    per_element = sum(
        0
        if op in ("_unsafe_view", "view", "reshape", "permute", "expand", "squeeze", "unsqueeze", "clone")
        else ELEMENTWISE_FLOPS.get(op.rstrip("_"), 1)
        for op in decoded.fused_ops
    )
    ops_note = ", ".join(decoded.fused_ops) or "?"
    if decoded.kind == "pointwise":
        xnumel = numbers[0] if numbers else max(t.numel for t in tensors)
        out = next((t for t in tensors if t.numel == xnumel), max(tensors, key=lambda t: t.numel))
        return OpCost(
            flops=xnumel * per_element,
            bytes_read=sum(t.nbytes for t in tensors),
            bytes_written=int(xnumel * out.itemsize),
            dtype=out.dtype,
            kind="pointwise",
            notes=(
                f"Inductor pointwise kernel over {xnumel} elements fusing {ops_note}",
                "every tensor argument read once and one output of the iteration size written: exact "
                "when the output is an in/out buffer (Inductor's in_out_ptr), one buffer's read too "
                "many otherwise",
            ),
        )
    if decoded.kind in ("reduction", "persistent-reduction"):
        if len(numbers) >= 2:
            xnumel, rnumel = numbers[0], numbers[1]
        else:
            xnumel, rnumel = min(t.numel for t in tensors), max(t.numel for t in tensors)
        out = next((t for t in reversed(tensors) if t.numel == xnumel), min(tensors, key=lambda t: t.numel))
        reads = [t for t in tensors if t is not out]
        return OpCost(
            flops=xnumel * rnumel * max(per_element, 1),
            bytes_read=sum(t.nbytes for t in reads),
            bytes_written=int(xnumel * out.itemsize),
            dtype=(reads[0] if reads else out).dtype,
            kind=decoded.kind,
            notes=(
                f"Inductor reduction: {xnumel} outputs, each reducing {rnumel} elements, fusing {ops_note}",
                "the last argument of the output size is taken as the output; the others are read once",
            ),
        )
    if decoded.kind == "template" and any(op in ("mm", "addmm", "bmm") for op in decoded.fused_ops):
        mats = [t for t in tensors if t.dims and len(t.dims) == 2]
        for a, b in itertools.pairwise(mats):
            cost = _gemm(a, b, None)
            if cost is not None:
                return OpCost(
                    flops=cost.flops,
                    bytes_read=cost.bytes_read,
                    bytes_written=cost.bytes_written,
                    dtype=cost.dtype,
                    kind="gemm",
                    notes=(*cost.notes, "Inductor's Triton GEMM template: the first chained matrix pair"),
                )
    return None


# --------------------------------------------------------------------------------------------
# dispatch

_Handler = Callable[[str, list[Arg]], "OpCost | None"]


def _handlers() -> dict[str, _Handler]:
    table: dict[str, _Handler] = {
        "mm": lambda op, a: _mm(a),
        "addmm": lambda op, a: _addmm(a),
        "_addmm_activation": lambda op, a: _addmm(a),
        "_scaled_mm": lambda op, a: _scaled_mm(a),
        "bmm": lambda op, a: _bmm(a),
        "baddbmm": lambda op, a: _baddbmm(a),
        "matmul": lambda op, a: _matmul(a),
        "linear": lambda op, a: _linear(a),
        "native_dropout": lambda op, a: _dropout(a),
    }
    for op in ELEMENTWISE_FLOPS:
        table[op] = lambda op, a: _elementwise(op, a, inplace=False)
    groups: list[tuple[Sequence[str], _Handler]] = [
        (tuple(_CONV_ARGS), _conv),
        (tuple(_SDPA_ARGS), _attention),
        (tuple(_REDUCE_FLOPS), _reduction),
        (
            (
                "softmax",
                "_softmax",
                "log_softmax",
                "_log_softmax",
                "_softmax_backward_data",
                "_log_softmax_backward_data",
            ),
            _softmax,
        ),
        (
            ("layer_norm", "native_layer_norm", "native_layer_norm_backward", "rms_norm", "_fused_rms_norm"),
            _layer_norm,
        ),
        (("copy_", "clone", "contiguous", "_to_copy"), _copy),
        (("fill_", "zero_"), _fill),
    ]
    for names, handler in groups:
        for op in names:
            table[op] = handler
    return table


_HANDLERS: dict[str, _Handler] = _handlers()
"""``aten::`` op name (without the prefix) → cost function. Adding an op is one entry."""


def op_cost(
    name: str,
    input_dims: str | Sequence[Any] | None,
    input_type: str | Sequence[Any] | None,
    concrete_inputs: str | Sequence[Any] | None = None,
) -> OpCost | None:
    """FLOPs and bytes of one op call, or ``None`` for ops without a formula or without shapes.

    ``name`` is the cpu_op name (``aten::mm``, ``triton_poi_fused_…``); ``input_dims``,
    ``input_type`` and ``concrete_inputs`` are the args as recorded (JSON text or decoded lists).
    Never raises on malformed input.
    """
    try:
        args = parse_args(input_dims, input_type, concrete_inputs)
        if args is None or not isinstance(name, str):
            return None
        if name.startswith("triton_"):
            return _inductor(name, args)
        if not name.startswith("aten::"):
            return None
        op = name[6:]
        if op in _HANDLERS:
            return _HANDLERS[op](op, args)
        if op.endswith("_") and op[:-1] in ELEMENTWISE_FLOPS:  # in-place: add_, mul_, relu_, …
            return _elementwise(op[:-1], args, inplace=True)
        return None
    except (ArithmeticError, ValueError, IndexError, TypeError, KeyError):
        return None


# --------------------------------------------------------------------------------------------
# vectorised helper


def op_cost_columns(
    df: pl.DataFrame,
    *,
    name: str = "name",
    input_dims: str = "input_dims",
    input_type: str = "input_type",
    concrete_inputs: str = "concrete_inputs",
) -> pl.DataFrame:
    """Costs for each distinct (name, input_dims, input_type[, concrete_inputs]) row of ``df``.

    Returns those key columns plus ``flops``, ``bytes_read``, ``bytes_written``, ``bytes`` (Int64),
    ``intensity`` (Float64), ``cost_dtype``, ``cost_kind`` (str) and ``cost_notes`` (List[str]);
    nulls where :func:`op_cost` has no answer. Join it back on the key columns. The concrete-inputs
    column is used when ``df`` has it.
    """
    import polars as pl

    keys = [name, input_dims, input_type]
    if concrete_inputs in df.columns:
        keys.append(concrete_inputs)
    unique = df.select(keys).unique(maintain_order=True)
    rows = unique.rows()
    costs = [op_cost(*row) for row in rows]
    extra = pl.DataFrame(
        {
            "flops": [c.flops if c else None for c in costs],
            "bytes_read": [c.bytes_read if c else None for c in costs],
            "bytes_written": [c.bytes_written if c else None for c in costs],
            "bytes": [c.bytes if c else None for c in costs],
            "intensity": [c.intensity if c else None for c in costs],
            "cost_dtype": [c.dtype if c else None for c in costs],
            "cost_kind": [c.kind if c else None for c in costs],
            "cost_notes": [list(c.notes) if c else None for c in costs],
        },
        schema={
            "flops": pl.Int64,
            "bytes_read": pl.Int64,
            "bytes_written": pl.Int64,
            "bytes": pl.Int64,
            "intensity": pl.Float64,
            "cost_dtype": pl.String,
            "cost_kind": pl.String,
            "cost_notes": pl.List(pl.String),
        },
    )
    return pl.concat([unique, extra], how="horizontal")
