"""Copies read against the roof of what they cross: device memory, the host link, the peer link
(issue 37 item 3: a host-to-device copy was judged against HBM, "0% of 4.26 TB/s")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

import tracetui
from tracetui.insight.devices import LINKS, peaks_for
from tracetui.insight.kernels import kernel_insight, kernel_rooflines
from tracetui.insight.roofline import ABOVE_ROOF, LOW_FRACTION, SHORT_US, copy_kind, roofline

FIXTURES = Path(__file__).parents[1] / "fixtures"
COPIES = FIXTURES / "capture_copies_h100.json.gz"  # benchmarks/measure_copies.py --trace, an H100 SXM
H200 = "NVIDIA H200"
H100 = "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize(
    ("direction", "memory", "kind"),
    [
        ("HtoD", "Pinned -> Device", "host-pinned"),
        ("DtoH", "Device -> Pinned", "host-pinned"),
        ("HtoD", "Pageable -> Device", "host-pageable"),
        ("DtoH", "Device -> Pageable", "host-pageable"),
        ("HtoD", "Managed -> Device", "host"),
        ("HtoA", "Pinned -> Array", "host-pinned"),
        ("DtoD", "Device -> Device", "device"),
        ("AtoD", "Array -> Device", "device"),
        ("PtoP", "Device -> Device", "peer"),
        ("HtoH", "Pinned -> Pageable", None),
        ("1", "0x7f00 -> 0x7f10", None),  # a ROCm copy's kind number: no direction said
        (None, None, None),
    ],
)
def test_copy_kinds(direction: str | None, memory: str | None, kind: str | None) -> None:
    assert copy_kind(direction, memory) == kind


def test_a_pageable_host_copy_is_read_against_the_host_link_not_hbm() -> None:
    """The reproduction: ``Memcpy HtoD (Pageable -> Device)`` of the eager training trace (16 KiB
    in 1.54 µs) read "10.7 GB/s = 0% of 4.26 TB/s (measured device copy on H200 SXM)"."""
    trace = tracetui.load(FIXTURES / "mlp_train_eager_default.json.gz")
    copies = trace.gpu.filter(pl.col("cat") == "gpu_memcpy")
    rows = kernel_insight(trace, copies["id"]).select("short", "copy", "bound", "peak_gbs", "verdict")
    htod = rows.filter(pl.col("copy") == "host-pageable").row(0, named=True)
    assert htod["peak_gbs"] == 64.0 and htod["bound"] == "latency-bound"
    assert htod["verdict"].startswith(
        "latency-bound: only 16.0 KiB in 1.54 µs: a copy this small costs its fixed latency; "
        "10.7 GB/s = 17% of 64.0 GB/s (PCIe Gen5 x16 host link of H200 SXM, per direction); "
        "pageable host memory: the driver first copies it into a pinned staging buffer on the host"
    )
    for verdict in rows["verdict"]:
        assert "TB/s" not in verdict and "device copy" not in verdict  # never HBM's roof


def test_each_kind_of_copy_of_a_real_trace_against_its_roof() -> None:
    """The H100's copies, each rate by hand from the raw JSON (``bytes`` / ``dur``): pinned copies
    at 86–87 % of PCIe Gen5 x16 (64 GB/s a direction), pageable ones far below it, the device copy
    against half the memory roof (it reads and writes each byte)."""
    raw = json.loads(gzip.decompress(COPIES.read_bytes()))
    events = raw["traceEvents"]  # an event's id is its position here
    trace = tracetui.load(COPIES)
    rows = kernel_insight(trace, trace.gpu.filter(pl.col("cat") == "gpu_memcpy")["id"])
    read = {r["verdict"]: r for r in rows.iter_rows(named=True)}
    assert len(read) == 6
    expected = {
        "Memcpy HtoD (Pinned -> Device)": ("host-link-bound", 64.0, "55.4 GB/s = 87% of 64.0 GB/s"),
        "Memcpy DtoH (Device -> Pinned)": ("host-link-bound", 64.0, "55.1 GB/s = 86% of 64.0 GB/s"),
        "Memcpy HtoD (Pageable -> Device)": ("host-link-bound", 64.0, "8.28 GB/s = 13% of 64.0 GB/s"),
        "Memcpy DtoH (Device -> Pageable)": ("host-link-bound", 64.0, "16.6 GB/s = 26% of 64.0 GB/s"),
        "Memcpy DtoD (Device -> Device)": ("memory-bound", 1675.0, "1.49 TB/s = 89% of 1.68 TB/s"),
    }
    for row in read.values():
        event = events[row["id"]]
        name, by_hand = event["name"], event["args"]["bytes"] / event["dur"] / 1e3
        if event["args"]["bytes"] == 4:  # the .item() copy
            assert row["bound"] == "latency-bound"
            assert row["verdict"].startswith("latency-bound: only 4 B in 2.56 µs: a copy this small")
            continue
        bound, roof, rate = expected[name]
        assert (row["bound"], row["peak_gbs"]) == (bound, roof)
        assert row["gbs"] == pytest.approx(by_hand)
        assert row["roof_fraction"] == pytest.approx(by_hand / roof)
        assert row["tflops"] is None and row["peak_tflops"] is None  # a copy does no arithmetic
        assert rate in row["verdict"], row["verdict"]
        if bound == "host-link-bound":
            assert "(PCIe Gen5 x16 host link of H100 SXM, per direction)" in row["verdict"]
            memory = "pinned" if "Pinned" in name else "pageable"
            assert f"; {memory} host memory: " in row["verdict"]
        else:
            assert (
                "(H100 SXM datasheet memory bandwidth: a copy reads and writes each byte, 3.35 TB/s"
                in (row["verdict"])
            )


def test_the_summary_names_each_copy_s_roof() -> None:
    rooflines = kernel_rooflines(tracetui.load(COPIES))
    copies = rooflines.filter(pl.col("copy").is_not_null())
    assert set(copies["bound"]) == {"host-link-bound", "memory-bound"}  # the 4-byte copy is among DtoH's
    assert copies["tflops"].is_null().all()  # no "0.00 TFLOP/s" beside a copy
    from rich.console import Console

    from tracetui.insight.summary_data import summary_data
    from tracetui.report.summary import summary_renderable

    console = Console(width=120, record=True)
    console.print(summary_renderable(summary_data(tracetui.load(COPIES))))
    text = console.export_text()
    assert "memcpy HtoD (Pinned → Device)    1.21 ms        -   55.4  host-link 87%" in text, text


def test_links_of_known_parts() -> None:
    def host(name: str) -> tuple[float, str]:
        peaks = peaks_for(name)
        assert peaks is not None and peaks.copy_roofs is not None
        return peaks.copy_roofs.host.value, peaks.copy_roofs.host.label

    assert host(H200) == (64.0, "PCIe Gen5 x16 host link of H200 SXM, per direction")
    assert host("NVIDIA H100 PCIe")[0] == 64.0
    assert host("NVIDIA GH200 480GB") == (450.0, "NVLink-C2C host link of GH200 (96 GB HBM3), per direction")
    assert host("NVIDIA A100-SXM4-80GB") == (32.0, "PCIe Gen4 x16 host link of A100 80GB SXM, per direction")
    assert host("NVIDIA L4")[0] == 32.0
    assert host("Tesla V100-SXM2-32GB")[0] == 16.0
    assert host("Tesla T4")[0] == 16.0
    for link in LINKS.values():
        assert link.gbs > 0 and link.source


def test_peer_copies_read_against_nvlink_or_pcie_peer_to_peer_and_say_it_is_assumed() -> None:
    nvlink = roofline(None, 1e9, 4000.0, H100, copy="peer")  # 250 GB/s
    assert nvlink.bound == "peer-link-bound"
    assert nvlink.verdict == (
        "peer-link-bound: 250 GB/s = 56% of 450 GB/s (NVLink 4 of H100 SXM, per direction; "
        "assumed: the trace does not say how its GPUs connect)"
    )
    pcie = roofline(None, 1e9, 40_000.0, "NVIDIA H100 PCIe", copy="peer")  # 25 GB/s
    assert pcie.verdict.startswith(
        "peer-link-bound: 25.0 GB/s = 39% of 64.0 GB/s (PCIe Gen5 x16 peer-to-peer"
    )
    assert pcie.memory_peak is not None and pcie.memory_peak.value == 64.0 and pcie.compute_peak is None


def test_a_copy_is_latency_bound_only_when_short_and_far_below_its_roof() -> None:
    """Both sides of :data:`SHORT_US` and :data:`LOW_FRACTION` for a pinned host copy (64 GB/s roof)."""
    short_slow = roofline(
        None, 0.1 * LOW_FRACTION * 64e3 * (SHORT_US - 1), SHORT_US - 1, H200, copy="host-pinned"
    )
    assert short_slow.bound == "latency-bound"
    long_slow = roofline(
        None, 0.1 * LOW_FRACTION * 64e3 * (SHORT_US + 1), SHORT_US + 1, H200, copy="host-pinned"
    )
    assert long_slow.bound == "host-link-bound"
    short_fast = roofline(
        None, 2 * LOW_FRACTION * 64e3 * (SHORT_US - 1), SHORT_US - 1, H200, copy="host-pinned"
    )
    assert short_fast.bound == "host-link-bound"


def test_a_copy_faster_than_its_link_says_so_and_one_at_it_reads_at_the_roof() -> None:
    above = roofline(None, (ABOVE_ROOF + 0.01) * 64e3 * 100, 100.0, H200, copy="host-pinned")
    assert "; above the roof: the copy's own bytes and time beat it, so this machine's link" in above.verdict
    at = roofline(None, (ABOVE_ROOF - 0.01) * 64e3 * 100, 100.0, H200, copy="host-pinned")
    assert "; at the roof (within the 5 % a measured roof is good to)" in at.verdict
    assert "above the roof" not in at.verdict


def test_a_device_copy_that_fits_in_l2_says_so_and_a_host_copy_never_does() -> None:
    # 8 MiB copied in 2 µs: 4.19 TB/s copied, twice the H200's 2.13 TB/s copy roof; 16 MiB read and
    # written fits in its 60 MiB L2 (read against the copy roof: the L2 roof is a read's)
    small = roofline(None, 8 << 20, 2.0, H200, copy="device")
    assert small.bound == "memory-bound"
    assert "of 2.13 TB/s (measured device copy on H200 SXM" in small.verdict
    assert (
        "; above the DRAM roof: data likely L2-resident (16.0 MiB fits in the 60.0 MiB L2)" in small.verdict
    )
    host = roofline(None, 8 << 20, 20.0, H200, copy="host-pinned")  # 419 GB/s over PCIe: impossible
    assert "L2" not in host.verdict and "above the roof" in host.verdict


def test_a_copy_on_an_unknown_device_gives_its_rate_and_memory_kind_only() -> None:
    r = roofline(None, 64e6, 1000.0, "AMD Instinct MI300X", copy="host-pageable")
    assert (r.bound, r.fraction) == (None, None)
    assert r.verdict.startswith("64.0 GB/s; pageable host memory: ")


def test_the_details_pane_reads_a_copy_against_its_roof() -> None:
    from tracetui.app.widgets.details import describe
    from tracetui.views.insight import load_insight
    from tracetui.views.tree import TreeModel

    trace = tracetui.load(COPIES)
    pageable = int(trace.gpu.filter(pl.col("name") == "Memcpy HtoD (Pageable -> Device)")["id"][0])
    text = describe(trace, TreeModel(trace), pageable, load_insight(trace)).plain
    assert "Copy (its own bytes and time)" in text
    assert "copies             over the host link, pageable host memory (staged)" in text
    assert "roof               64.0 GB/s" in text and "of its roof        13%" in text
    assert "host-link-bound: 8.28 GB/s = 13% of 64.0 GB/s (PCIe Gen5 x16 host link of H100 SXM" in text
