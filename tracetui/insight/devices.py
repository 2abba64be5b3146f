"""Peak compute and memory rates per GPU, keyed by the trace's ``deviceProperties[].name``.

Each figure is a :class:`Peak` that says where it comes from:

- ``datasheet``: the vendor's published figure. Tensor-core rates are **dense**: NVIDIA datasheets
  print the 2:4-sparsity figure with an asterisk, and the dense rate is half of it. 16-bit tensor
  rates are with fp32 accumulation (what PyTorch uses). ``fp32`` is the CUDA-core (non-tensor) rate.
- ``reported``: a figure the vendor does not publish (the AWS-only A10G); taken from public
  comparisons and marked so.
- ``measured``: measured on this project's machines (see each source string for how and when).

:func:`peaks_for` prefers a measured figure over the datasheet where one exists (a GEMM library
reaches ~80 % of the datasheet rate, so a measured roof is the honest 100 %), and every
:class:`Peak` carries its basis so callers can say which they used. ``prefer="datasheet"`` gives
the datasheet figures only. An unknown device gives ``None``: show achieved rates without a %.

Copies have roofs of their own (:attr:`DevicePeaks.copy_roofs`): a device-to-device copy reads and
writes each byte, so it copies at half the memory roof (the measured H200 copy moved 4.26 TB/s of
traffic: 2.13 TB/s copied); a copy between host and device crosses the device's **host link** and a
peer copy its **peer link**, per direction (a copy goes one way). Kineto's ``deviceProperties`` say
nothing of links (the CUDA set: ``id, name, totalGlobalMem, computeMajor, …, numSms``; ROCm's adds
``maxSharedMemoryPerMultiProcessor``), so the link is the part's, from its name (:data:`LINKS`):
PCIe Gen5 x16 on Hopper PCIe, SXM and NVL boards, NVLink-C2C on Grace Hopper, PCIe Gen4 on Ampere
and Ada, Gen3 on Volta and Turing. A link's roof is its theoretical rate per direction, not a
typical one: a pinned copy reaches ~85 % of a PCIe link (55.2 GB/s each way on this project's H100
SXM, Gen5 x16: ``benchmarks/measure_copies.py``, above the ~50 GB/s often quoted as achievable), and
a roof a real copy beats is no roof. Peer links are NVLink on SXM and NVL parts and PCIe
peer-to-peer otherwise; the trace does not say how its GPUs connect, so a peer roof says it is
assumed.

Matching is by whole words in the normalised name (lower case, ``-``/``_`` as spaces), most
specific entry first, so ``NVIDIA H100 80GB HBM3``, ``NVIDIA H100 PCIe`` and ``NVIDIA H100 NVL``
each find their own row, and ``GH200`` never matches ``H200``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from tracetui.formatting import byte_rate

__all__ = [
    "DEVICE_TABLE",
    "DTYPE_ALIASES",
    "LINKS",
    "CopyRoofs",
    "DevicePeaks",
    "DeviceSpec",
    "Link",
    "Peak",
    "device_arch",
    "device_vendor",
    "peaks_for",
]

Basis = Literal["measured", "datasheet", "reported"]


@dataclass(frozen=True, slots=True)
class Peak:
    """One peak rate: TFLOP/s for compute, GB/s (10⁹ bytes/s) for memory."""

    value: float
    unit: str
    basis: Basis
    label: str
    """Short text for verdicts, e.g. ``"measured bf16 GEMM"`` or ``"H100 SXM datasheet"``."""
    source: str
    """Where the number comes from, in a sentence."""


@dataclass(frozen=True, slots=True)
class Link:
    """An interconnect a copy crosses, with its theoretical rate per direction."""

    name: str
    """``PCIe Gen5 x16``, ``NVLink-C2C``, ``NVLink 4``, …"""
    gbs: float
    """GB/s per direction (vendors print both directions together: twice this)."""
    source: str


LINKS: Mapping[str, Link] = MappingProxyType(
    {
        "pcie3": Link(
            "PCIe Gen3 x16",
            16.0,
            "PCIe 3.0 x16: 8 GT/s × 16 lanes = 16 GB/s per direction (15.8 after 128b/130b coding; "
            "datasheets print 32 GB/s, both directions); pinned copies reach ~12 GB/s",
        ),
        "pcie4": Link(
            "PCIe Gen4 x16",
            32.0,
            "PCIe 4.0 x16: 32 GB/s per direction (NVIDIA's datasheets print 64 GB/s, both directions); "
            "pinned copies reach ~25 GB/s",
        ),
        "pcie5": Link(
            "PCIe Gen5 x16",
            64.0,
            "PCIe 5.0 x16: 64 GB/s per direction (NVIDIA's Hopper datasheets print 128 GB/s, both "
            "directions); 256 MiB pinned copies moved 55.2 GB/s each way on this project's H100 SXM, "
            "pageable ones 19.3 (HtoD) and 14.2 (DtoH) (benchmarks/measure_copies.py, Dec 2026)",
        ),
        "c2c": Link(
            "NVLink-C2C",
            450.0,
            "NVIDIA GH200 Grace Hopper Superchip datasheet: NVLink-C2C, 900 GB/s between Grace and "
            "Hopper, both directions",
        ),
        "nvlink4": Link(
            "NVLink 4",
            450.0,
            "NVIDIA H100/H200 SXM datasheets: 900 GB/s of NVLink per GPU, both directions",
        ),
        "nvlink-bridge-900": Link(
            "NVLink bridge",
            450.0,
            "NVIDIA H200 NVL datasheet: 900 GB/s of NVLink bridge per GPU, both directions",
        ),
        "nvlink-bridge-600": Link(
            "NVLink bridge",
            300.0,
            "NVIDIA H100 NVL datasheet: 600 GB/s of NVLink bridge, both directions",
        ),
        "nvlink3": Link("NVLink 3", 300.0, "NVIDIA A100 SXM datasheet: 600 GB/s of NVLink, both directions"),
        "nvlink2": Link("NVLink 2", 150.0, "NVIDIA V100 SXM2 datasheet: 300 GB/s of NVLink, both directions"),
    }
)
"""The links of :data:`DEVICE_TABLE`'s parts, by key."""


@dataclass(frozen=True, slots=True)
class CopyRoofs:
    """The roofs of one device's copies (GB/s copied, not counting a copy's reads and writes twice)."""

    device: Peak
    """Device to device: half the memory roof (each byte is read and written)."""
    host: Peak
    """Host to device and back: the host link, per direction."""
    peer: Peak
    """GPU to GPU: the peer link, per direction (assumed: the trace does not say the topology)."""


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    """One row of :data:`DEVICE_TABLE` (datasheet figures, plus measured ones where we have them)."""

    device: str
    pattern: str
    """Regex searched in the normalised ``deviceProperties`` name."""
    compute: Mapping[str, float]
    """Dense TFLOP/s by dtype: ``bf16 fp16 tf32 fp32`` (CUDA cores) ``fp64 fp8 int8``."""
    memory_gbs: float
    source: str
    basis: Basis = "datasheet"
    measured_compute: Mapping[str, float] = field(default_factory=dict)
    measured_memory_gbs: float | None = None
    measured_source: str = ""
    l2_mib: float | None = None
    """L2 cache size (MiB: the architecture whitepaper's, ``cudaDeviceProp.l2CacheSize``)."""
    measured_l2_gbs: float | None = None
    """L2 bandwidth (GB/s) where measured: vendors publish none. ``benchmarks/measure_l2.py
    --triton`` reads an L2-resident buffer over and over in one kernel (back-to-back copies of a
    few MiB measure each kernel's launch and tail instead: 1.2–3.9 TB/s on the H200, below its
    DRAM)."""
    host_link: str = "pcie4"
    """Key of :data:`LINKS`: how the device reaches host memory."""
    peer_link: str | None = None
    """Key of :data:`LINKS`: how the device reaches another GPU (None: PCIe peer-to-peer, its host
    link)."""


@dataclass(frozen=True, slots=True)
class DevicePeaks:
    """The peaks chosen for one device."""

    device: str
    """The table's name for the device."""
    query: str
    """The ``deviceProperties`` name that was looked up."""
    compute: Mapping[str, Peak] = field(hash=False)
    memory: Peak
    l2_bytes: int | None = None
    """L2 cache size in bytes (None: not in the table)."""
    l2: Peak | None = None
    """The L2 bandwidth roof for data that fits in L2 (None: not measured for this device)."""
    copy_roofs: CopyRoofs | None = None
    """The roofs of its copies by kind (device, host link, peer link)."""

    def compute_peak(self, dtype: str | None) -> Peak | None:
        """The compute roof for ``dtype`` (``bf16``, ``fp16``, ``tf32``, ``fp32``, ``fp8``, …)."""
        if dtype is None:
            return None
        key = DTYPE_ALIASES.get(dtype.lower(), dtype.lower())
        return self.compute.get(key)

    @property
    def ridge(self) -> Mapping[str, float]:
        """FLOP per byte where each compute roof meets the memory roof."""
        return {k: p.value * 1e3 / self.memory.value for k, p in self.compute.items()}


DTYPE_ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "f32": "fp32",
    "float64": "fp64",
    "double": "fp64",
    "f64": "fp64",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "float8": "fp8",
    "i8": "int8",
}

_H100_SXM = {
    "bf16": 989.4,
    "fp16": 989.4,
    "tf32": 494.7,
    "fp32": 66.9,
    "fp64": 66.9,
    "fp8": 1978.9,
    "int8": 1978.9,
}
_HOPPER_NVL = {"bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 60.0, "fp64": 60.0, "fp8": 1670.5}
_A100 = {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5, "fp64": 19.5, "int8": 624.0}
_DENSE = "dense: half the datasheet's with-sparsity figure"

_H200_MEASURED_SOURCE = (
    "measured on this project's H200 machines (torch 2.11, CUDA 13.0, Nov 2026): 8192×8192×8192 "
    "torch.matmul on random data, mean of 10 after 3 warm-ups: bf16 793 and 796 TFLOP/s (earlier "
    "sessions: 788, and 769–798 on another machine), fp16 763, tf32 405, fp32 without TF32 50.6, fp8 "
    "torch._scaled_mm e4m3 → bf16 1444; a 2 GiB device-to-device copy moved 4.26 TB/s counting bytes "
    "read and written (earlier sessions: ~4.2 and ~4.3); L2: one Triton kernel reading a 4–24 MiB "
    "buffer over and over with volatile loads, 5.4–8.9 TB/s, median 8.18 TB/s (the same kernel on 2 GiB: "
    "4.29 TB/s; benchmarks/measure_l2.py --triton, Dec 2026)"
)

DEVICE_TABLE: tuple[DeviceSpec, ...] = (
    DeviceSpec(
        "NVIDIA H200 NVL",
        r"\bh200\b.*\bnvl\b",
        _HOPPER_NVL,
        4800.0,
        f"NVIDIA H200 Tensor Core GPU datasheet, H200 NVL column ({_DENSE})",
        l2_mib=50,
        host_link="pcie5",
        peer_link="nvlink-bridge-900",
    ),
    DeviceSpec(
        "NVIDIA H200 SXM",
        r"\bh200\b",
        _H100_SXM,
        4800.0,
        f"NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column ({_DENSE}); "
        "the arithmetic rates are the H100 SXM's",
        measured_compute={"bf16": 790.0, "fp16": 763.0, "tf32": 405.0, "fp32": 50.6, "fp8": 1444.0},
        measured_memory_gbs=4260.0,
        measured_source=_H200_MEASURED_SOURCE,
        l2_mib=60,  # cudaDeviceProp.l2CacheSize on this project's H200 (torch 2.11): 62,914,560 B
        measured_l2_gbs=8175.0,
        host_link="pcie5",
        peer_link="nvlink4",
    ),
    DeviceSpec(
        "NVIDIA GH200 (144 GB HBM3e)",
        r"\bgh200\b.*(?:\b144\s*g|hbm3e)",
        _H100_SXM,
        4900.0,
        f"NVIDIA GH200 Grace Hopper Superchip datasheet, HBM3e version ({_DENSE})",
        host_link="c2c",
        peer_link="nvlink4",
    ),
    DeviceSpec(
        "NVIDIA GH200 (96 GB HBM3)",
        r"\bgh200\b",
        _H100_SXM,
        4000.0,
        f"NVIDIA GH200 Grace Hopper Superchip datasheet, 96 GB HBM3 version ({_DENSE})",
        host_link="c2c",
        peer_link="nvlink4",
    ),
    DeviceSpec(
        "NVIDIA H100 NVL",
        r"\bh100\b.*\bnvl\b",
        _HOPPER_NVL,
        3900.0,
        f"NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column ({_DENSE})",
        l2_mib=50,
        host_link="pcie5",
        peer_link="nvlink-bridge-600",
    ),
    DeviceSpec(
        "NVIDIA H100 PCIe",
        r"\bh100\b.*\bpcie\b",
        {
            "bf16": 756.5,
            "fp16": 756.5,
            "tf32": 378.0,
            "fp32": 51.0,
            "fp64": 51.0,
            "fp8": 1513.0,
            "int8": 1513.0,
        },
        2000.0,
        f"NVIDIA H100 Tensor Core GPU datasheet, H100 PCIe column ({_DENSE})",
        l2_mib=50,
        host_link="pcie5",
    ),
    DeviceSpec(
        "NVIDIA H100 SXM",
        r"\bh100\b",
        _H100_SXM,
        3350.0,
        f"NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column ({_DENSE})",
        l2_mib=50,
        host_link="pcie5",
        peer_link="nvlink4",
    ),
    DeviceSpec(
        "NVIDIA A100 80GB PCIe",
        r"\ba100\b.*(?:\b80\s*gb\b.*\bpcie\b|\bpcie\b.*\b80\s*gb\b)",
        _A100,
        1935.0,
        f"NVIDIA A100 Tensor Core GPU datasheet, A100 80GB PCIe column ({_DENSE})",
        l2_mib=40,
    ),
    DeviceSpec(
        "NVIDIA A100 40GB PCIe",
        r"\ba100\b.*\bpcie\b",
        _A100,
        1555.0,
        f"NVIDIA A100 Tensor Core GPU datasheet, A100 40GB PCIe column ({_DENSE})",
        l2_mib=40,
    ),
    DeviceSpec(
        "NVIDIA A100 80GB SXM",
        r"\ba100\b.*\b80\s*gb\b",
        _A100,
        2039.0,
        f"NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM column ({_DENSE})",
        l2_mib=40,
        peer_link="nvlink3",
    ),
    DeviceSpec(
        "NVIDIA A100 40GB SXM",
        r"\ba100\b",
        _A100,
        1555.0,
        f"NVIDIA A100 Tensor Core GPU datasheet, A100 40GB SXM column ({_DENSE})",
        l2_mib=40,
        peer_link="nvlink3",
    ),
    DeviceSpec(
        "NVIDIA L40S",
        r"\bl40s\b",
        {"bf16": 362.05, "fp16": 362.05, "tf32": 183.0, "fp32": 91.6, "fp8": 733.0, "int8": 733.0},
        864.0,
        f"NVIDIA L40S datasheet ({_DENSE})",
        l2_mib=96,
    ),
    DeviceSpec(
        "NVIDIA L40",
        r"\bl40\b",
        {"bf16": 181.05, "fp16": 181.05, "tf32": 90.5, "fp32": 90.5, "fp8": 362.0, "int8": 362.0},
        864.0,
        f"NVIDIA L40 datasheet ({_DENSE})",
        l2_mib=96,
    ),
    DeviceSpec(
        "NVIDIA L4",
        r"\bl4\b",
        {"bf16": 121.0, "fp16": 121.0, "tf32": 60.0, "fp32": 30.3, "fp8": 242.5, "int8": 242.5},
        300.0,
        f"NVIDIA L4 Tensor Core GPU datasheet ({_DENSE})",
        l2_mib=48,
    ),
    DeviceSpec(
        "NVIDIA A10G",
        r"\ba10g\b",
        {"bf16": 70.0, "fp16": 70.0, "tf32": 35.0, "fp32": 35.0},
        600.0,
        "reported, not a vendor datasheet: the A10G is an AWS-only part (EC2 G5); figures as published "
        "in public A10-vs-A10G comparisons (e.g. Baseten's), memory as the A10's",
        basis="reported",
        l2_mib=6,
    ),
    DeviceSpec(
        "NVIDIA A10",
        r"\ba10\b",
        {"bf16": 125.0, "fp16": 125.0, "tf32": 62.5, "fp32": 31.2, "int8": 250.0},
        600.0,
        f"NVIDIA A10 Tensor Core GPU datasheet ({_DENSE})",
        l2_mib=6,
    ),
    DeviceSpec(
        "NVIDIA GeForce RTX 4090",
        r"\brtx 4090\b",
        {"bf16": 165.2, "fp16": 165.2, "tf32": 82.6, "fp32": 82.6, "fp8": 330.3},
        1008.0,
        "NVIDIA Ada Lovelace GPU architecture whitepaper, GeForce RTX 4090 column (tensor rates with FP32 "
        "accumulate, dense)",
        l2_mib=72,
    ),
    DeviceSpec(
        "NVIDIA GeForce RTX 3090",
        r"\brtx 3090\b(?! ti)",
        {"bf16": 71.0, "fp16": 71.0, "tf32": 35.6, "fp32": 35.6},
        936.0,
        "NVIDIA Ampere GA102 GPU architecture whitepaper, GeForce RTX 3090 column (tensor rates with FP32 "
        "accumulate, dense)",
        l2_mib=6,
    ),
    DeviceSpec(
        "NVIDIA V100 PCIe",
        r"\bv100\b.*\bpcie\b",
        {"fp16": 112.0, "fp32": 14.0, "fp64": 7.0},
        900.0,
        "NVIDIA Tesla V100 datasheet, PCIe column (no bf16 or tf32 on Volta)",
        l2_mib=6,
        host_link="pcie3",
    ),
    DeviceSpec(
        "NVIDIA V100 SXM2",
        r"\bv100\b",
        {"fp16": 125.0, "fp32": 15.7, "fp64": 7.8},
        900.0,
        "NVIDIA Tesla V100 datasheet, SXM2 column (no bf16 or tf32 on Volta)",
        l2_mib=6,
        host_link="pcie3",
        peer_link="nvlink2",
    ),
    DeviceSpec(
        "NVIDIA T4",
        r"\bt4\b",
        {"fp16": 65.0, "fp32": 8.1, "int8": 130.0},
        320.0,
        "NVIDIA T4 Tensor Core GPU datasheet (no bf16 or tf32 on Turing)",
        l2_mib=4,
        host_link="pcie3",
    ),
)
"""Most specific first; :func:`peaks_for` takes the first whose pattern matches."""

_PATTERNS = tuple((re.compile(spec.pattern), spec) for spec in DEVICE_TABLE)


def _normalise(name: str) -> str:
    return " ".join(re.sub(r"[-_/,()]+", " ", name.lower()).split())


def _spec_for(device_name: str) -> DeviceSpec | None:
    text = _normalise(device_name)
    return next((spec for regex, spec in _PATTERNS if regex.search(text)), None)


def peaks_for(
    device_name: str | None, *, prefer: Literal["measured", "datasheet"] = "measured"
) -> DevicePeaks | None:
    """The peaks for a ``deviceProperties`` name, or ``None`` for a device not in the table.

    With ``prefer="measured"`` (the default), each dtype's compute roof and the memory roof are the
    measured figures where this project has them, the datasheet's otherwise; ``Peak.basis`` says which.
    """
    if not device_name or not isinstance(device_name, str):
        return None
    spec = _spec_for(device_name)
    if spec is None:
        return None
    short = spec.device.removeprefix("NVIDIA ")
    compute: dict[str, Peak] = {}
    for dtype, value in spec.compute.items():
        measured = spec.measured_compute.get(dtype) if prefer == "measured" else None
        if measured is not None:
            compute[dtype] = Peak(
                measured, "TFLOP/s", "measured", f"measured {dtype} GEMM on {short}", spec.measured_source
            )
        else:
            compute[dtype] = Peak(
                value,
                "TFLOP/s",
                spec.basis,
                f"{short} {'datasheet' if spec.basis == 'datasheet' else 'reported'} {dtype}",
                spec.source,
            )
    if prefer == "measured" and spec.measured_memory_gbs is not None:
        memory = Peak(
            spec.measured_memory_gbs,
            "GB/s",
            "measured",
            f"measured device copy on {short}",
            spec.measured_source,
        )
    else:
        memory = Peak(
            spec.memory_gbs,
            "GB/s",
            spec.basis,
            f"{short} {'datasheet' if spec.basis == 'datasheet' else 'reported'} memory bandwidth",
            spec.source,
        )
    l2 = None
    if prefer == "measured" and spec.measured_l2_gbs is not None:
        l2 = Peak(
            spec.measured_l2_gbs,
            "GB/s",
            "measured",
            f"measured L2-resident read on {short}",
            spec.measured_source,
        )
    return DevicePeaks(
        device=spec.device,
        query=device_name,
        compute=MappingProxyType(compute),
        memory=memory,
        l2_bytes=None if spec.l2_mib is None else int(spec.l2_mib * 2**20),
        l2=l2,
        copy_roofs=_copy_roofs(spec, short, memory),
    )


def _copy_roofs(spec: DeviceSpec, short: str, memory: Peak) -> CopyRoofs:
    """A device's copy roofs (see the module's docstring)."""
    device = Peak(
        memory.value / 2,
        "GB/s",
        memory.basis,
        f"{memory.label}: a copy reads and writes each byte, {byte_rate(memory.value)} of traffic",
        memory.source,
    )
    host = LINKS[spec.host_link]
    peer = LINKS[spec.peer_link] if spec.peer_link is not None else None
    peer_label = (
        f"{peer.name} of {short}" if peer is not None else f"{host.name} peer-to-peer of {short}"
    ) + ", per direction; assumed: the trace does not say how its GPUs connect"
    return CopyRoofs(
        device=device,
        host=Peak(
            host.gbs, "GB/s", "datasheet", f"{host.name} host link of {short}, per direction", host.source
        ),
        peer=Peak((peer or host).gbs, "GB/s", "datasheet", peer_label, (peer or host).source),
    )


# ---- what a deviceProperties entry says of its vendor and architecture ----------------------------------

_AMD_ARCHS = (
    (r"\bmi35[05]x?\b", "gfx950"),  # MI350X, MI355X
    (r"\bmi3[0-4][0-9][a-z]*\b", "gfx942"),  # MI300X, MI300A, MI308X, MI325X
    (r"\bmi2[15]0x?\b", "gfx90a"),  # MI210, MI250, MI250X
    (r"\bmi100\b", "gfx908"),
    (r"\bmi(?:50|60)\b", "gfx906"),
)
"""AMD Instinct parts by name (first match wins): HIP reports ``major.minor`` 9.4 for gfx942 and
9.0 for gfx90a and gfx908 alike, so the name tells them apart."""
_ROCM_KEYS = ("maxSharedMemoryPerMultiProcessor", "gcnArchName")
"""Keys only ROCm builds of Kineto write in ``deviceProperties`` (kineto #927; ``gcnArchName`` where
a build adds it)."""


def device_vendor(props: Mapping[str, object]) -> Literal["nvidia", "amd"] | None:
    """``amd`` for a ROCm device (its name, or a key only ROCm's ``deviceProperties`` have),
    ``nvidia`` for a CUDA one, None when nothing says."""
    name = str(props.get("name") or "").lower()
    if any(key in props for key in _ROCM_KEYS) or re.search(r"\b(?:amd|radeon|instinct)\b", name):
        return "amd"
    if "nvidia" in name or any(key in props for key in ("regsPerMultiprocessor", "sharedMemPerBlockOptin")):
        return "nvidia"
    return "nvidia" if props.get("computeMajor") is not None else None


def device_arch(props: Mapping[str, object]) -> str | None:
    """The architecture a ``deviceProperties`` entry names: ``sm90`` on NVIDIA (compute capability
    major and minor), ``gfx942`` on AMD (``gcnArchName`` where given, else the Instinct part's
    name, else ``AMD 9.4``: HIP's major.minor does not tell gfx90a from gfx908); None when neither
    is said."""
    major, minor = props.get("computeMajor"), props.get("computeMinor", 0)
    if device_vendor(props) == "amd":
        gcn = props.get("gcnArchName")
        if isinstance(gcn, str) and gcn.strip():
            return gcn.split(":")[0].strip()
        name = _normalise(str(props.get("name") or ""))
        found = next((arch for pattern, arch in _AMD_ARCHS if re.search(pattern, name)), None)
        if found is not None:
            return found
        return None if major is None else f"AMD {major}.{minor}"
    return None if major is None else f"sm{major}{minor}"
