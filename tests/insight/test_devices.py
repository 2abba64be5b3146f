"""Device peak table: lookup by deviceProperties name, measured-over-datasheet preference, sources."""

from __future__ import annotations

import pytest

from tracetui.insight.devices import DEVICE_TABLE, device_arch, device_vendor, peaks_for


@pytest.mark.parametrize(
    ("name", "device", "bf16", "memory"),
    [
        ("NVIDIA H200", "NVIDIA H200 SXM", 790.0, 4260.0),  # measured here
        ("NVIDIA H200 NVL", "NVIDIA H200 NVL", 835.5, 4800.0),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM", 989.4, 3350.0),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", 756.5, 2000.0),
        ("NVIDIA H100 NVL", "NVIDIA H100 NVL", 835.5, 3900.0),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM", 312.0, 2039.0),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB SXM", 312.0, 1555.0),
        ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 312.0, 1935.0),
        ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 40GB PCIe", 312.0, 1555.0),
        ("NVIDIA L4", "NVIDIA L4", 121.0, 300.0),
        ("NVIDIA L40S", "NVIDIA L40S", 362.05, 864.0),
        ("NVIDIA A10G", "NVIDIA A10G", 70.0, 600.0),
        ("NVIDIA A10", "NVIDIA A10", 125.0, 600.0),
        ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090", 165.2, 1008.0),
        ("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090", 71.0, 936.0),
        ("NVIDIA GH200 480GB", "NVIDIA GH200 (96 GB HBM3)", 989.4, 4000.0),
        ("nvidia h100 80gb hbm3", "NVIDIA H100 SXM", 989.4, 3350.0),  # case-insensitive
    ],
)
def test_lookup_by_device_properties_name(name: str, device: str, bf16: float, memory: float) -> None:
    peaks = peaks_for(name)
    assert peaks is not None
    assert peaks.device == device
    assert peaks.query == name
    bf16_peak = peaks.compute_peak("bf16")
    assert bf16_peak is not None
    assert bf16_peak.value == bf16
    assert bf16_peak.unit == "TFLOP/s"
    assert peaks.memory.value == memory
    assert peaks.memory.unit == "GB/s"


@pytest.mark.parametrize(
    "name", ["AMD Instinct MI300X", "NVIDIA GeForce RTX 3090 Ti", "Intel Data Center GPU Max", "", None]
)
def test_unknown_devices_have_no_peaks(name: str | None) -> None:
    assert peaks_for(name) is None


def test_h200_prefers_measured_and_says_so() -> None:
    peaks = peaks_for("NVIDIA H200")
    assert peaks is not None
    bf16, fp64 = peaks.compute_peak("bf16"), peaks.compute_peak("fp64")
    assert bf16 is not None and fp64 is not None
    assert (bf16.basis, bf16.label) == ("measured", "measured bf16 GEMM on H200 SXM")
    assert "8192×8192×8192" in bf16.source
    assert (fp64.basis, fp64.value) == ("datasheet", 66.9)  # not measured: the datasheet's
    assert (peaks.memory.basis, peaks.memory.label) == ("measured", "measured device copy on H200 SXM")
    assert "device-to-device copy" in peaks.memory.source
    for dtype, value in {"fp16": 763.0, "tf32": 405.0, "fp32": 50.6, "fp8": 1444.0}.items():
        peak = peaks.compute_peak(dtype)
        assert peak is not None and (peak.value, peak.basis) == (value, "measured")
    sheet = peaks_for("NVIDIA H200", prefer="datasheet")
    assert sheet is not None
    sheet_bf16 = sheet.compute_peak("bf16")
    assert sheet_bf16 is not None
    assert (sheet_bf16.value, sheet_bf16.basis) == (989.4, "datasheet")
    assert (sheet.memory.value, sheet.memory.basis) == (4800.0, "datasheet")
    assert "H200 Tensor Core GPU datasheet" in sheet.memory.source


def test_dtype_aliases_and_missing_dtypes() -> None:
    peaks = peaks_for("NVIDIA H100 80GB HBM3")
    assert peaks is not None
    assert peaks.compute_peak("bfloat16") == peaks.compute_peak("bf16")
    assert peaks.compute_peak("float32") == peaks.compute_peak("fp32")
    assert peaks.compute_peak(None) is None
    assert peaks.compute_peak("int4") is None
    v100 = peaks_for("Tesla V100-SXM2-32GB")
    assert v100 is not None
    assert v100.compute_peak("bf16") is None  # Volta has no bf16
    a10g = peaks_for("NVIDIA A10G")
    assert a10g is not None
    assert a10g.memory.basis == "reported"


def test_ridge_points() -> None:
    h100 = peaks_for("NVIDIA H100 80GB HBM3")
    h200 = peaks_for("NVIDIA H200", prefer="datasheet")
    assert h100 is not None and h200 is not None
    assert h100.ridge["bf16"] == pytest.approx(989.4e12 / 3350e9)  # ≈ 295 FLOP/B
    assert h200.ridge["bf16"] == pytest.approx(989.4e12 / 4800e9)  # ≈ 206 FLOP/B
    measured = peaks_for("NVIDIA H200")
    assert measured is not None
    assert measured.ridge["bf16"] == pytest.approx(790e12 / 4260e9)  # ≈ 185 FLOP/B


def test_every_row_is_sourced_and_dense() -> None:
    for spec in DEVICE_TABLE:
        assert spec.source
        assert spec.memory_gbs > 0
        assert all(v > 0 for v in spec.compute.values())
        if spec.measured_compute or spec.measured_memory_gbs:
            assert spec.measured_source
        # dense tensor rates: bf16 at most 16× the CUDA-core fp32 rate on every part listed
        if "bf16" in spec.compute and "fp32" in spec.compute:
            assert spec.compute["bf16"] <= 16 * spec.compute["fp32"]
    h100 = next(s for s in DEVICE_TABLE if s.device == "NVIDIA H100 SXM")
    assert h100.compute["bf16"] == pytest.approx(1978.9 / 2, abs=0.1)  # half the with-sparsity figure


ROCM_KEYS = {"maxSharedMemoryPerMultiProcessor": 65536}  # only ROCm's deviceProperties have it


@pytest.mark.parametrize(
    ("props", "vendor", "arch"),
    [
        ({"name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}, "nvidia", "sm90"),
        ({"name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0}, "nvidia", "sm80"),
        # issue 37: HIP reports 9.0 for an MI250X (gfx90a), which read "sm90"
        ({"name": "AMD Instinct MI250X", "computeMajor": 9, "computeMinor": 0, **ROCM_KEYS}, "amd", "gfx90a"),
        ({"name": "AMD Instinct MI300X", "computeMajor": 9, "computeMinor": 4}, "amd", "gfx942"),
        ({"name": "AMD Instinct MI325X", "computeMajor": 9, "computeMinor": 4}, "amd", "gfx942"),
        ({"name": "AMD Instinct MI355X", "computeMajor": 9, "computeMinor": 5}, "amd", "gfx950"),
        ({"name": "AMD Instinct MI100", "computeMajor": 9, "computeMinor": 0}, "amd", "gfx908"),
        (
            {"name": "", "computeMajor": 9, "computeMinor": 0, **ROCM_KEYS},
            "amd",
            "AMD 9.0",
        ),  # no name: no guess
        (
            {"name": "AMD Radeon RX 7900 XTX", "computeMajor": 11, "gcnArchName": "gfx1100:sramecc-:xnack-"},
            "amd",
            "gfx1100",
        ),
        ({"name": "some accelerator"}, None, None),
    ],
)
def test_vendor_and_architecture_from_device_properties(
    props: dict[str, object], vendor: str, arch: str
) -> None:
    assert (device_vendor(props), device_arch(props)) == (vendor, arch)
