"""Handlers for AMD ROCm kernel names: Tensile GEMMs (rocBLAS's and hipBLASLt's ``Cijk_…``),
rocBLAS and hipBLASLt helpers, MIOpen, and composable kernel (``ck::``, ``ck_tile::``).

A Tensile name is its solution's parameters joined by ``_``:
``Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x64_MI16x16x1_…_ISA942_…_WG32_8_1`` is the
problem ``C[i,j] = Σ_l A[i,l]·B[l,j]`` (``Ailk``: A's free index ``i`` has unit stride, read as A
not transposed, ``Alik`` transposed; likewise ``Bljk`` / ``Bjlk`` for B), types ``BBS`` (A and B
bf16, C/D bf16, compute fp32), a 256×256 macro tile with a K depth of 64 (``MT``), the MFMA matrix
instruction (``MI``), built for gfx942 (``ISA942``), workgroup 32×8×1 (``WG``); ``GSU`` > 1 splits
the sum over workgroups (split-K), ``Bias`` fuses the bias add, ``UserArgs`` is hipBLASLt's
(TensileLite's) grouped-GEMM argument form. Readings from naming habits rather than documentation
are worded as readings in the notes.
"""

from __future__ import annotations

import re

from tracetui.insight.kernel_names.cpp import clip_text, collapse_templates, function_head, template_args
from tracetui.insight.kernel_names.fields import KernelName

# Tensile's DataType letters (longest first: ``F8B8`` before ``F8``, ``I8`` before ``I``)
_TENSILE_TYPES = (
    ("F8B8", "fp8"),
    ("B8F8", "fp8"),
    ("4xi8", "int8"),
    ("F8", "fp8"),
    ("B8", "fp8"),
    ("I8", "int8"),
    ("S", "fp32"),
    ("D", "fp64"),
    ("C", "complex64"),
    ("Z", "complex128"),
    ("H", "fp16"),
    ("B", "bf16"),
    ("I", "int32"),
    ("X", "tf32"),
)


def _tensile_types(code: str) -> list[str] | None:
    """``BBS`` → ``[bf16, bf16, fp32]``; None when ``code`` is not all Tensile type letters."""
    found: list[str] = []
    rest = code
    while rest:
        match = next(
            ((letters, dtype) for letters, dtype in _TENSILE_TYPES if rest.startswith(letters)), None
        )
        if match is None:
            return None
        found.append(match[1])
        rest = rest[len(match[0]) :]
    return found if 2 <= len(found) <= 4 else None


def _isa(token: str) -> str:
    """``ISA942`` → ``gfx942``; ``ISA90a`` → ``gfx90a``."""
    return "gfx" + token.removeprefix("ISA").lower()


_EPILOGUES = {"Bias": "bias", "Relu": "relu", "Gelu": "gelu", "Silu": "silu", "Swish": "silu"}


def decode_tensile(m: re.Match[str], name: str) -> KernelName:
    a_index, b_index = m.group(1), m.group(2)
    tokens = [t for t in name[m.end() :].split("_") if t]
    layout = ("N" if a_index.startswith("i") else "T") + ("N" if b_index.startswith("l") else "T")
    hipblaslt = "UserArgs" in tokens
    family = "hipblaslt" if hipblaslt else "tensile"
    notes = [
        "a Tensile GEMM kernel (rocBLAS and hipBLASLt generate these; "
        + ("UserArgs: read as hipBLASLt's TensileLite kernel)" if hipblaslt else "rocBLAS or hipBLASLt)"),
        f"Cijk_A{a_index}_B{b_index}: C[i,j] = Σ_l A·B; A {'not ' if layout[0] == 'N' else ''}transposed, "
        f"B {'not ' if layout[1] == 'N' else ''}transposed (read from which index has unit stride)",
    ]
    if name.startswith("Custom_"):
        notes.append("Custom_: a hand-written assembly kernel among the generated ones")
    dtype = tile = stages = mma = arch = None
    fused: list[str] = []
    variants: list[str] = []
    for token in tokens:
        if dtype is None and (types := _tensile_types(token)):
            dtype = types[0]
            notes.append(f"types {token}: A/B {types[0]}, C/D {types[1]}, compute {types[-1]}")
        elif mt := re.fullmatch(r"MT(\d+)x(\d+)x(\d+)", token):
            tile, stages = f"{mt.group(1)}x{mt.group(2)}", mt.group(3)
            notes.append(f"macro tile {tile} with a K depth of {stages} (MT{tile}x{stages})")
        elif re.fullmatch(r"MI\d+(?:x\d+)+", token):
            mma = f"mfma {token[2:]}"
            notes.append(f"{token}: the MFMA matrix-core instruction shape")
        elif re.fullmatch(r"ISA[0-9a-f]+", token):
            arch = _isa(token)
        elif re.fullmatch(r"gfx[0-9a-f]+", token):  # a Custom_ kernel's target
            arch = token
        elif (gsu := re.fullmatch(r"GSU(\d+)", token)) and int(gsu.group(1)) > 1:
            variants.append("split-K")
            notes.append(f"{token}: the K sum is split over {gsu.group(1)} workgroups and reduced after")
        elif token in _EPILOGUES:
            fused.append(_EPILOGUES[token])
            variants.append(f"{token.lower()} epilogue")
            notes.append(f"{token.lower()} fused into the GEMM's epilogue")
    label = "gemm" + "".join(f"+{op}" for op in fused)
    short = " ".join(p for p in (family, label, dtype or "", tile or "", layout) if p)
    return KernelName(
        name=name,
        family=family,
        kind="gemm",
        op=label,
        arch=arch,
        tile=tile,
        stages=stages,
        layout=layout,
        dtype=dtype,
        mma=mma,
        variant=", ".join(variants) or None,
        fused_ops=tuple(fused),
        short=clip_text(short),
        notes=tuple(notes),
    )


def _kind_of(text: str, table: tuple[tuple[str, str], ...], default: str = "other") -> str:
    lowered = text.lower()
    return next((kind for word, kind in table if word in lowered), default)


def _library(name: str, family: str, prefix: str, kind: str, note: str) -> KernelName:
    """A library's own kernel, named by its function (``prefix`` dropped from the short form)."""
    head = function_head(name)
    return KernelName(
        name=name,
        family=family,
        kind=kind,
        op=head.removeprefix(prefix).removesuffix("_kernel") or head,
        short=clip_text(f"{family} {head.removeprefix(prefix) or head}"),
        notes=(note,),
    )


_BLAS_KINDS = (("gemv", "gemv"), ("gemm", "gemm"), ("trsm", "blas"), ("axpy", "blas"), ("dot", "blas"))
_MIOPEN_KINDS = (
    ("batchnorm", "norm"),
    ("layernorm", "norm"),
    ("groupnorm", "norm"),
    ("softmax", "softmax"),
    ("pool", "pooling"),
    ("conv", "convolution"),
    ("igemm", "convolution"),
    ("winograd", "convolution"),
    ("active", "elementwise"),
    ("tensorop", "elementwise"),
    ("reduce", "reduction"),
)


def decode_rocblas(m: re.Match[str], name: str) -> KernelName:
    kind = _kind_of(function_head(name), _BLAS_KINDS, "blas")
    return _library(
        name, "rocblas", "rocblas_", kind, "a rocBLAS kernel of its own (its GEMMs are Tensile's Cijk_…)"
    )


def decode_hipblaslt(m: re.Match[str], name: str) -> KernelName:
    kind = _kind_of(function_head(name), _BLAS_KINDS)
    return _library(
        name, "hipblaslt", "hipblaslt", kind, "a hipBLASLt helper kernel (its GEMMs are TensileLite's)"
    )


def decode_miopen(m: re.Match[str], name: str) -> KernelName:
    head = function_head(name)
    kind = _kind_of(head, _MIOPEN_KINDS)
    prefix = next((p for p in ("MIOpen", "miopen") if head.startswith(p)), "")
    return _library(
        name, "miopen", prefix, kind, f"an MIOpen kernel (ROCm's cuDNN), read as {kind} from its name"
    )


_CK_KINDS = (
    ("fmha", "attention"),
    ("attention", "attention"),
    ("conv", "convolution"),
    ("gemm", "gemm"),
    ("layernorm", "norm"),
    ("rmsnorm", "norm"),
    ("softmax", "softmax"),
    ("reduce", "reduction"),
)


def decode_ck(m: re.Match[str], name: str) -> KernelName:
    head = function_head(name)
    what = head.split("::")[-1]
    args = template_args(name)
    if what == "kentry" and args:  # ck_tile::kentry<N, ck_tile::FmhaFwdKernel<…>>: the kernel is an argument
        inner = next((a for a in args if "::" in a), args[-1])
        what = function_head(inner).split("::")[-1] or what
    kind = _kind_of(what, _CK_KINDS)
    if kind == "other":
        kind = _kind_of(collapse_templates(name), _CK_KINDS)
    space = "ck_tile" if head.startswith("ck_tile::") else "ck"
    return KernelName(
        name=name,
        family="composable-kernel",
        kind=kind,
        op=what,
        short=clip_text(f"{space} {what}"),
        notes=(f"a composable kernel ({space}::) kernel, read as {kind} from its name",),
    )
