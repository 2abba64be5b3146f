"""Evaluating expectations: units (every call, each step, the trace), counts, times, globs, misses."""

from __future__ import annotations

import pytest

from tests.compare.conftest import fixture
from tests.compare.synthetic import uneven_calls_trace
from tracetui.compare.check import Result, check_trace
from tracetui.compare.expectations import parse_expectations
from tracetui.trace import Trace, load


def run(trace: Trace, text: str) -> list[Result]:
    return check_trace(trace, parse_expectations(text))


def one(trace: Trace, text: str) -> Result:
    (result,) = run(trace, text)
    return result


@pytest.fixture(scope="module")
def uneven(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    """fwd call 1 launches k_a (in inner, in outer) and k_b (in outer); call 2 launches k_b."""
    return load(uneven_calls_trace(tmp_path_factory.mktemp("uneven")))


def test_counts_hold_in_every_call(uneven: Trace) -> None:
    exact = one(uneven, '[[expect]]\nannotation = "fwd"\nkernels_per_call = 2\n')
    assert not exact.passed and exact.actual == "1–2 over 2 calls"
    assert exact.value == 1 and exact.event_id == 10  # the second call broke it
    low = one(uneven, '[[expect]]\nannotation = "fwd"\nmin_kernels_per_call = 1\n')
    assert low.passed and low.value == 1 and low.event_id == 1
    high = one(uneven, '[[expect]]\nannotation = "fwd"\nmax_kernels_per_call = 1\n')
    assert not high.passed and high.value == 2 and high.event_id == 1
    calls = one(uneven, '[[expect]]\nannotation = "fwd"\ncalls = 2\n')
    assert calls.passed and calls.actual == "2 calls"


def test_times_are_the_mean_per_call(uneven: Trace) -> None:
    gpu = one(uneven, '[[expect]]\nannotation = "fwd"\nmax_gpu_us = 25\n')
    assert gpu.passed and gpu.value == pytest.approx(25.0) and gpu.actual == "25.0 µs per call (mean of 2)"
    cpu = one(uneven, '[[expect]]\nannotation = "fwd"\nmin_cpu_us = 90\n')
    assert not cpu.passed and cpu.value == pytest.approx(89.5)


def test_kernel_globs_per_annotation_step_and_trace(uneven: Trace) -> None:
    per_call = one(uneven, '[[expect]]\nkernel = "k_b"\nper = "fwd"\ncount = 1\n')
    assert per_call.passed and per_call.actual == "1 in each of 2 calls"
    per_step = one(uneven, '[[expect]]\nkernel = "k_*"\nper = "step"\ncount = 1\n')
    assert not per_step.passed and per_step.actual == "1–2 over 2 steps" and per_step.event_id == 0
    total = one(uneven, '[[expect]]\nkernel = "k_?"\ncount = 3\n')
    assert total.passed and total.actual == "3 in the trace" and total.event_id is None
    absent = one(uneven, '[[expect]]\nkernel = "triton_*"\ncount = 0\n')
    assert absent.passed
    low, high = run(uneven, '[[expect]]\nkernel = "k_b"\nper = "fwd"\nmin_gpu_us = 20\nmax_gpu_us = 20\n')
    assert low.passed and high.passed and high.value == pytest.approx(20.0)


def test_op_checks(uneven: Trace) -> None:
    results = run(
        uneven,
        '[[expect]]\nop = "inner"\nper = "fwd"\ncount = 1\nlaunches_kernels = true\n'
        '[[expect]]\nop = "outer"\nlaunches_kernels = true\n'
        '[[expect]]\nop = "aten::t"\nlaunches_kernels = false\n'
        '[[expect]]\nop = "outer"\nlaunches_kernels = false\n',
    )
    count, inner_launches, outer_launches, t_idle, outer_idle = results
    assert not count.passed and count.actual == "0–1 over 2 calls" and count.event_id == 10
    assert inner_launches.passed and inner_launches.actual == "all 1 op calls launched GPU work"
    assert outer_launches.passed and outer_launches.value is True
    assert t_idle.passed and t_idle.actual == "none of 1 op calls launched GPU work"
    assert not outer_idle.passed and outer_idle.value is True and outer_idle.event_id == 2


def test_nested_matching_ops_count_their_time_once(uneven: Trace) -> None:
    both = '[[expect]]\nop = "*er"\nper = "fwd"\nmax_gpu_us = 25\nmax_cpu_us = 58\ncount = 1\n'
    gpu, cpu, count = run(uneven, both)
    assert gpu.value == pytest.approx(25.0)  # k_a + k_b, then k_b: not k_a twice
    assert cpu.value == pytest.approx(58.0)  # outer only, not outer + inner
    assert gpu.passed and cpu.passed
    assert not count.passed and count.actual == "1–2 over 2 calls"  # calls are counted, nested or not


def test_steps_by_number_and_all(uneven: Trace) -> None:
    every, second, missing = run(
        uneven,
        '[[expect]]\nstep = "*"\nmax_kernels_per_call = 2\n'
        "[[expect]]\nstep = 2\nkernels_per_call = 1\n"
        "[[expect]]\nstep = 7\nkernels_per_call = 1\n",
    )
    assert every.passed and every.actual == "1–2 over 2 steps"
    assert second.passed and second.actual == "1 in the one step" and second.event_id == 9
    assert not missing.passed and missing.actual == "no ProfilerStep#7 in the trace (steps: 1, 2)"
    assert missing.value is None


def test_missing_subjects_fail_except_absent_calls(uneven: Trace) -> None:
    missing, calls, per = run(
        uneven,
        '[[expect]]\nannotation = "bwd"\nkernels_per_call = 0\n'
        '[[expect]]\nannotation = "bwd"\ncalls = 0\n'
        '[[expect]]\nkernel = "k_b"\nper = "bwd"\ncount = 1\n',
    )
    assert not missing.passed and missing.actual == "no annotation 'bwd' in the trace"
    assert calls.passed and calls.actual == "0 calls"
    assert not per.passed and per.actual == "per: no annotation 'bwd' in the trace"
    op = one(uneven, '[[expect]]\nop = "aten::nope"\nlaunches_kernels = false\n')
    assert not op.passed and op.actual == "no op matches 'aten::nope' in the trace"


def test_traces_without_steps() -> None:
    cpu_only = fixture("cpu_only")
    step = one(cpu_only, '[[expect]]\nstep = "*"\nkernels_per_call = 0\n')
    assert not step.passed and step.actual == "no profiler steps in the trace"
    ops = one(cpu_only, '[[expect]]\nop = "aten::*"\nlaunches_kernels = false\n')
    assert ops.passed


def test_mlp_eager_blog_guesses() -> None:
    results = run(
        fixture("mlp_eager"),
        '[[expect]]\nannotation = "mlp_fwd"\nkernels_per_call = 5\nmemsets_per_call = 2\nmax_gpu_us = 250\n'
        '[[expect]]\nop = "aten::linear"\nper = "mlp_fwd"\ncount = 3\n'
        '[[expect]]\nop = "aten::*"\nper = "mlp_fwd"\nmax_gpu_us = 250\n'
        '[[expect]]\nkernel = "triton_poi_fused_*gelu_mul*"\nper = "mlp_fwd"\ncount = 1\n',
    )
    assert [r.passed for r in results] == [True, True, True, True, True, False]
    annotation_gpu, ops_gpu = results[2].value, results[4].value
    assert ops_gpu == pytest.approx(annotation_gpu)  # every GPU event of mlp_fwd comes from an aten op
    assert results[5].actual == "0 in each of 3 calls" and results[5].event_id == 1


def test_a_failed_time_never_reads_as_its_limit() -> None:
    """A total a hair over its bound reads with the digits that show it over (issue 37 item 4):
    a kernel whose total rounds down at one decimal, against a bound between the two."""
    import polars as pl

    from tracetui import formatting as fmt

    trace = fixture("mlp_eager")
    totals = trace.gpu.group_by("name").agg(pl.col("dur").sum().alias("total"))
    name, total = next(
        (n, t)
        for n, t in totals.sort("name").iter_rows()
        if not any(c in n for c in "[]*?") and t - float(fmt.duration(t).split(" ")[0]) > 0.002
    )
    limit = total - 0.001  # between the total and its one-decimal text
    result = one(trace, f'[[expect]]\nkernel = "{name}"\nmax_gpu_us = {limit}\n')
    assert not result.passed
    shown = float(result.actual.split(" ")[0].replace(",", ""))
    assert shown > limit, (result.actual, total, limit)
    assert fmt.duration(total) != result.actual.split(" in ")[0]  # the plain text read under it


def test_a_failed_share_never_reads_as_within_its_limit() -> None:
    """A share over its bound by a fraction of a percent reads with the decimal that shows it over:
    the eager fixture's steps idle 33–55.27% of their GPU time."""
    trace = fixture("mlp_eager")
    over = one(trace, '[[expect]]\nstep = "*"\nmax_gpu_idle_pct = 55.2\n')
    assert not over.passed and over.actual == "33%–55.3% over 3 steps"  # "55%" would read within it
    within = one(trace, '[[expect]]\nstep = "*"\nmax_gpu_idle_pct = 55.3\n')
    assert within.passed and within.actual == "33%–55.27% over 3 steps"  # at one decimal it would tie
