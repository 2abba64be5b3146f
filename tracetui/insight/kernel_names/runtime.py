"""Handlers for memcpy, memset and NCCL collective kernel names."""

from __future__ import annotations

import re

from tracetui.insight.kernel_names.cpp import clip_text
from tracetui.insight.kernel_names.fields import KernelName

# --------------------------------------------------------------------------------------------
# handlers: memcpy / memset / NCCL


HIP_MEMCPY_KINDS = {"0": "HtoH", "1": "HtoD", "2": "DtoH", "3": "DtoD"}
"""``hipMemcpyKind``'s numbers: roctracer names a copy ``Memcpy 1 (0x7f… -> 0x7f…)``, by the kind's
number and the two pointers (4, ``hipMemcpyDefault``, leaves the direction to the pointers)."""


def decode_memcpy(m: re.Match[str], name: str) -> KernelName:
    direction, src, dst = m.group(1), m.group(2), m.group(3)
    if direction in HIP_MEMCPY_KINDS or direction == "4":
        return _hip_memcpy(name, direction)
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
        short=clip_text(f"memcpy {direction} ({src} → {dst})"),
        notes=tuple(notes),
    )


def _hip_memcpy(name: str, number: str) -> KernelName:
    """A ROCm copy named by its ``hipMemcpyKind`` number (the memory kinds are not said)."""
    direction = HIP_MEMCPY_KINDS.get(number)
    said = f"hipMemcpyKind {number}"
    notes = [
        f"{said}: a copy {direction} by the copy engine (ROCm names it by the kind's number and its pointers)"
        if direction
        else f"{said} (hipMemcpyDefault): the direction follows the pointers, which the name does not say"
    ]
    return KernelName(
        name=name,
        family="memcpy",
        kind="copy",
        op=direction,
        short=clip_text(f"memcpy {direction or 'default'} (hip)"),
        notes=tuple(notes),
    )


def decode_memset(m: re.Match[str], name: str) -> KernelName:
    where = m.group(1)
    return KernelName(
        name=name,
        family="memset",
        kind="fill",
        op="memset",
        variant=where,
        short=clip_text(f"memset ({where})"),
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


def decode_nccl(m: re.Match[str], name: str) -> KernelName:
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
        short=clip_text("nccl " + " ".join(parts)),
        notes=tuple(notes),
    )
