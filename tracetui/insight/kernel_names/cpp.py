"""Text helpers for C++ kernel names: printable text, templates and argument lists, dtypes, notes."""

from __future__ import annotations

import re

from tracetui.insight.kernel_names.fields import SHORT_MAX
from tracetui.safetext import shown

# --------------------------------------------------------------------------------------------
# text helpers


def clip_text(text: str, limit: int = SHORT_MAX) -> str:
    """``text`` on one line, as a terminal may show it (:func:`tracetui.safetext.shown`: control
    characters replaced, invisible and direction characters as visible escapes), cut to ``limit``."""
    text = " ".join(shown(text[: 16 * limit], limit=None).split())  # bounded work on a huge name
    return text if len(text) <= limit else text[: limit - 1] + "…"


_ANON = "(anonymous namespace)::"


def _strip_void(name: str) -> str:
    return name[5:] if name.startswith("void ") else name


def function_head(name: str) -> str:
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


def template_args(name: str) -> list[str]:
    """Top-level template arguments of the kernel function (``[]`` when it has none)."""
    text = _strip_void(name.strip()).replace(_ANON, "")
    head = function_head(name)
    pos = len(head)
    while pos < len(text) and text[pos] == " ":
        pos += 1
    if pos >= len(text) or text[pos] != "<":
        return []
    inner = _balanced(text, pos, "<", ">")
    if inner is None:
        return []
    return _split_top(inner[0])


def args_at(text: str, start: int) -> list[str]:
    """Top-level arguments of the ``<…>`` opening at ``start`` (``[]`` when unbalanced)."""
    inner = _balanced(text, start, "<", ">")
    return [] if inner is None else _split_top(inner[0])


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


def collapse_templates(name: str) -> str:
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


def cpp_dtype(text: str, first_arg: str | None = None) -> str | None:
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
BLAS_LETTER = {
    "h": "fp16",
    "s": "fp32",
    "t": "bf16",
    "d": "fp64",
    "c": "complex64",
    "z": "complex128",
    "q": "fp8",
    "i": "int8",
}
NAME_DTYPES = {
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
ARCH_WORDS = {
    "maxwell": "sm50",
    "pascal": "sm60",
    "volta": "sm70",
    "turing": "sm75",
    "ampere": "sm80",
    "ada": "sm89",
    "hopper": "sm90",
    "blackwell": "sm100",
}


def layout_note(layout: str) -> str:
    letters = ", ".join(
        f"{role} {'transposed' if ch in 'Tt' else 'as stored'}"
        for role, ch in zip(("A", "B", "C/D"), layout, strict=False)
    )
    return (
        f"layout {layout}: {letters} (T = transposed, N = not, in cuBLAS's column-major convention; "
        "row-major PyTorch tensors arrive with operands swapped or transposed)"
    )


def mma_note(token: str) -> str | None:
    m = re.fullmatch(r"([hsdi])(\d{3,6})(?:gemm|cudnn)?", token)
    if not m:
        return None
    acc = {"h": "fp16", "s": "fp32", "d": "fp64", "i": "int32"}[m.group(1)]
    shape = _MMA_SHAPES.get(m.group(2), m.group(2))
    return f"{token}: tensor-core MMA {shape} accumulating in {acc}"


NO_TENSOR_CORE_NOTE = (
    "plain fp32 FMA on CUDA cores: no tensor cores (TF32 is off; "
    "torch.set_float32_matmul_precision('high') would allow TF32 tensor cores)"
)
