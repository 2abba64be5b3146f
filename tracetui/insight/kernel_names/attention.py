"""Handlers for attention kernels: flash, memory-efficient, cuDNN SDPA, and cuDNN convolutions."""

from __future__ import annotations

import re

from tracetui.insight.kernel_names.cpp import (
    NAME_DTYPES,
    clip_text,
    collapse_templates,
    cpp_dtype,
    function_head,
    template_args,
)
from tracetui.insight.kernel_names.fields import KernelName

# --------------------------------------------------------------------------------------------
# attention


def decode_flash(m: re.Match[str], name: str) -> KernelName:
    func = m.group(1)
    direction = "backward" if "bwd" in func else "forward"
    args = template_args(name)
    tile = None
    head_dim = None
    traits = re.search(r"Flash_(?:fwd|bwd)_kernel_traits\w*<(\d+),\s*(\d+),\s*(\d+)", name)
    if traits:
        head_dim, tile = traits.group(1), f"{traits.group(2)}x{traits.group(3)}"
    dtype = cpp_dtype(", ".join(args)) if args else cpp_dtype(name)
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
        short=clip_text(
            " ".join(p for p in ("flash", part, dtype or "", f"hd{head_dim}" if head_dim else "") if p)
        ),
        notes=tuple(notes),
    )


def decode_mem_efficient(m: re.Match[str], name: str) -> KernelName:
    fb = m.group(1)
    direction = "backward" if fb == "B" else "forward"
    dtype = NAME_DTYPES.get(m.group(2) or "")
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
        short=clip_text(
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


def decode_mem_efficient_generic(m: re.Match[str], name: str) -> KernelName:
    direction = "backward" if re.search(r"backward|bwd|_B\b|cutlassB", name) else "forward"
    return KernelName(
        name=name,
        family="mem-efficient-attention",
        kind="attention",
        op=f"attention {direction}",
        dtype=cpp_dtype(name),
        short=clip_text(f"mem-eff attention {direction[:3]}"),
        notes=("memory-efficient attention (CUTLASS, PyTorch's SDPA backend)",),
    )


def decode_cudnn_sdpa(m: re.Match[str], name: str) -> KernelName:
    arch = m.group(1)
    phase = m.group(2)
    direction = "backward" if phase == "bprop" else "forward"
    rest = name[m.end() :]
    tokens = [t for t in rest.split("_") if t]
    dtype = next((NAME_DTYPES[t] for t in tokens if t in NAME_DTYPES), None)
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
        short=clip_text(f"cudnn sdpa flash {'bprop' if direction == 'backward' else 'fprop'} {tile or ''}"),
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


def decode_cudnn(m: re.Match[str], name: str) -> KernelName:
    head = function_head(name)
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
        dtype=cpp_dtype(", ".join(template_args(name))),
        short=clip_text(f"cudnn {collapse_templates(name).split('::')[-1]}"),
        notes=tuple(notes),
    )
