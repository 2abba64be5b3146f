"""Handlers for cuBLAS / cuBLASLt (nvjet, xmma, arch-prefixed) and CUTLASS GEMM kernel names."""

from __future__ import annotations

import re
from typing import Any

from tracetui.insight.kernel_names.aten import decode_other
from tracetui.insight.kernel_names.cpp import (
    ARCH_WORDS,
    BLAS_LETTER,
    NAME_DTYPES,
    NO_TENSOR_CORE_NOTE,
    args_at,
    clip_text,
    collapse_templates,
    cpp_dtype,
    function_head,
    layout_note,
    mma_note,
    template_args,
)
from tracetui.insight.kernel_names.fields import KernelName

# --------------------------------------------------------------------------------------------
# cuBLAS / cuBLASLt / CUTLASS GEMMs


def _blas_type_code(code: str) -> tuple[str | None, str | None]:
    """cuBLAS element-type letters: ``tst`` → (bf16, 'inputs bf16, accumulate fp32, output bf16')."""
    if not code or any(ch not in BLAS_LETTER for ch in code):
        return None, None
    names = [BLAS_LETTER[ch] for ch in code]
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


def decode_nvjet(m: re.Match[str], name: str) -> KernelName:
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
    notes.append(layout_note(layout))
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
        short=clip_text(short),
        notes=tuple(notes),
    )


def decode_xmma(m: re.Match[str], name: str) -> KernelName:
    arch, op = m.group(1), m.group(2)
    rest = name[m.end() :]
    conv = op in {"fprop", "dgrad", "wgrad"} or "implicit_gemm" in rest
    family = "cudnn" if (conv or name.endswith("cudnn")) else "cublas"
    dtype = None
    first = re.search(r"(?:^|_)(bf16|f16|f32|tf32|f64|e4m3|e5m2|i8|s8|fp8)", rest)
    if first:
        dtype = NAME_DTYPES.get(first.group(1))
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
        notes.append("ffma: " + NO_TENSOR_CORE_NOTE)
    elif re.search(r"_(?:warpgroupsize|wgmma|gmma)", rest):
        mma = "wgmma"
        notes.append("wgmma: Hopper warp-group tensor-core MMA")
    aligns = re.findall(r"align([abc]\d+)", rest)
    if aligns:
        alignment = " ".join(aligns)
        notes.append(f"alignment {alignment} (elements per vector access of A/B/C)")
    if lay := re.search(r"_([nt]{2})_([nt])(?:_|$)", rest):
        layout = lay.group(1) + lay.group(2)
        notes.append(layout_note(layout))
    elif lay2 := re.search(r"_([nt]{2})(?:_|$)", rest):
        layout = lay2.group(1)
        notes.append(layout_note(layout))
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
        short=clip_text(short),
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
        if low in NAME_DTYPES:
            if out["dtype"] is None:
                out["dtype"] = NAME_DTYPES[low]
            elif out["output_dtype"] is None:
                out["output_dtype"] = NAME_DTYPES[low]
        elif re.fullmatch(r"[hsdi]\d{3,6}(?:gemm|cudnn)", low):
            out["mma"] = low[: -4 if low.endswith("gemm") else -5]
            out["op"] = "gemm" if low.endswith("gemm") else "conv"
            if low[0] == "h" and out["dtype"] is None:
                out["dtype"] = "fp16"
            if note := mma_note(low):
                out["notes"].append(note)
        elif re.fullmatch(r"[sdhcz]gemm|gcgemm|sgemm", low):
            out["mma"] = "simt"
            out["dtype"] = out["dtype"] or BLAS_LETTER.get(low[0] if low != "gcgemm" else "c")
            out["notes"].append(f"{low}: SIMT GEMM on CUDA cores (no tensor cores)")
        elif low in {"scudnn", "hcudnn", "dcudnn"}:
            out["mma"] = "simt"
            out["op"] = "conv"
            out["dtype"] = out["dtype"] or BLAS_LETTER.get(low[0])
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
        out["notes"].append(layout_note(out["layout"]))
    if out["output_dtype"] and out["output_dtype"] != out["dtype"]:
        out["notes"].append(f"output {out['output_dtype']}")
    return out


def decode_arch_blas(m: re.Match[str], name: str) -> KernelName:
    arch_word = m.group(1)
    arch = ARCH_WORDS.get(arch_word, arch_word)
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
        short=clip_text(short),
        notes=tuple(notes),
    )


_CUTLASS_INNER = re.compile(r"(cutlass(?:3x)?_(?!_)[A-Za-z0-9_]+)")
CONV_OPS = {"fprop": "forward", "dgrad": "data grad", "wgrad": "weight grad"}
# CUTLASS 2.x conv::Operator: kFprop, kDgrad, kWgrad (kDeconv, where present, is a dgrad)
_CONV_OPERATOR = {"0": "fprop", "1": "dgrad", "2": "wgrad", "3": "dgrad"}
_CUTLASS_TYPES = (
    ("bfloat16_t", "bf16"),
    ("half_t", "fp16"),
    ("tfloat32_t", "tf32"),
    ("float_e4m3_t", "fp8"),
    ("float_e5m2_t", "fp8"),
    ("int8_t", "int8"),
)
_CUTLASS_TYPE = re.compile(r"::(" + "|".join(t for t, _ in _CUTLASS_TYPES) + r")\b")


def decode_cudnn_cutlass(m: re.Match[str], name: str) -> KernelName:
    """cuDNN's bundled CUTLASS 2.x kernels (namespace ``cutlass__5x_cudnn``): implicit-GEMM
    convolutions, named by a generated instance (``…Kernel<cutlass_tensorop_bf16_s16816dgrad_…>``)
    or spelled out as templates (``…ImplicitGemmConvolution<…Conv2dWgrad…, (conv::Operator)2, …>``)."""
    inner = _CUTLASS_INNER.search(name)
    if inner is not None and re.search(r"(?:fprop|dgrad|wgrad)", inner.group(1)):
        return _cudnn_cutlass_instance(name, inner.group(1))
    return _cudnn_cutlass_template(name)


def _cudnn_cutlass_instance(name: str, text: str) -> KernelName:
    tokens = [t for t in text.split("_") if t][1:]
    op = None
    rest = []
    for tok in tokens:
        found = re.fullmatch(r"([hsdi]\d{3,6})?(fprop|dgrad|wgrad)", tok.lower())
        if found:
            op = found.group(2)
            if found.group(1):
                rest.append(found.group(1) + "gemm")  # the MMA token, read as _blas_tokens reads it
        else:
            rest.append(tok)
    info = _blas_tokens(rest)
    mma = info["mma"] or ""
    info["notes"] = [
        n.replace(f"{mma}gemm:", f"{mma}:") for n in info["notes"] if not n.startswith("layout ")
    ]
    layout = next((t for t in tokens if t.lower() in ("nhwc", "nchw", "ndhwc")), None)
    variants = [v for v in info["variants"] if v.lower() not in ("nhwc", "nchw", "ndhwc", "tensorop")]
    return _cudnn_conv_name(
        name,
        op,
        dtype=info["dtype"],
        tile=info["tile"],
        stages=info["stages"],
        mma=info["mma"],
        layout=layout,
        alignment=info["alignment"],
        variant=", ".join(variants) or None,
        notes=info["notes"],
    )


def _cudnn_cutlass_template(name: str) -> KernelName:
    operator = re.search(r"conv::Operator\)(\d)", name)
    iterator = re.search(r"Conv[23]d(Fprop|Dgrad|Wgrad)", name)
    op = _CONV_OPERATOR.get(operator.group(1)) if operator else None
    if op is None and iterator:
        op = iterator.group(1).lower()
    shapes = re.findall(r"GemmShape<(\d+), (\d+), (\d+)>", name)
    notes: list[str] = []
    tile = stages = mma = None
    if shapes:
        tile = f"{shapes[0][0]}x{shapes[0][1]}"
        notes.append(f"tile {tile}: the output tile of one thread block, with a K tile of {shapes[0][2]}")
    instruction = re.search(r"arch::Mma<[\w:]*GemmShape<(\d+), (\d+), (\d+)>", name)
    if instruction:
        mma = "m{}n{}k{}".format(*instruction.groups())
        notes.append(f"tensor-core MMA {mma}")
    multistage = re.search(r"ImplicitGemmMultistage<", name)
    if multistage:
        args = args_at(name, multistage.end() - 1)
        if len(args) > 8 and args[8].isdigit():
            stages = args[8]
            notes.append(f"{stages} pipeline stages")
    dtype = next((_CUTLASS_DTYPES[t.group(1)] for t in [_CUTLASS_TYPE.search(name)] if t), None)
    dims = "3-D" if "Conv3d" in name else "2-D"
    notes.append(f"a {dims} convolution (its problem size type)")
    return _cudnn_conv_name(name, op, dtype=dtype, tile=tile, stages=stages, mma=mma, notes=notes)


_CUTLASS_DTYPES = dict(_CUTLASS_TYPES)


def _cudnn_conv_name(name: str, op: str | None, *, notes: list[str], **fields: Any) -> KernelName:
    words = CONV_OPS.get(op or "")
    head = [
        "cuDNN's bundled CUTLASS 2.x (cutlass__5x_cudnn) implicit-GEMM convolution"
        + (f": {op} ({words})" if words else ""),
    ]
    short = " ".join(
        p for p in ("cudnn cutlass conv", op or "", fields.get("dtype") or "", fields.get("tile") or "") if p
    )
    return KernelName(
        name=name,
        family="cudnn",
        kind="convolution",
        op=f"conv {words}" if words else "conv",
        short=clip_text(short),
        notes=tuple(head + notes),
        **fields,
    )


def decode_cutlass(m: re.Match[str], name: str) -> KernelName:
    inner = _CUTLASS_INNER.search(name)
    if inner is None:
        # cutlass::Kernel<cutlass::gemm::kernel::…>: only the namespace says GEMM or conv.
        kind = "convolution" if re.search(r"conv|Conv", name) else "gemm"
        return KernelName(
            name=name,
            family="cutlass",
            kind=kind,
            op=kind,
            dtype=cpp_dtype(name),
            short=clip_text(f"cutlass {collapse_templates(name)}"),
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
        notes.append("simt: " + NO_TENSOR_CORE_NOTE)
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
        short=clip_text(short),
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
        "fp32 SIMT GEMM specialised for a large K (split over thread blocks; " + NO_TENSOR_CORE_NOTE + ")",
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


def decode_cublas_helper(m: re.Match[str], name: str) -> KernelName:
    head = function_head(name)
    for pattern, kind, op, short, note in _CUBLAS_HELPERS:
        if re.search(pattern, head):
            family = "cublasLt" if "cublasLt" in head or op == "split-K reduce" else "cublas"
            args = template_args(name)
            dtype = cpp_dtype(", ".join(args)) if args else None
            if dtype is None and re.search(r"(?:^|::)sgemm", head):
                dtype = "fp32"
            return KernelName(
                name=name,
                family=family,
                kind=kind,
                op=op,
                dtype=dtype,
                variant="split-K" if op == "split-K reduce" else None,
                short=clip_text(short),
                notes=(note,),
            )
    return decode_other(name)
