"""Decode a GPU kernel name into what it says: library, kind of work, tile, layout, fused ops, ….

"The name is a hash dump of the kernel's identity": ``nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT``
is a cuBLASLt GEMM for sm90 with a 256×128 output tile, a 64-wide K tile in 4 pipeline stages, a 1×2
cluster, the cooperative schedule and ``TNT`` operand layouts; ``triton_poi_fused__unsafe_view_gelu_mul_0``
is Inductor's pointwise kernel #0 fusing ``_unsafe_view``, ``gelu`` and ``mul``.

The decoder is table-driven: :data:`RULES` (matched against the whole name) and then
:data:`HEAD_RULES` (matched against the qualified function name, so ``void at::native::…<…>(…)`` is
routed by ``at::native::…`` whatever its template arguments mention) are ordered lists of
:class:`Rule` (a family, a regex and a handler); the first rule whose regex matches decodes the name,
and a name no rule matches is family ``"other"`` with a readable short form (templates and parameter
lists collapsed). Adding a family is one entry in one of the two tables.
:func:`decode_kernel_name` never raises and is cached per distinct name;
:func:`kernel_name_columns` decodes the unique names of a polars Series into a frame to join back.

Field readings that come from the libraries' naming habits rather than documentation are worded as
readings in :attr:`KernelName.notes` (e.g. ``bz``); nothing here guesses silently.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "FAMILIES",
    "HEAD_RULES",
    "KINDS",
    "RULES",
    "KernelName",
    "Rule",
    "decode_kernel_name",
    "kernel_name_columns",
    "split_inductor_ops",
]

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

_SHORT_MAX = 96


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


# --------------------------------------------------------------------------------------------
# text helpers


_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _printable(text: str) -> str:
    """Replace control, format (bidi), surrogate, unassigned and line-separator characters."""
    if text.isprintable():
        return text
    return "".join(
        "\ufffd" if unicodedata.category(ch) in _UNPRINTABLE_CATEGORIES else ch
        for ch in text.replace("\t", " ")
    )


def _clip(text: str, limit: int = _SHORT_MAX) -> str:
    text = " ".join(_printable(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_ANON = "(anonymous namespace)::"


def _strip_void(name: str) -> str:
    return name[5:] if name.startswith("void ") else name


def _head(name: str) -> str:
    """The qualified function name: before the first top-level ``<`` or ``(``."""
    text = _strip_void(name.strip()).replace(_ANON, "")
    for i, ch in enumerate(text):
        if ch in "<(":
            return text[:i].strip()
    return text.strip()


def _balanced(text: str, start: int, open_ch: str, close_ch: str) -> tuple[str, int] | None:
    """Text inside the bracket at ``start`` (which must be ``open_ch``) and the index after it."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
    return None


def _template_args(name: str) -> list[str]:
    """Top-level template arguments of the kernel function (``[]`` when it has none)."""
    text = _strip_void(name.strip()).replace(_ANON, "")
    head = _head(name)
    pos = len(head)
    while pos < len(text) and text[pos] == " ":
        pos += 1
    if pos >= len(text) or text[pos] != "<":
        return []
    inner = _balanced(text, pos, "<", ">")
    if inner is None:
        return []
    return _split_top(inner[0])


def _split_top(text: str) -> list[str]:
    """Split at commas that are not nested in ``<>``, ``()``, ``{}`` or ``[]``."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _collapse(name: str) -> str:
    """``void a::b::k<float, 4>(float*, int)`` → ``a::b::k<…>``: templates and parameters collapsed."""
    text = _strip_void(name.strip()).replace(_ANON, "")
    out: list[str] = []
    depth_angle = 0
    depth_paren = 0
    for ch in text:
        if ch == "<":
            if depth_angle == 0 and depth_paren == 0:
                out.append("<…>")
            depth_angle += 1
        elif ch == ">" and depth_angle > 0:
            depth_angle -= 1
        elif ch == "(":
            depth_paren += 1
        elif ch == ")" and depth_paren > 0:
            depth_paren -= 1
        elif depth_angle == 0 and depth_paren == 0:
            out.append(ch)
    collapsed = "".join(out).strip()
    if not collapsed:
        collapsed = text
    if len(collapsed) > 60 and "::" in collapsed:
        collapsed = collapsed.rsplit("::", 1)[1] or collapsed
    return collapsed


_FLOAT_TYPES: tuple[tuple[str, str], ...] = (
    ("c10::BFloat16", "bf16"),
    ("__nv_bfloat16", "bf16"),
    ("cutlass::bfloat16_t", "bf16"),
    ("c10::Half", "fp16"),
    ("__half", "fp16"),
    ("cutlass::half_t", "fp16"),
    ("c10::Float8_e4m3fn", "fp8"),
    ("c10::Float8_e5m2", "fp8"),
    ("c10::complex<float>", "complex64"),
    ("c10::complex<double>", "complex128"),
    ("double", "fp64"),
    ("float", "fp32"),
)
_FLOAT_RE = re.compile(r"(?<![\w:])(" + "|".join(re.escape(t) for t, _ in _FLOAT_TYPES) + r")(?![\w])")
_FLOAT_MAP = dict(_FLOAT_TYPES)
_INT_RE = re.compile(r"(?<![\w:])(long|int|short|signed char|unsigned char|bool)(?![\w])")
_INT_MAP = {
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "signed char": "int8",
    "unsigned char": "uint8",
    "bool": "bool",
}


def _cpp_dtype(text: str, first_arg: str | None = None) -> str | None:
    """First floating C++ element type named in ``text``; else ``first_arg`` if it is an integer type.

    Integer types elsewhere in a signature are usually index or size types, not the element type.
    """
    m = _FLOAT_RE.search(text)
    if m:
        return _FLOAT_MAP[m.group(1)]
    if first_arg is not None and (mi := _INT_RE.fullmatch(first_arg.strip())):
        return _INT_MAP[mi.group(1)]
    return None


# Letters cuBLAS uses in kernel names for element types.
_BLAS_LETTER = {
    "h": "fp16",
    "s": "fp32",
    "t": "bf16",
    "d": "fp64",
    "c": "complex64",
    "z": "complex128",
    "q": "fp8",
    "i": "int8",
}
_NAME_DTYPES = {
    "bf16": "bf16",
    "f16": "fp16",
    "fp16": "fp16",
    "h": "fp16",
    "f32": "fp32",
    "fp32": "fp32",
    "tf32": "tf32",
    "f64": "fp64",
    "fp64": "fp64",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "fp8": "fp8",
    "f8": "fp8",
    "i8": "int8",
    "int8": "int8",
    "s8": "int8",
    "u8": "uint8",
    "i32": "int32",
    "s32": "int32",
}
_MMA_SHAPES = {
    "884": "m8n8k4",
    "1688": "m16n8k8",
    "16816": "m16n8k16",
    "16832": "m16n8k32",
    "16864": "m16n8k64",
    "8816": "m8n8k16",
    "8832": "m8n8k32",
    "161616": "m16n16k16",
    "32816": "m32n8k16",
    "83216": "m8n32k16",
}
_ARCH_WORDS = {
    "maxwell": "sm50",
    "pascal": "sm60",
    "volta": "sm70",
    "turing": "sm75",
    "ampere": "sm80",
    "ada": "sm89",
    "hopper": "sm90",
    "blackwell": "sm100",
}


def _layout_note(layout: str) -> str:
    letters = ", ".join(
        f"{role} {'transposed' if ch in 'Tt' else 'as stored'}"
        for role, ch in zip(("A", "B", "C/D"), layout, strict=False)
    )
    return (
        f"layout {layout}: {letters} (T = transposed, N = not, in cuBLAS's column-major convention; "
        "row-major PyTorch tensors arrive with operands swapped or transposed)"
    )


def _mma_note(token: str) -> str | None:
    m = re.fullmatch(r"([hsdi])(\d{3,6})(?:gemm|cudnn)?", token)
    if not m:
        return None
    acc = {"h": "fp16", "s": "fp32", "d": "fp64", "i": "int32"}[m.group(1)]
    shape = _MMA_SHAPES.get(m.group(2), m.group(2))
    return f"{token}: tensor-core MMA {shape} accumulating in {acc}"


_NO_TENSOR_CORE_NOTE = (
    "plain fp32 FMA on CUDA cores: no tensor cores (TF32 is off; "
    "torch.set_float32_matmul_precision('high') would allow TF32 tensor cores)"
)


# --------------------------------------------------------------------------------------------
# handlers: memcpy / memset / NCCL


def _memcpy(m: re.Match[str], name: str) -> KernelName:
    direction, src, dst = m.group(1), m.group(2), m.group(3)
    notes = [f"{direction}: a copy from {src} to {dst} memory by the copy engine (no SM work)"]
    if "Pageable" in (src, dst):
        notes.append(
            "pageable host memory: staged through a pinned buffer, so the copy cannot overlap "
            "and the host waits (pin the tensor, e.g. .pin_memory(), for async copies)"
        )
    return KernelName(
        name=name,
        family="memcpy",
        kind="copy",
        op=direction,
        variant=f"{src} -> {dst}",
        short=_clip(f"memcpy {direction} ({src} → {dst})"),
        notes=tuple(notes),
    )


def _memset(m: re.Match[str], name: str) -> KernelName:
    where = m.group(1)
    return KernelName(
        name=name,
        family="memset",
        kind="fill",
        op="memset",
        variant=where,
        short=_clip(f"memset ({where})"),
        notes=(
            "cudaMemset: fills memory with a byte value (cuBLASLt zeroes its workspace or "
            "split-K accumulator this way before nvjet GEMMs)",
        ),
    )


_NCCL_ALGOS = ("COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "NVLS", "RING", "TREE", "PAT")
_NCCL_PROTOS = ("LL128", "LL", "SIMPLE")
_NCCL_OPS = ("PreMulSum", "SumPostDiv", "Sum", "Prod", "MinMax", "Max", "Min", "Avg")
_NCCL_DTYPES = {
    "f16": "fp16",
    "half": "fp16",
    "f32": "fp32",
    "float": "fp32",
    "f64": "fp64",
    "double": "fp64",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "i8": "int8",
    "int8_t": "int8",
    "u8": "uint8",
    "uint8_t": "uint8",
    "i32": "int32",
    "int32_t": "int32",
    "u32": "uint32",
    "uint32_t": "uint32",
    "i64": "int64",
    "int64_t": "int64",
    "u64": "uint64",
    "uint64_t": "uint64",
    "f8e4m3": "fp8",
    "f8e5m2": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
}


def _nccl(m: re.Match[str], name: str) -> KernelName:
    body = m.group(1)
    for algo in _NCCL_ALGOS:  # multi-word algorithms become one token
        body = body.replace(algo, algo.replace("_", "-"))
    tokens = [t for t in body.split("_") if t]
    collective = tokens[0] if tokens else None
    reduce_op = algorithm = protocol = dtype = None
    for tok in tokens[1:]:
        plain = tok.replace("-", "_")
        if plain in _NCCL_ALGOS and algorithm is None:
            algorithm = plain
        elif plain in _NCCL_PROTOS and protocol is None:
            protocol = plain
        elif plain in _NCCL_OPS and reduce_op is None:
            reduce_op = plain
        elif plain in _NCCL_DTYPES and dtype is None:
            dtype = _NCCL_DTYPES[plain]
    notes = ["NCCL collective kernel: the GPUs exchange data (its time includes waiting for peers)"]
    if algorithm:
        notes.append(f"algorithm {algorithm}")
    if protocol:
        notes.append(
            {
                "LL": "protocol LL (low latency: 8-byte stores with flags, for small messages)",
                "LL128": "protocol LL128 (128-byte low-latency stores, for medium messages)",
                "SIMPLE": "protocol SIMPLE (bulk transfers with fences, for large messages)",
            }[protocol]
        )
    parts = [p for p in (collective, reduce_op, dtype) if p]
    if algorithm or protocol:
        parts.append("/".join(p for p in (algorithm, protocol) if p))
    return KernelName(
        name=name,
        family="nccl",
        kind="collective",
        op=collective,
        dtype=dtype,
        collective=collective,
        reduce_op=reduce_op,
        algorithm=algorithm,
        protocol=protocol,
        short=_clip("nccl " + " ".join(parts)),
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------------------------
# Inductor / Triton

# Multi-word op names that can appear in Inductor's fused kernel names (joined with "_", so they
# cannot be split on "_" alone). A name missing here is split into words: harmless, only less tidy.
_INDUCTOR_OPS: frozenset[str] = frozenset(
    {
        "_unsafe_view",
        "_unsafe_index",
        "_unsafe_index_put",
        "_to_copy",
        "_softmax",
        "_log_softmax",
        "_softmax_backward_data",
        "_log_softmax_backward_data",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_functional",
        "_native_batch_norm_legit_no_training",
        "_fused_rms_norm",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_mm",
        "_weight_norm_interface",
        "threshold_backward",
        "gelu_backward",
        "silu_backward",
        "sigmoid_backward",
        "tanh_backward",
        "native_layer_norm",
        "native_layer_norm_backward",
        "native_group_norm",
        "native_group_norm_backward",
        "native_batch_norm_backward",
        "native_dropout",
        "native_dropout_backward",
        "layer_norm",
        "group_norm",
        "batch_norm",
        "rms_norm",
        "nll_loss_forward",
        "nll_loss_backward",
        "nll_loss2d_forward",
        "nll_loss2d_backward",
        "embedding_dense_backward",
        "max_pool2d_with_indices",
        "max_pool2d_with_indices_backward",
        "avg_pool2d",
        "avg_pool2d_backward",
        "convolution_backward",
        "constant_pad_nd",
        "masked_fill",
        "index_put",
        "index_select",
        "index_add",
        "scatter_add",
        "scatter_reduce",
        "select_scatter",
        "slice_scatter",
        "as_strided",
        "as_strided_scatter",
        "split_with_sizes",
        "full_like",
        "zeros_like",
        "ones_like",
        "empty_like",
        "new_zeros",
        "new_ones",
        "new_empty",
        "scalar_tensor",
        "clamp_min",
        "clamp_max",
        "leaky_relu",
        "leaky_relu_backward",
        "hardtanh_backward",
        "var_mean",
        "bitwise_and",
        "bitwise_or",
        "bitwise_not",
        "bitwise_xor",
        "logical_and",
        "logical_or",
        "logical_not",
        "lift_fresh",
        "lift_fresh_copy",
        "copy_",
        "add_",
        "mul_",
        "div_",
        "sub_",
        "fill_",
        "zero_",
        "addcmul_",
        "addcdiv_",
        "lerp_",
        "unbind_int",
        "flex_attention",
        "flex_attention_backward",
    }
)
_INDUCTOR_MAX_WORDS = max(len(op.strip("_").split("_")) for op in _INDUCTOR_OPS) + 1


def split_inductor_ops(fused: str) -> tuple[str, ...]:
    """Split Inductor's ``_``-joined op list (``_unsafe_view_gelu_mul``) into op names.

    A double underscore marks an op whose name starts with ``_`` (``fused__unsafe_view``). Known
    multi-word ops (:data:`_INDUCTOR_OPS`) are matched longest-first; other words stand alone.
    """
    words = fused.split("_")
    ops: list[str] = []
    i = 0
    while i < len(words):
        prefix = ""
        if words[i] == "":
            prefix = "_"
            i += 1
            if i >= len(words):
                break
            if words[i] == "":
                continue
        best = 1
        for n in range(min(_INDUCTOR_MAX_WORDS, len(words) - i), 1, -1):
            candidate = prefix + "_".join(words[i : i + n])
            # in-place ops end with "_": "add_" then the next word.
            if candidate in _INDUCTOR_OPS:
                best = n
                break
            if i + n < len(words) and words[i + n] == "" and candidate + "_" in _INDUCTOR_OPS:
                best = n
                break
        op = prefix + "_".join(words[i : i + best])
        i += best
        if i < len(words) and words[i] == "" and op + "_" in _INDUCTOR_OPS:
            op += "_"
            i += 1
        ops.append(op)
    return tuple(op for op in ops if op)


_INDUCTOR_KINDS = {
    "poi": ("pointwise", "pointwise"),
    "red": ("reduction", "reduction"),
    "per": ("persistent-reduction", "persistent reduction (one block holds a whole row)"),
    "tem": ("template", "template (a Triton GEMM/attention template, e.g. from max-autotune)"),
    "for": ("foreach", "foreach (one launch over a list of tensors)"),
    "unk": ("other", "unknown category"),
}
_METADATA_OPS = frozenset(
    {"_unsafe_view", "view", "reshape", "permute", "transpose", "t", "expand", "squeeze", "unsqueeze"}
)
_GEMM_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "_scaled_mm", "convolution"})


def _inductor(m: re.Match[str], name: str) -> KernelName:
    prefix, fused, ops_text, kid = m.group(1), m.group(2), m.group(3), m.group(4)
    kind, kind_words = _INDUCTOR_KINDS[prefix]
    ops = split_inductor_ops(ops_text) if ops_text else ()
    notes = [
        f"Inductor-generated Triton kernel (torch.compile): {kind_words}"
        + (f" fusing {', '.join(ops)}" if ops else "")
        + (f"; kernel #{kid} of its graph" if kid is not None else "")
    ]
    if fused and "__" in f"{fused}{ops_text}":
        notes.append("a double underscore in the name marks an op whose name starts with '_'")
    meta = [op for op in ops if op in _METADATA_OPS]
    if meta:
        notes.append(
            f"{', '.join(meta)} only rewrite{'s' if len(meta) == 1 else ''} shape/stride metadata: "
            "no arithmetic and no memory traffic of their own"
        )
    if prefix == "tem" and any(op in _GEMM_OPS for op in ops):
        notes.append("a Triton GEMM template chosen by autotuning instead of cuBLAS")
    op_text = "+".join(ops) if ops else ""
    short = f"inductor {prefix} {op_text}".rstrip() + (f" #{kid}" if kid is not None else "")
    return KernelName(
        name=name,
        family="inductor",
        kind=kind,
        op=op_text or None,
        fused_ops=ops,
        kernel_id=int(kid) if kid is not None else None,
        short=_clip(short),
        notes=tuple(notes),
    )


_USER_KIND_WORDS: tuple[tuple[str, str], ...] = (
    ("matmul", "gemm"),
    ("gemm", "gemm"),
    ("_mm", "gemm"),
    ("attn", "attention"),
    ("attention", "attention"),
    ("flash", "attention"),
    ("softmax", "softmax"),
    ("norm", "norm"),
    ("reduce", "reduction"),
    ("sum", "reduction"),
    ("geglu", "elementwise"),
    ("swiglu", "elementwise"),
    ("gelu", "elementwise"),
    ("silu", "elementwise"),
    ("relu", "elementwise"),
    ("add", "elementwise"),
    ("mul", "elementwise"),
    ("copy", "copy"),
)


def _user_triton(m: re.Match[str], name: str) -> KernelName:
    ident = m.group(0)
    lowered = ident.lower()
    kind = next((k for word, k in _USER_KIND_WORDS if word in lowered), "custom")
    op = ident.strip("_")
    op = op.removesuffix("_kernel") or op
    return KernelName(
        name=name,
        family="triton",
        kind=kind,
        op=op,
        short=_clip(f"triton {ident}"),
        notes=(
            "a bare function name with no C++ signature: most likely a user @triton.jit kernel "
            "(CUDA C++ kernels show their parameter list)",
        ),
    )


# --------------------------------------------------------------------------------------------
# cuBLAS / cuBLASLt / CUTLASS GEMMs


def _blas_type_code(code: str) -> tuple[str | None, str | None]:
    """cuBLAS element-type letters: ``tst`` → (bf16, 'inputs bf16, accumulate fp32, output bf16')."""
    if not code or any(ch not in _BLAS_LETTER for ch in code):
        return None, None
    names = [_BLAS_LETTER[ch] for ch in code]
    if len(names) == 3:
        return names[0], f"inputs {names[0]}, compute {names[1]}, output {names[2]}"
    if len(names) == 5:
        return (
            names[0],
            f"A {names[0]}, B {names[1]}, C {names[2]}, compute {names[3]}, output {names[4]}",
        )
    return names[0], None


_EPILOGUE_WORDS = {
    "bias": "bias",
    "relu": "relu",
    "gelu": "gelu",
    "silu": "silu",
    "swish": "silu",
    "dgelu": "gelu_backward",
    "drelu": "relu_backward",
    "bgrada": "bias_grad",
    "bgradb": "bias_grad",
    "aux": "aux",
}


def _nvjet(m: re.Match[str], name: str) -> KernelName:
    arch, code, tile, kstages, cluster, raster, middle, layout = m.groups()
    dtype, dtype_words = _blas_type_code(code)
    tokens = [t for t in (middle or "").split("_") if t]
    variant_parts: list[str] = []
    fused: list[str] = []
    notes = [
        "cuBLASLt's nvjet GEMM kernel (Hopper-generation cuBLAS)" + (f", built for {arch}" if arch else ""),
        f"tile {tile}: each thread block computes a {tile.replace('x', '×')} output tile",
        f"{kstages}: K tile of {kstages.split('x')[0]} × {kstages.split('x')[1]} pipeline stages",
        f"cluster {cluster}: thread-block cluster of {cluster.replace('x', '×')} CTAs",
        f"raster {raster}: the order output tiles are walked "
        f"({'horizontal' if raster == 'h' else 'vertical'})",
    ]
    if dtype_words:
        notes.insert(1, f"type code {code}: {dtype_words}")
    for tok in tokens:
        if tok == "bz":
            notes.append("bz: read as beta = 0 (no C input is read)")
        elif tok.startswith("coop"):
            variant_parts.append(tok)
            notes.append(
                f"{tok}: cooperative schedule (consumer warp groups share one tile, split along "
                f"{'A/M' if tok.endswith('A') else 'B/N' if tok.endswith('B') else tok[4:]})"
            )
        elif tok in _EPILOGUE_WORDS:
            fused.append(_EPILOGUE_WORDS[tok])
            variant_parts.append(f"{tok} epilogue")
            if tok == "bias":
                notes.append(
                    "bias add fused into the GEMM epilogue (why nn.Linear shows no aten::add: "
                    "aten::addmm does it in this one kernel)"
                )
            else:
                notes.append(f"{tok} fused into the GEMM epilogue")
        else:
            variant_parts.append(tok)
    notes.append(_layout_note(layout))
    label = "gemm" + "".join(f"+{op}" for op in fused)
    coop = [p for p in variant_parts if p.startswith("coop")]
    short = " ".join(["nvjet", label, dtype or "", tile, *coop, layout])
    return KernelName(
        name=name,
        family="cublasLt nvjet",
        kind="gemm",
        op=label,
        arch=arch,
        tile=tile,
        stages=kstages,
        layout=layout,
        cluster=cluster,
        dtype=dtype,
        variant=", ".join(variant_parts) or None,
        fused_ops=tuple(fused),
        short=_clip(short),
        notes=tuple(notes),
    )


def _xmma(m: re.Match[str], name: str) -> KernelName:
    arch, op = m.group(1), m.group(2)
    rest = name[m.end() :]
    conv = op in {"fprop", "dgrad", "wgrad"} or "implicit_gemm" in rest
    family = "cudnn" if (conv or name.endswith("cudnn")) else "cublas"
    dtype = None
    first = re.search(r"(?:^|_)(bf16|f16|f32|tf32|f64|e4m3|e5m2|i8|s8|fp8)", rest)
    if first:
        dtype = _NAME_DTYPES.get(first.group(1))
    tile = stages = mma = alignment = layout = None
    notes = [
        f"{'cuDNN' if family == 'cudnn' else 'cuBLAS'} xmma kernel built for {arch}",
    ]
    if t := re.search(r"tilesize(\d+x\d+)x(\d+)", rest):
        tile = t.group(1)
        notes.append(f"tile {tile} with a K tile of {t.group(2)}")
    if s := re.search(r"_stages?(\d+)", rest):
        stages = s.group(1)
        notes.append(f"{stages} pipeline stages")
    if w := re.search(r"warpsize(\d+x\d+x\d+)", rest):
        notes.append(f"warps {w.group(1)} per thread block")
    if t2 := re.search(r"_tensor(\d+x\d+x\d+)", rest):
        mma = f"tensor {t2.group(1)}"
        notes.append(f"tensor-core MMA {t2.group(1)}")
    elif re.search(r"_ffma(?:_|$)", rest):
        mma = "ffma"
        notes.append("ffma: " + _NO_TENSOR_CORE_NOTE)
    elif re.search(r"_(?:warpgroupsize|wgmma|gmma)", rest):
        mma = "wgmma"
        notes.append("wgmma: Hopper warp-group tensor-core MMA")
    aligns = re.findall(r"align([abc]\d+)", rest)
    if aligns:
        alignment = " ".join(aligns)
        notes.append(f"alignment {alignment} (elements per vector access of A/B/C)")
    if lay := re.search(r"_([nt]{2})_([nt])(?:_|$)", rest):
        layout = lay.group(1) + lay.group(2)
        notes.append(_layout_note(layout))
    elif lay2 := re.search(r"_([nt]{2})(?:_|$)", rest):
        layout = lay2.group(1)
        notes.append(_layout_note(layout))
    variants: list[str] = []
    if "split_k" in rest or "splitk" in rest:
        variants.append("split-K")
        notes.append("split-K: K is split across thread blocks and the partial sums reduced after")
    if "segment_k" in rest:
        variants.append("segment-K")
    if "sliced" in rest and (sl := re.search(r"sliced(\d+x\d+)", rest)):
        variants.append(f"sliced {sl.group(1)}")
    kind = "convolution" if conv else "gemm"
    conv_op = {"fprop": "forward", "dgrad": "data grad", "wgrad": "weight grad"}.get(op)
    if conv:
        notes.insert(1, f"convolution {conv_op or op} as an implicit GEMM")
    short = " ".join(
        p
        for p in (
            "cudnn" if family == "cudnn" else "cublas",
            f"conv {conv_op}" if conv_op else op,
            dtype or "",
            tile or "",
            layout or "",
            *variants,
        )
        if p
    )
    return KernelName(
        name=name,
        family=family,
        kind=kind,
        op=f"conv {conv_op}" if conv_op else op,
        arch=arch,
        tile=tile,
        stages=stages,
        layout=layout,
        dtype=dtype,
        mma=mma,
        alignment=alignment,
        variant=", ".join(variants) or None,
        short=_clip(short),
        notes=tuple(notes),
    )


def _blas_tokens(
    tokens: list[str],
) -> dict[str, Any]:
    """Classify the ``_``-separated tokens of a cuBLAS/CUTLASS/cuDNN GEMM kernel name."""
    out: dict[str, Any] = {
        "dtype": None,
        "mma": None,
        "tile": None,
        "stages": None,
        "layout": None,
        "alignment": None,
        "vector_width": None,
        "variants": [],
        "fused": [],
        "notes": [],
        "op": "gemm",
        "output_dtype": None,
    }
    tiles: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        low = tok.lower()
        if low in _NAME_DTYPES:
            if out["dtype"] is None:
                out["dtype"] = _NAME_DTYPES[low]
            elif out["output_dtype"] is None:
                out["output_dtype"] = _NAME_DTYPES[low]
        elif re.fullmatch(r"[hsdi]\d{3,6}(?:gemm|cudnn)", low):
            out["mma"] = low[: -4 if low.endswith("gemm") else -5]
            out["op"] = "gemm" if low.endswith("gemm") else "conv"
            if low[0] == "h" and out["dtype"] is None:
                out["dtype"] = "fp16"
            if note := _mma_note(low):
                out["notes"].append(note)
        elif re.fullmatch(r"[sdhcz]gemm|gcgemm|sgemm", low):
            out["mma"] = "simt"
            out["dtype"] = out["dtype"] or _BLAS_LETTER.get(low[0] if low != "gcgemm" else "c")
            out["notes"].append(f"{low}: SIMT GEMM on CUDA cores (no tensor cores)")
        elif low in {"scudnn", "hcudnn", "dcudnn"}:
            out["mma"] = "simt"
            out["op"] = "conv"
            out["dtype"] = out["dtype"] or _BLAS_LETTER.get(low[0])
        elif re.fullmatch(r"\d+x\d+", low):
            tiles.append(low)
        elif low == "stages" and i + 1 < len(tokens) and re.fullmatch(r"\d+x\d+", tokens[i + 1]):
            out["stages"] = tokens[i + 1]
            i += 1
        elif m := re.fullmatch(r"ldg(\d+)", low):
            out["vector_width"] = int(m.group(1))
            out["notes"].append(f"ldg{m.group(1)}: global loads of {m.group(1)} elements per thread")
        elif m := re.fullmatch(r"align(\d+)", low):
            out["alignment"] = m.group(1)
            out["notes"].append(f"align{m.group(1)}: operands aligned to {m.group(1)} elements")
        elif re.fullmatch(r"[nt]{2,3}", low) and out["layout"] is None:
            out["layout"] = tok
        elif low in {"relu", "bias", "gelu", "silu"}:
            out["fused"].append(low)
        elif low in {"wmma", "tensorop", "simt"}:
            out["mma"] = out["mma"] or low
        elif low.startswith("splitk") or low == "splitkreduce":
            out["variants"].append("split-K")
        elif low not in {"gemm", "cudnn", "kernel", "v1", "v0", "void"} and not low.isdigit():
            out["variants"].append(tok)
        i += 1
    if tiles:
        out["tile"] = tiles[0]
        if out["stages"] is None and len(tiles) > 1:
            out["stages"] = tiles[1]
    if out["stages"] and "x" in out["stages"]:
        k, n = out["stages"].split("x", 1)
        out["notes"].append(f"{out['stages']}: K tile of {k} × {n} pipeline stages")
    if out["tile"]:
        out["notes"].insert(0, f"tile {out['tile']}: the output tile of one thread block")
    if out["layout"]:
        out["notes"].append(_layout_note(out["layout"]))
    if out["output_dtype"] and out["output_dtype"] != out["dtype"]:
        out["notes"].append(f"output {out['output_dtype']}")
    return out


def _arch_blas(m: re.Match[str], name: str) -> KernelName:
    arch_word = m.group(1)
    arch = _ARCH_WORDS.get(arch_word, arch_word)
    tokens = name[m.end() :].split("_")
    info = _blas_tokens([t for t in tokens if t])
    is_conv = info["op"] == "conv" or "cudnn" in name
    family = "cudnn" if is_conv else "cublas"
    notes = [f"{'cuDNN' if is_conv else 'cuBLAS'} kernel for {arch_word} ({arch})", *info["notes"]]
    if info["fused"]:
        notes.append(f"{', '.join(info['fused'])} fused into the epilogue")
    short = " ".join(
        p
        for p in (
            family,
            "conv" if is_conv else "gemm",
            info["dtype"] or "",
            info["mma"] or "",
            info["tile"] or "",
            info["layout"] or "",
        )
        if p
    )
    return KernelName(
        name=name,
        family=family,
        kind="convolution" if is_conv else "gemm",
        op="conv" if is_conv else "gemm",
        arch=arch,
        tile=info["tile"],
        stages=info["stages"],
        layout=info["layout"],
        dtype=info["dtype"],
        mma=info["mma"],
        alignment=info["alignment"],
        vector_width=info["vector_width"],
        variant=", ".join(info["variants"]) or None,
        fused_ops=tuple(info["fused"]),
        short=_clip(short),
        notes=tuple(notes),
    )


_CUTLASS_INNER = re.compile(r"(cutlass(?:3x)?_[A-Za-z0-9_]+)")


def _cutlass(m: re.Match[str], name: str) -> KernelName:
    inner = _CUTLASS_INNER.search(name)
    if inner is None:
        # cutlass::Kernel<cutlass::gemm::kernel::…>: only the namespace says GEMM or conv.
        kind = "convolution" if re.search(r"conv|Conv", name) else "gemm"
        return KernelName(
            name=name,
            family="cutlass",
            kind=kind,
            op=kind,
            dtype=_cpp_dtype(name),
            short=_clip(f"cutlass {_collapse(name)}"),
            notes=("a CUTLASS template kernel",),
        )
    text = inner.group(1)
    tokens = [t for t in text.split("_") if t]
    arch = None
    rest = tokens[1:]
    if tokens[0] == "cutlass3x" and rest and re.fullmatch(r"sm\d+a?", rest[0]):
        arch, rest = rest[0], rest[1:]
    elif rest and re.fullmatch(r"\d{2,3}", rest[0]):
        arch, rest = f"sm{rest[0]}", rest[1:]
    # CUTLASS 3 tiles are MxNxK and clusters AxBxC.
    tile3 = next((t for t in rest if re.fullmatch(r"\d+x\d+x\d+", t)), None)
    info = _blas_tokens([t for t in rest if not re.fullmatch(r"\d+x\d+x\d+", t)])
    notes = ["a CUTLASS-generated kernel" + (f" for {arch}" if arch else ""), *info["notes"]]
    if "(" in name and "cutlass::Kernel" in name:
        notes.append("launched through cutlass::Kernel; under aten::mm it is cuBLAS that picked it")
    if "simt" in tokens and info["dtype"] in (None, "fp32"):
        notes.append("simt: " + _NO_TENSOR_CORE_NOTE)
    if "wmma" in tokens:
        notes.append("wmma tensorop: the warp-level WMMA tensor-core API")
    tile = info["tile"]
    stages = info["stages"]
    cluster = None
    if tile3:
        mm, nn, kk = tile3.split("x")
        tile = f"{mm}x{nn}"
        notes.append(f"CUTLASS 3 tile {tile3}: a {mm}×{nn} output tile with a K tile of {kk}")
        clusters = [t for t in rest if re.fullmatch(r"\d+x\d+x\d+", t)]
        if len(clusters) > 1:
            cluster = clusters[1]
    short = " ".join(
        p
        for p in (
            "cutlass",
            "wmma" if "wmma" in tokens else ("simt" if "simt" in tokens else ""),
            "gemm" if info["op"] == "gemm" else "conv",
            info["dtype"] or "",
            tile or "",
            info["layout"] or "",
        )
        if p
    )
    return KernelName(
        name=name,
        family="cutlass",
        kind="gemm" if info["op"] == "gemm" else "convolution",
        op=info["op"],
        arch=arch,
        tile=tile,
        stages=stages,
        layout=info["layout"],
        cluster=cluster,
        dtype=info["dtype"],
        mma=info["mma"],
        alignment=info["alignment"],
        vector_width=info["vector_width"],
        variant=", ".join(v for v in info["variants"]) or None,
        fused_ops=tuple(info["fused"]),
        short=_clip(short),
        notes=tuple(notes),
    )


_CUBLAS_HELPERS: tuple[tuple[str, str, str, str, str], ...] = (
    # (regex on the function name, kind, op, short, note)
    (
        r"splitKreduce_kernel",
        "reduction",
        "split-K reduce",
        "cublasLt split-K reduce",
        "split-K GEMM: K was split across thread blocks and this kernel sums the partial results "
        "(and applies alpha/beta and the epilogue)",
    ),
    (
        r"epilogue::impl::globalKernel",
        "epilogue",
        "epilogue",
        "cublasLt epilogue",
        "a separate cuBLASLt epilogue pass (bias/activation/scaling applied after the GEMM main loop)",
    ),
    (
        r"(?:^|::)scal_kernel",
        "blas",
        "scal",
        "cublas scal",
        "cuBLAS scal: scales a matrix by a scalar, e.g. C by beta (or to zero) before an "
        "accumulating/split-K GEMM",
    ),
    (
        r"sgemm_largek",
        "gemm",
        "gemm",
        "cublas sgemm large-K",
        "fp32 SIMT GEMM specialised for a large K (split over thread blocks; " + _NO_TENSOR_CORE_NOTE + ")",
    ),
    (r"gemv|gemvx", "gemv", "gemv", "cublas gemv", "matrix-vector product (one operand is a vector)"),
    (
        r"gemmk1_kernel",
        "gemm",
        "gemm k=1",
        "cublas gemm K=1",
        "GEMM with K = 1 (an outer product)",
    ),
    (r"gemmSN_\w+_kernel", "gemm", "gemm", "cublas gemm small-N", "GEMM specialised for a small N"),
    (
        r"(?:^|::)(?:dot_kernel|reduce_1Block_kernel|asum_kernel|nrm2_kernel|axpy_kernel|swap_kernel)",
        "blas",
        "blas level 1",
        "cublas level-1",
        "a cuBLAS level-1 (vector) kernel",
    ),
    (r"^cublas", "other", "cublas", "cublas", "a cuBLAS/cuBLASLt internal kernel"),
)


def _cublas_helper(m: re.Match[str], name: str) -> KernelName:
    head = _head(name)
    for pattern, kind, op, short, note in _CUBLAS_HELPERS:
        if re.search(pattern, head):
            family = "cublasLt" if "cublasLt" in head or op == "split-K reduce" else "cublas"
            args = _template_args(name)
            dtype = _cpp_dtype(", ".join(args)) if args else None
            if dtype is None and re.search(r"(?:^|::)sgemm", head):
                dtype = "fp32"
            return KernelName(
                name=name,
                family=family,
                kind=kind,
                op=op,
                dtype=dtype,
                variant="split-K" if op == "split-K reduce" else None,
                short=_clip(short),
                notes=(note,),
            )
    return _other(name)


# --------------------------------------------------------------------------------------------
# attention


def _flash(m: re.Match[str], name: str) -> KernelName:
    func = m.group(1)
    direction = "backward" if "bwd" in func else "forward"
    args = _template_args(name)
    tile = None
    head_dim = None
    traits = re.search(r"Flash_(?:fwd|bwd)_kernel_traits\w*<(\d+),\s*(\d+),\s*(\d+)", name)
    if traits:
        head_dim, tile = traits.group(1), f"{traits.group(2)}x{traits.group(3)}"
    dtype = _cpp_dtype(", ".join(args)) if args else _cpp_dtype(name)
    notes = [
        f"FlashAttention {direction} kernel: attention fused into one kernel that never writes "
        "the L×S score matrix to memory"
    ]
    if head_dim:
        notes.append(f"head dim {head_dim}; tile {tile} (query block × key block)")
    variant = None
    if "splitkv" in func:
        variant = "split-KV"
        notes.append("split-KV: keys/values split across thread blocks, combined after (decoding)")
    part = func.replace("flash_", "").replace("_kernel", "")
    return KernelName(
        name=name,
        family="flash-attention",
        kind="attention",
        op=f"attention {direction}",
        tile=tile,
        dtype=dtype,
        variant=variant,
        short=_clip(
            " ".join(p for p in ("flash", part, dtype or "", f"hd{head_dim}" if head_dim else "") if p)
        ),
        notes=tuple(notes),
    )


def _mem_efficient(m: re.Match[str], name: str) -> KernelName:
    fb = m.group(1)
    direction = "backward" if fb == "B" else "forward"
    dtype = _NAME_DTYPES.get(m.group(2) or "")
    tile = m.group(3)
    arch = f"sm{m.group(4)}" if m.group(4) else None
    return KernelName(
        name=name,
        family="mem-efficient-attention",
        kind="attention",
        op=f"attention {direction}",
        arch=arch,
        tile=tile,
        dtype=dtype,
        variant="aligned" if "_aligned" in name else ("notaligned" if "notaligned" in name else None),
        short=_clip(
            " ".join(
                p for p in ("mem-eff attention", "bwd" if fb == "B" else "fwd", dtype or "", tile or "") if p
            )
        ),
        notes=(
            f"memory-efficient attention {direction} (xFormers' CUTLASS kernel in PyTorch's SDPA): "
            "fused, no L×S score matrix in memory",
        )
        + ((f"built for {arch} and newer",) if arch else ()),
    )


def _mem_efficient_generic(m: re.Match[str], name: str) -> KernelName:
    direction = "backward" if re.search(r"backward|bwd|_B\b|cutlassB", name) else "forward"
    return KernelName(
        name=name,
        family="mem-efficient-attention",
        kind="attention",
        op=f"attention {direction}",
        dtype=_cpp_dtype(name),
        short=_clip(f"mem-eff attention {direction[:3]}"),
        notes=("memory-efficient attention (CUTLASS, PyTorch's SDPA backend)",),
    )


def _cudnn_sdpa(m: re.Match[str], name: str) -> KernelName:
    arch = m.group(1)
    phase = m.group(2)
    direction = "backward" if phase == "bprop" else "forward"
    rest = name[m.end() :]
    tokens = [t for t in rest.split("_") if t]
    dtype = next((_NAME_DTYPES[t] for t in tokens if t in _NAME_DTYPES), None)
    mma = "wgmma" if "wgmma" in tokens else ("hmma" if "hmma" in tokens else None)
    knob = re.search(r"knob_(\d+)", rest)
    tiles = re.findall(r"(?<![a-z])(\d+x\d+x\d+)", rest)
    cga = re.search(r"cga(\d+x\d+x\d+)", rest)
    tile = tiles[0] if tiles else None
    notes = [
        f"cuDNN's generated fused attention (SDPA) {direction} kernel for {arch}: flash-style, "
        "no L×S score matrix in memory",
    ]
    if dtype == "fp16":
        notes.append("its 'f16' covers 16-bit inputs: bf16 runs it too")
    if mma == "wgmma":
        notes.append("wgmma: Hopper warp-group tensor-core MMA")
    if tile:
        notes.append(f"tile {tile} (query block × key block × head-dim chunk)")
    if knob:
        notes.append(f"knob {knob.group(1)}: the cuDNN engine configuration chosen")
    if len(tiles) > 1:
        notes.append(f"warps {tiles[1]}")
    return KernelName(
        name=name,
        family="cudnn",
        kind="attention",
        op=f"attention {direction}",
        arch=arch,
        tile=tile,
        cluster=cga.group(1) if cga else None,
        dtype=dtype,
        mma=mma,
        kernel_id=int(knob.group(1)) if knob else None,
        short=_clip(f"cudnn sdpa flash {'bprop' if direction == 'backward' else 'fprop'} {tile or ''}"),
        notes=tuple(notes),
    )


_CUDNN_KINDS: tuple[tuple[str, str, str, str], ...] = (
    # (regex, kind, op, note)
    (
        r"compute_dot_do_o",
        "attention",
        "attention backward dot(dO, O)",
        "cuDNN SDPA backward pre-pass: the row sums of dO·O used in the softmax gradient",
    ),
    (
        r"convert_dq",
        "attention",
        "attention backward dQ convert",
        "cuDNN SDPA backward: converts the fp32 dQ accumulator to 16-bit",
    ),
    (r"sdpa|fmha|flash", "attention", "attention", "cuDNN fused attention"),
    (
        r"fprop|dgrad|wgrad|convolve|conv|winograd|implicit|precomputed|fft|gemm",
        "convolution",
        "conv",
        "cuDNN convolution kernel",
    ),
    (
        r"[Nn]chwTo[Nn]hwc|[Nn]hwcTo[Nn]chw|transpose",
        "layout",
        "layout transform",
        "cuDNN tensor layout transform",
    ),
    (r"bn_|batch_?norm|BatchNorm|bn[A-Z]", "norm", "batch_norm", "cuDNN batch norm"),
    (r"softmax|Softmax", "softmax", "softmax", "cuDNN softmax"),
    (r"pool", "pooling", "pooling", "cuDNN pooling"),
    (r"rnn|lstm|gru|RNN|LSTM|GRU", "other", "rnn", "cuDNN RNN"),
)


def _cudnn(m: re.Match[str], name: str) -> KernelName:
    head = _head(name)
    kind, op, note = next(
        ((k, o, n) for pattern, k, o, n in _CUDNN_KINDS if re.search(pattern, head)),
        ("other", "cudnn", "a cuDNN kernel"),
    )
    arch = None
    if a := re.search(r"(?:^|_)(sm\d+)(?:_|$)", head):
        arch = a.group(1)
    notes = [note]
    if "winograd" in head:
        notes.append("Winograd convolution: fewer multiplies for small (3×3) filters")
    return KernelName(
        name=name,
        family="cudnn",
        kind=kind,
        op=op,
        arch=arch,
        dtype=_cpp_dtype(", ".join(_template_args(name))),
        short=_clip(f"cudnn {_collapse(name).split('::')[-1]}"),
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------------------------
# ATen

# Functor / lambda-context patterns inside ATen elementwise templates → op. First match wins.
_ATEN_FUNCTORS: tuple[tuple[str, str], ...] = (
    (r"GeluBackward", "gelu_backward"),
    (r"Gelu", "gelu"),
    (r"masked_scale", "dropout"),
    (r"bfloat16_copy_kernel", "copy"),
    (r"float8_copy_kernel", "copy"),
    (r"direct_copy_kernel|copy_kernel|CopyKernel", "copy"),
    (r"FillFunctor|fill_kernel", "fill"),
    (r"launch_clamp_scalar|clamp_min|clamp_max|clamp_kernel|ClampLimits", "clamp"),
    (r"threshold_kernel", "threshold"),
    (r"pow_tensor_\w+|pow_kernel|PowFunctor", "pow"),
    (r"silu_backward|SiluBackward", "silu_backward"),
    (r"silu_kernel|SiluFunctor", "silu"),
    (r"sigmoid_backward", "sigmoid_backward"),
    (r"sigmoid", "sigmoid"),
    (r"tanh_backward", "tanh_backward"),
    (r"tanh_kernel|TanhFunctor", "tanh"),
    (r"rsqrt", "rsqrt"),
    (r"\bSqrt<|sqrt_kernel", "sqrt"),
    (r"LerpFunctor|lerp_kernel", "lerp"),
    (r"addcmul", "addcmul"),
    (r"addcdiv", "addcdiv"),
    (r"MulFunctor|std::multiplies|mul_kernel", "mul"),
    (r"CUDAFunctor_add|AddFunctor|std::plus|add_kernel", "add"),
    (r"DivFunctor|div_true|div_trunc|div_floor|std::divides|DivTrue", "div"),
    (r"std::minus|sub_kernel|SubFunctor", "sub"),
    (r"\bexp_kernel|\bExp<|exp2_kernel", "exp"),
    (r"\blog_kernel|\bLog<|log1p|log2_kernel", "log"),
    (r"neg_kernel|NegFunctor", "neg"),
    (r"abs_kernel|AbsFunctor", "abs"),
    (r"where_kernel", "where"),
    (r"maximum_kernel|MaxFunctor|MaxNanFunctor", "maximum"),
    (r"minimum_kernel|MinFunctor|MinNanFunctor", "minimum"),
    (r"reciprocal", "reciprocal"),
    (r"\bsin_kernel", "sin"),
    (r"\bcos_kernel", "cos"),
    (r"softplus", "softplus"),
    (r"leaky_relu", "leaky_relu"),
    (r"hardtanh", "hardtanh"),
    (r"hardswish", "hardswish"),
    (r"\belu_kernel", "elu"),
    (r"bitwise_\w+?_kernel|Bitwise\w+Functor", "bitwise"),
    (r"logical_not|logical_and|logical_or", "logical"),
    (r"compare|CompareEq|Compare\w*Functor|\beq_kernel|\bne_kernel|\blt_kernel|\bgt_kernel", "compare"),
    (r"nan_to_num", "nan_to_num"),
    (r"index_put|index_elementwise|index_kernel", "index"),
    (r"cat_\w+kernel", "cat"),
    (r"triu_tril", "triu/tril"),
    (r"arange|linspace|range_kernel", "arange"),
    (r"sign_kernel|signbit", "sign"),
    (r"fmod|remainder", "remainder"),
    (r"round_kernel|floor_kernel|ceil_kernel|trunc_kernel", "round"),
)
_ATEN_FUNCTOR_RES = tuple((re.compile(p), op) for p, op in _ATEN_FUNCTORS)

_OP_KINDS = {"copy": "copy", "fill": "fill", "index": "index", "cat": "copy"}

_REDUCE_OPS: tuple[tuple[str, str], ...] = (
    (r"sum_functor|SumOps|sum_kernel", "sum"),
    (r"nansum", "nansum"),
    (r"MeanOps|mean_kernel", "mean"),
    (r"WelfordOps", "var/std"),
    (r"ArgMaxOps", "argmax"),
    (r"ArgMinOps", "argmin"),
    (r"MaxOps|max_values|MaxNanFunctor|max_kernel", "max"),
    (r"MinOps|min_values|MinNanFunctor|min_kernel", "min"),
    (r"NormOps|NormTwoOps|NormOneOps|NormZeroOps|AbsMaxOps|norm_kernel", "norm"),
    (r"prod_functor|ProdOps|prod_kernel", "prod"),
    (r"LogSumExp|logsumexp", "logsumexp"),
    (r"and_kernel|And<|all_kernel", "all"),
    (r"or_kernel|Or<|any_kernel", "any"),
)

_FOREACH_WRAPPERS = {
    "BinaryOpScalarFunctor": "scalar",
    "BinaryOpScalarListFunctor": "scalar list",
    "BinaryOpListAlphaFunctor": "list, alpha",
    "BinaryOpScalarTensorFunctor": "scalar tensor",
    "PointwiseOpScalarFunctor": "pointwise, scalar",
    "PointwiseOpScalarListFunctor": "pointwise, scalar list",
    "PointwiseOpListFunctor": "pointwise, list",
    "TernaryOpScalarFunctor": "ternary, scalar",
    "TernaryOpListFunctor": "ternary, list",
    "UnaryOpFunctor": "unary",
    "ZeroFunctor": "zero",
    "CopyFunctor": "copy",
}

_ATEN_NAMED: tuple[tuple[str, str, str, str], ...] = (
    # (regex on the function name, kind, op, note); first match wins.
    (r"multi_tensor_apply_kernel", "foreach", "foreach", ""),
    (
        r"(?:^|::)(?:vectorized_|unrolled_)?elementwise_kernel(?:_with_index|_helper)?$",
        "elementwise",
        "",
        "",
    ),
    (r"(?:^|::)reduce_kernel$", "reduction", "", ""),
    (r"softmax_warp_forward|cunn_SoftMaxForward|softmax_forward", "softmax", "softmax forward", ""),
    (r"softmax_warp_backward|cunn_SoftMaxBackward|softmax_backward", "softmax", "softmax backward", ""),
    (
        r"layer_norm_grad|GammaBetaBackward|ComputeInternalGradients|ComputeGradientFusedParams|"
        r"LayerNormBackward|layer_norm_backward",
        "norm",
        "layer_norm backward",
        "",
    ),
    (r"layer_norm|LayerNormForward|RowwiseMoments", "norm", "layer_norm forward", ""),
    (r"rms_?norm|RmsNorm", "norm", "rms_norm", ""),
    (r"group_norm|GroupNorm", "norm", "group_norm", ""),
    (
        r"batch_norm|BatchNorm|welford_kernel|batch_norm_collect|batch_norm_transform",
        "norm",
        "batch_norm",
        "",
    ),
    (r"nll_loss\w*forward|ClassNLLCriterion_updateOutput", "loss", "nll_loss forward", ""),
    (r"nll_loss\w*backward|ClassNLLCriterion_updateGradInput", "loss", "nll_loss backward", ""),
    (r"cross_entropy|mse|smooth_l1|binary_cross_entropy|kl_div", "loss", "loss", ""),
    (r"fused_dropout", "elementwise", "dropout", "dropout: random mask and scale in one kernel"),
    (
        r"distribution_elementwise|distribution_nullary|philox|curand|randperm|bernoulli|"
        r"multinomial|random",
        "rng",
        "",
        "",
    ),
    (r"CatArrayBatchedCopy|cat_", "copy", "cat", "torch.cat: copies the inputs into one tensor"),
    (
        r"index|Index|gather|Gather|scatter|Scatter|embedding|Embedding|take|put_",
        "index",
        "",
        "",
    ),
    (r"sort|Sort|radix|Radix|bitonic|topk|TopK|gatherTopK|segmented", "sort", "", ""),
    (r"scan|Scan|cumsum|cumprod", "scan", "", ""),
    (r"pool|Pool", "pooling", "", ""),
    (r"upsample|Upsample|interpolate|grid_sampler", "elementwise", "", ""),
    (r"im2col|col2im|vol2col|col2vol", "copy", "", ""),
    (r"amp_update_scale|non_finite_check_and_unscale", "foreach", "amp unscale/check", ""),
)
_ATEN_NAMED_RES = tuple((re.compile(p), kind, op, note) for p, kind, op, note in _ATEN_NAMED)


def _aten_functor_op(text: str) -> str | None:
    for regex, op in _ATEN_FUNCTOR_RES:
        if regex.search(text):
            return op
    return None


def _aten(m: re.Match[str], name: str) -> KernelName:
    head = _head(name)
    func = head.rsplit("::", 1)[-1]
    args = _template_args(name)
    targs = ", ".join(args)
    kind, op, note = next(
        ((k, o, n) for regex, k, o, n in _ATEN_NAMED_RES if regex.search(head)),
        ("other", func, ""),
    )
    notes: list[str] = [note] if note else []
    vector_width: int | None = None
    variant: str | None = None
    dtype = _cpp_dtype(targs, args[0]) if args else None
    short: str

    if kind == "elementwise" and not op:
        op = _aten_functor_op(targs) or _aten_functor_op(name) or "elementwise"
        kind = _OP_KINDS.get(op, "elementwise")
        if func == "vectorized_elementwise_kernel" and args and args[0].isdigit():
            vector_width = int(args[0])
            variant = "vectorized"
            notes.append(f"vectorized path: contiguous, aligned tensors, {vector_width} elements per access")
        elif func == "unrolled_elementwise_kernel":
            variant = "unrolled"
            notes.append(
                "unrolled path: contiguous tensors"
                + (" with dtype casting (LoadWithCast)" if "WithCast" in name else "")
            )
        elif func.startswith("elementwise_kernel"):
            variant = "strided"
            notes.append("generic strided path: non-contiguous or broadcast inputs (no vector loads)")
        if "AUnaryFunctor" in targs or "BUnaryFunctor" in targs:
            notes.append(
                "one operand is a scalar (A/BUnaryFunctor: "
                f"{'a' if 'AUnaryFunctor' in targs else 'b'} is a scalar)"
            )
        if op == "clamp":
            notes.append("clamp: also what aten::relu runs on CUDA (clamp_min 0)")
        if op == "threshold":
            notes.append("threshold: what relu's backward (threshold_backward) runs")
        if op == "dropout":
            notes.append("dropout: multiplies by the mask and 1/(1-p)")
        if op == "copy" and "bfloat16_copy" in targs:
            notes.append("copy with a cast to bf16 (autocast / .to(torch.bfloat16))")
        suffix = f" ×{vector_width}" if vector_width else (" (strided)" if variant == "strided" else "")
        if variant == "unrolled":
            suffix = " (unrolled)"
        short = f"{'elementwise' if kind == 'elementwise' else kind} {op}{suffix}"
        if kind != "elementwise" and op == kind:
            short = f"{op}{suffix}"
    elif kind == "reduction":
        op = next((rop for pat, rop in _REDUCE_OPS if re.search(pat, targs or name)), "reduce")
        short = f"reduce {op}"
        notes.append(f"TensorIterator reduction: {op}")
    elif kind == "foreach":
        inner = op if op != "foreach" else (_aten_functor_op(targs) or "")
        if "FusedAdamW" in targs or ("FusedAdam" in targs and "ADAMW" in targs):
            inner = "fused adamw"
        elif "FusedAdam" in targs:
            inner = "fused adam"
        elif "FusedSgd" in targs:
            inner = "fused sgd"
        wrapper = next((w for w in _FOREACH_WRAPPERS if re.search(rf"\b{w}\b", targs)), None)
        op = inner or "foreach"
        if wrapper:
            variant = _FOREACH_WRAPPERS[wrapper]
        notes.append(
            "multi-tensor apply: one launch updates a whole list of tensors (_foreach_* ops, optimizers)"
        )
        short = f"foreach {op}" + (f" ({variant})" if variant else "")
    elif kind == "softmax":
        if func.startswith("softmax_warp") and len(args) >= 5:
            if args[4] == "true":
                op = "log_" + op
            if args[3].isdigit():
                notes.append(f"warp-per-row softmax for rows of up to {2 ** int(args[3])} elements")
            if len(args) >= 6 and args[5] == "true":
                variant = "masked"
        short = op.replace(" forward", " fwd").replace(" backward", " bwd")
    elif kind == "rng":
        dist = re.search(r"(normal|uniform|bernoulli|exponential|cauchy|log_normal|geometric|random)", name)
        op = dist.group(1) if dist else ("philox seed unpack" if "philox" in head else func)
        if "philox" in head and "unpack" in head:
            op = "philox seed unpack"
            notes.append("unpacks the RNG seed/offset for a kernel that draws random numbers (dropout)")
        short = f"rng {op}"
    else:
        if not op:
            op = func
        short = op.replace(" forward", " fwd").replace(" backward", " bwd")
        if kind == "other":
            short = _collapse(name)
        if kind == "elementwise" and op == "dropout" and len(args) >= 5 and args[4].isdigit():
            vector_width = int(args[4])
            short = f"dropout ×{vector_width}"
    return KernelName(
        name=name,
        family="aten",
        kind=kind,
        op=op,
        dtype=dtype,
        vector_width=vector_width,
        variant=variant,
        short=_clip(short),
        notes=tuple(notes),
    )


def _cub(m: re.Match[str], name: str) -> KernelName:
    head = _head(name)
    func = head.rsplit("::", 1)[-1]
    kind = (
        "sort"
        if re.search(r"Sort|Radix", func)
        else "scan"
        if re.search(r"Scan", func)
        else "reduction"
        if re.search(r"Reduce", func)
        else "other"
    )
    return KernelName(
        name=name,
        family="cub",
        kind=kind,
        op=func,
        dtype=_cpp_dtype(", ".join(_template_args(name))),
        short=_clip(f"cub {func}"),
        notes=("a CUB device-wide primitive (ATen uses it for sort, unique, nonzero, cumsum, …)",),
    )


def _other(name: str) -> KernelName:
    return KernelName(name=name, family="other", kind="other", short=_clip(_collapse(name) or name))


# --------------------------------------------------------------------------------------------
# the table


def _rule(family: str, pattern: str, handler: Handler, flags: int = 0) -> Rule:
    return Rule(family, re.compile(pattern, flags), handler)


RULES: list[Rule] = [
    _rule("memcpy", r"^Memcpy (\w+) \((\w+) -> (\w+)\)", _memcpy),
    _rule("memset", r"^Memset \((\w+)\)", _memset),
    _rule("nccl", r"nccl(?:Dev)?Kernel_([A-Za-z0-9_]+)", _nccl),
    _rule("inductor", r"^triton_(poi|red|per|tem|for|unk)_(fused_)?(\w*?)_?(\d+)?$", _inductor),
    _rule(
        "cublasLt nvjet",
        r"^nvjet_(?:(sm\d+a?)_)?([a-z]+)_(\d+x\d+)_(\d+x\d+)_(\d+x\d+)_([hv])_?(\w*?)_([TN]{2,3})$",
        _nvjet,
    ),
    _rule("cudnn", r"^cudnn_generated\w*?_sdpa_(sm\d+)\w*?_(fprop|bprop)", _cudnn_sdpa),
    _rule(
        "flash-attention",
        r"(?:(?:pytorch_flash|flash)::|^(?:void )?)(flash_(?:fwd|bwd)\w*?_kernel)",
        _flash,
    ),
    _rule(
        "mem-efficient-attention",
        r"fmha_cutlass([FB])_(bf16|f16|f32)_(?:not)?aligned_(\d+x\d+)\w*?(?:_sm(\d+))?(?=\(|$)",
        _mem_efficient,
    ),
    _rule(
        "mem-efficient-attention",
        r"PyTorchMemEffAttention|fmha_cutlass|attention_kernel_batched|efficient_attention",
        _mem_efficient_generic,
    ),
    _rule("cublas", r"^(sm\d+a?)_xmma_(gemm|fprop|dgrad|wgrad|\w+?)_", _xmma),
    _rule(
        "cublas",
        r"^(maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell|sm\d+a?)_(?=\w*(?:gemm|cudnn))",
        _arch_blas,
    ),
    _rule("cutlass", r"cutlass", _cutlass),
]


# Rules matched against the qualified function name (``_head``) rather than the whole name.
HEAD_RULES: list[Rule] = [
    _rule(
        "cublas",
        r"^(?:cublasLt::|cublas::)|(?:^|::)(?:splitKreduce_kernel|scal_kernel|sgemm_largek\w*|"
        r"gemv\w*|gemmk1_kernel|gemmSN_\w+_kernel|dot_kernel|reduce_1Block_kernel|asum_kernel|"
        r"nrm2_kernel|axpy_kernel|swap_kernel)$",
        _cublas_helper,
    ),
    _rule("aten", r"^(?:at::|at_cuda_detail::(?!cub::)|cunn_|softmax_warp_)", _aten),
    _rule("cudnn", r"(?:^|::|_)cudnn|^xmma_cudnn|implicit_convolve|winograd", _cudnn),
    _rule("cub", r"(?:^|::)cub(?:_\w+)?::", _cub),
    _rule("triton", r"^(?!Kernel$|kernel$)[A-Za-z_][A-Za-z0-9_]*$", _user_triton),
]
"""Second table, matched against the qualified function name (no ``void``, templates, params).

Names with a C++ signature are routed by their function name: ``void at::native::…<…>(…)`` is
ATen whatever its template arguments mention (``at::cuda::philox::unpack_cudnn`` is ATen, not cuDNN).
A bare identifier that no rule claimed is taken for a user ``@triton.jit`` kernel; the full name
must then be that identifier (no ``(`` or spaces).
"""


def _decode_strict(name: str) -> KernelName:
    """Decode without the safety net (tests use this to find handler bugs)."""
    for rule in RULES:
        m = rule.pattern.search(name)
        if m:
            return rule.handler(m, name)
    head = _head(name)
    for rule in HEAD_RULES:
        m = rule.pattern.search(head)
        if m:
            if rule.family == "triton" and head != name.strip():
                continue
            return rule.handler(m, name)
    return _other(name)


@functools.lru_cache(maxsize=16384)
def decode_kernel_name(name: str) -> KernelName:
    """Decode a kernel name (see the module docstring). Never raises; cached per distinct name."""
    if not isinstance(name, str):
        name = str(name)
    try:
        return _decode_strict(name)
    except Exception:  # a malformed name must never break a view; show it undecoded instead
        try:
            return _other(name)
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
    """One row per distinct non-null name with the decoded fields; join it back on ``name``.

    Columns: ``name`` (same dtype as the input Series), ``family, kind, op, arch, tile, stages,
    layout, cluster, dtype, mma, alignment`` (str), ``vector_width`` (Int64), ``variant``,
    ``fused_ops`` (comma-joined str, ``""`` when none), ``kernel_id`` (Int64), ``collective,
    reduce_op, algorithm, protocol, short`` (str) and ``notes`` (List[str]).
    """
    import polars as pl

    series = names if isinstance(names, pl.Series) else pl.Series("name", list(names), dtype=pl.String)
    unique = series.cast(pl.String).drop_nulls().unique(maintain_order=True)
    decoded = [decode_kernel_name(n) for n in unique.to_list()]
    data: dict[str, list[Any]] = {"name": unique.to_list()}
    for field in _COLUMN_FIELDS:
        values = [getattr(k, field) for k in decoded]
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
