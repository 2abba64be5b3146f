"""Expectations on memory: ``peak_allocated_max = "900 MiB"`` on a device or in every step, sizes
read by the one parser (:func:`tracetui.formatting.parse_size`), and the errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.insight import memory_traces as mt
from tracetui.compare.check import check_trace
from tracetui.compare.expectations import Check, parse_expectations
from tracetui.errors import TraceError
from tracetui.formatting import parse_size
from tracetui.trace import load

FIXTURES = Path(__file__).parent.parent / "fixtures"
PEAK = 104_425_472  # the fixture's peak on cuda:0 (tests/insight/test_memory.py replays it)


@pytest.fixture(scope="module")
def trace():  # type: ignore[no-untyped-def]
    return load(FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz")


def test_sizes_are_written_with_a_unit_or_as_bytes() -> None:
    (device,) = parse_expectations('[[expect]]\nmemory = "cuda:0"\npeak_allocated_max = "900 MiB"\n')
    assert device.label == "memory on cuda:0"
    assert device.checks == (Check("peak_allocated_max", "peak_allocated", "<=", 900 * 2**20, 3, "900 MiB"),)
    assert device.checks[0].text == 'peak_allocated_max = "900 MiB"'
    (every,) = parse_expectations('[[expect]]\nmemory = "*"\npeak_reserved_max = 4096\n')
    assert every.label == "memory on every device" and every.checks[0].text == "peak_reserved_max = 4096"


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("900 MiB", 943_718_400),
        ("1.5GiB", 3 * 2**29),
        ("512 B", 512),
        ("4096", 4096),
        ("2 kb", 2000),
        (".5 mib", 2**19),
    ],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["-1 MiB", "MiB", "9 XB", "1e3", "", "1,000", "nan"])
def test_parse_size_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            'memory = "cuda:0"\npeak_allocated_max = "lots"',
            "line 3: 'peak_allocated_max': not a size: 'lots'",
        ),
        ('memory = "cuda:0"\npeak_allocated_max = -5', "line 3: 'peak_allocated_max' must be a size"),
        ('memory = "cuda:0"\npeak_allocated_max = 1.5', "line 3: 'peak_allocated_max' must be a size"),
        ("memory = 0\npeak_allocated_max = 1", "line 2: 'memory' must be a device such as"),
        ('memory = "cuda:0"\nmax_peak_allocated = 1', "line 3: unknown key 'max_peak_allocated'"),
        ('memory = "cuda:0"\nmax_gpu_us = 1', "line 3: 'max_gpu_us' does not apply to memory expectations"),
        ('op = "aten::mm"\npeak_allocated_max = 1', "'peak_allocated_max' does not apply to op expectations"),
        ('step = "*"\npeak_reserved_max = 1', "'peak_reserved_max' does not apply to step expectations"),
        ('memory = "cuda:0"', "[[expect]] #1 (memory) has nothing to check: add e.g. peak_allocated_max"),
    ],
)
def test_bad_memory_expectations_name_their_line(body: str, problem: str) -> None:
    with pytest.raises(TraceError) as error:
        parse_expectations(f"[[expect]]\n{body}\n")
    assert problem in str(error.value)


def test_a_device_peak_passes_and_fails_at_the_byte(trace) -> None:  # type: ignore[no-untyped-def]
    results = check_trace(
        trace,
        parse_expectations(
            f'[[expect]]\nmemory = "cuda:0"\npeak_allocated_max = {PEAK}\n'
            f'[[expect]]\nmemory = "*"\npeak_allocated_max = {PEAK - 1}\n'
            '[[expect]]\nmemory = "cuda:0"\npeak_reserved_max = "102 MiB"\n'
        ),
    )
    assert [r.passed for r in results] == [True, False, True]
    assert [r.value for r in results] == [PEAK, PEAK, 102 * 2**20]
    assert results[0].actual == "peak 99.6 MiB allocated on cuda:0 (ProfilerStep#2, aten::mm)"
    assert results[0].event_id is not None and trace.event(results[0].event_id)["name"] == "aten::mm"


def test_step_peaks_hold_in_every_step(trace) -> None:  # type: ignore[no-untyped-def]
    passed, failed, kernels, one = check_trace(
        trace,
        parse_expectations(
            f'[[expect]]\nstep = "*"\npeak_allocated_max = {PEAK}\n'
            f'[[expect]]\nstep = "*"\npeak_allocated_max = {PEAK - 1}\nkernels_per_call = 23\n'
            '[[expect]]\nstep = 3\npeak_allocated_max = "1 GiB"\n'
        ),
    )
    assert kernels.passed and kernels.actual == "23 in each of 2 steps"
    assert passed.passed and passed.actual == "peak 99.6 MiB (the highest of 2 steps)"
    assert not failed.passed and trace.event(failed.event_id)["name"] == "ProfilerStep#2"
    assert one.passed and one.actual == "peak 99.6 MiB in the one step"


def test_missing_memory_fails_with_the_reason(tmp_path: Path, trace) -> None:  # type: ignore[no-untyped-def]
    text = '[[expect]]\nmemory = "cuda:1"\npeak_allocated_max = "1 GiB"\n'
    (other_device,) = check_trace(trace, parse_expectations(text))
    assert not other_device.passed and other_device.actual == "no memory events on cuda:1 (devices: cuda:0)"
    (none,) = check_trace(load(FIXTURES / "mlp_eager.json.gz"), parse_expectations(text))
    assert not none.passed and none.value is None and "profile_memory=True" in none.actual
    allocator = load(mt.allocator_thread_trace(tmp_path / "allocator.json"))
    (no_op,) = check_trace(allocator, parse_expectations(text.replace("cuda:1", "cuda:0")))
    assert no_op.passed and no_op.actual == "peak 8.8 KiB allocated on cuda:0 (ProfilerStep#1)"


def test_a_failed_peak_never_reads_as_its_limit(tmp_path: Path, trace) -> None:  # type: ignore[no-untyped-def]
    """Issue 37 item 4: ``peak 4.0 GiB allocated on cuda:0 FAIL`` against ``"4 GiB"`` (the peak
    was 4,345,501,184 B = 4.05 GiB): the figure has the digits it takes to differ from its limit."""
    a = mt.Allocator(start=0, reserved=5 << 30)
    big = mt.write(
        tmp_path / "big.json",
        [mt.step(1, 0, 100), mt.op("aten::mm", 1, 10), a.alloc(2, 0x1000, 4_345_501_184), a.free(50, 0x1000)],
    )
    over, under, far = check_trace(
        load(big),
        parse_expectations(
            '[[expect]]\nmemory = "cuda:0"\npeak_allocated_max = "4 GiB"\n'
            '[[expect]]\nmemory = "cuda:0"\npeak_allocated_max = "4.1 GiB"\n'
            '[[expect]]\nstep = 1\npeak_allocated_max = "4 GiB"\n'
        ),
    )
    assert not over.passed and over.actual == "peak 4.05 GiB allocated on cuda:0 (ProfilerStep#1, aten::mm)"
    assert under.passed and under.actual == "peak 4.0 GiB allocated on cuda:0 (ProfilerStep#1, aten::mm)"
    assert not far.passed and far.actual == "peak 4.05 GiB in the one step"
    # one byte over: the exact bytes (the fixture's peak is 104,425,472 B = 99.6 MiB)
    (byte,) = check_trace(
        trace, parse_expectations(f'[[expect]]\nmemory = "*"\npeak_allocated_max = {PEAK - 1}\n')
    )
    assert (
        not byte.passed and byte.actual == "peak 104,425,472 B allocated on cuda:0 (ProfilerStep#2, aten::mm)"
    )
