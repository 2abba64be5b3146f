"""The expectations file parser: the issue's example, the key set, and every error with its line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.compare.conftest import EXPECT, REPO
from tracetui.compare.expectations import (
    CHECKS,
    KNOWN_KEYS,
    Check,
    load_expectations,
    parse_expectations,
)
from tracetui.compare.globs import glob_problem, matching
from tracetui.errors import TraceError

ISSUE_EXAMPLE = """\
[[expect]]
annotation = "mlp_fwd"
kernels_per_call = 5
[[expect]]
op = "aten::t"
launches_kernels = false
[[expect]]
kernel = "triton_poi_fused_*gelu_mul*"   # glob over kernel names
per = "mlp_fwd"
count = 1
[[expect]]
annotation = "mlp_fwd"
max_gpu_us = 250
"""


def test_the_issue_example_parses() -> None:
    first, second, third, fourth = parse_expectations(ISSUE_EXAMPLE)
    assert (first.index, first.line, first.subject, first.target) == (1, 1, "annotation", "mlp_fwd")
    assert first.checks == (Check("kernels_per_call", "kernels_per_call", "==", 5, 3),)
    assert (second.subject, second.target, second.checks[0].value) == ("op", "aten::t", False)
    assert (third.subject, third.per, third.checks[0].key, third.checks[0].line) == (
        "kernel",
        "mlp_fwd",
        "count",
        10,
    )
    assert third.label == "kernel triton_poi_fused_*gelu_mul* per mlp_fwd"
    assert fourth.checks[0].quantity == "gpu_us" and fourth.checks[0].comparison == "<="
    assert fourth.checks[0].text == "max_gpu_us = 250"


def test_bounds_steps_and_notes() -> None:
    (steps, one_step, per_step) = parse_expectations(
        '[[expect]]\nstep = "*"\nmin_kernels_per_call = 1\nmax_kernels_per_call = 9\nnote = "n"\n'
        "[[expect]]\nstep = 3\ncalls = 1\n"
        '[[expect]]\nkernel = "k"\nper = "step"\nmax_count = 2\nmin_gpu_us = 0.5\n'
    )
    assert steps.label == "every step" and steps.note == "n"
    assert [(c.key, c.comparison, c.value) for c in steps.checks] == [
        ("min_kernels_per_call", ">=", 1),
        ("max_kernels_per_call", "<=", 9),
    ]
    assert one_step.label == "step 3" and one_step.target == 3
    assert per_step.label == "kernel k per step"
    assert per_step.checks[1].holds(0.5) and not per_step.checks[1].holds(0.4)


def test_every_workload_file_parses() -> None:
    files = sorted(EXPECT.glob("*.toml"))
    assert len(files) == 11  # ten for the samples, distributed.toml for every rank of ddp and fsdp
    for path in files:
        assert load_expectations(path)


def test_key_set_and_docs() -> None:
    quantities = {q for q, _ in CHECKS.values()}
    for quantity in quantities:
        keys = {k for k, (q, _) in CHECKS.items() if q == quantity}
        if quantity.endswith(("_us", "_pct")):
            assert keys == {f"min_{quantity}", f"max_{quantity}"}  # times and shares: bounds only
        elif quantity == "launches_kernels":
            assert keys == {quantity}
        elif quantity.startswith("peak_"):
            assert keys == {f"{quantity}_max"}  # sizes: an upper bound only
        else:
            assert keys == {quantity, f"min_{quantity}", f"max_{quantity}"}
    docs = (REPO / "docs" / "compare.md").read_text()
    assert "`min_…`" in docs
    bases = {re.sub(r"^(min|max)_", "", k) for k in KNOWN_KEYS if k not in ("min_gpu_us", "max_gpu_us")}
    missing = [b for b in bases if f"`{b}`" not in docs]
    assert not missing, missing
    assert "`min_gpu_us`, `max_gpu_us`" in docs and "`min_cpu_us`, `max_cpu_us`" in docs


BAD = [
    pytest.param("", "line 1: no [[expect]] tables", id="empty file"),
    pytest.param("# only a comment\n", "line 1: no [[expect]] tables", id="comments only"),
    pytest.param("[[expect]]\nop = 'x'\ncount = \n", "line 3: not valid TOML: invalid value", id="not TOML"),
    pytest.param("[[expect]]\nop = 'x'\ncount = 1\n[[expect\n", "line 4: not valid TOML", id="broken header"),
    pytest.param(
        '[[expect]]\nannotation = "mlp_fwd"\nkernel_per_call = 5\n',
        "line 3: unknown key 'kernel_per_call' (did you mean 'kernels_per_call'?)",
        id="unknown key",
    ),
    pytest.param(
        '[[expect]]\nop = "a"\ncount = 1\n\n[[expect]]\nop = "b"\n  colour = "red"\n',
        "line 7: unknown key 'colour'",
        id="unknown key in a later table",
    ),
    pytest.param(
        'foo = 1\n[[expect]]\nop = "x"\ncount = 1\n', "line 1: unknown top-level key 'foo'", id="top"
    ),
    pytest.param('[expect]\nop = "x"\ncount = 1\n', "line 1: 'expect' must be [[expect]] tables", id="table"),
    pytest.param("expect = 3\n", "line 1: 'expect' must be [[expect]] tables", id="expect scalar"),
    pytest.param("expect = []\n", "line 1: no [[expect]] tables", id="expect empty list"),
    pytest.param(
        'expect = [{op = "x", cnt = 1}]\n', "line 1: unknown key 'cnt' (did you mean 'count'?)", id="inline"
    ),
    pytest.param(
        "[[expect]]\nkernels_per_call = 5\n",
        "line 1: [[expect]] #1 names no subject: give one of annotation, step, op, kernel",
        id="missing subject",
    ),
    pytest.param(
        '[[expect]]\nop = "x"\ncount = 1\n[[expect]]\nop = "x"\nannotation = "y"\ncount = 1\n',
        "line 6: [[expect]] #2 names two subjects: op and annotation",
        id="two subjects",
    ),
    pytest.param(
        '[[expect]]\nannotation = "x"\n',
        "line 1: [[expect]] #1 (annotation) has nothing to check: add e.g. kernels_per_call = 5",
        id="nothing to check",
    ),
    pytest.param(
        '[[expect]]\nannotation = "x"\nkernels_per_call = "5"\n',
        "line 3: 'kernels_per_call' must be a whole number ≥ 0, got '5'",
        id="count as string",
    ),
    pytest.param(
        '[[expect]]\nannotation = "x"\nkernels_per_call = 4.5\n',
        "line 3: 'kernels_per_call' must be a whole number ≥ 0, got 4.5",
        id="fractional count",
    ),
    pytest.param(
        '[[expect]]\nkernel = "k"\ncount = -1\n',
        "line 3: 'count' must be a whole number ≥ 0, got -1",
        id="negative",
    ),
    pytest.param(
        '[[expect]]\nkernel = "k"\ncount = true\n',
        "line 3: 'count' must be a whole number ≥ 0, got true",
        id="bool",
    ),
    pytest.param(
        '[[expect]]\nop = "x"\nlaunches_kernels = 1\n',
        "line 3: 'launches_kernels' must be true or false, got 1",
        id="flag as number",
    ),
    pytest.param(
        '[[expect]]\nannotation = "x"\nmax_gpu_us = "fast"\n',
        "line 3: 'max_gpu_us' must be a number of µs ≥ 0, got 'fast'",
        id="time as string",
    ),
    pytest.param(
        '[[expect]]\nannotation = "x"\nmax_gpu_us = nan\n', "line 3: 'max_gpu_us' must be a number", id="nan"
    ),
    pytest.param(
        "[[expect]]\nannotation = 5\ncalls = 1\n",
        "line 2: 'annotation' must be a non-empty string, got 5",
        id="name",
    ),
    pytest.param(
        '[[expect]]\nop = ""\ncount = 1\n', "line 2: 'op' must be a non-empty string, got ''", id="empty name"
    ),
    pytest.param(
        '[[expect]]\nstep = "last"\ncalls = 1\n',
        "line 2: 'step' must be a step number (ProfilerStep#N) or \"*\", got 'last'",
        id="step word",
    ),
    pytest.param(
        "[[expect]]\nstep = -2\ncalls = 1\n", "line 2: 'step' must be a step number", id="negative step"
    ),
    pytest.param(
        '[[expect]]\nkernel = "triton_[poi"\ncount = 1\n',
        "line 2: bad glob in 'kernel': unclosed '[' at character 8 of 'triton_[poi'",
        id="bad glob",
    ),
    pytest.param(
        '[[expect]]\nannotation = "a"\nper = "b"\ncalls = 1\n',
        "line 3: 'per' applies to op and kernel expectations, not to annotation",
        id="per on annotation",
    ),
    pytest.param(
        '[[expect]]\nop = "a"\nper = 3\ncount = 1\n',
        "line 3: 'per' must be an annotation name or \"step\", got 3",
        id="per type",
    ),
    pytest.param(
        '[[expect]]\nkernel = "k"\nmax_cpu_us = 3\n',
        "line 3: 'max_cpu_us' does not apply to kernel expectations (only to annotation, step or op)",
        id="not applicable",
    ),
    pytest.param(
        '[[expect]]\nannotation = "a"\ncount = 3\n',
        "line 3: 'count' does not apply to annotation expectations (only to op or kernel)",
        id="count on annotation",
    ),
    pytest.param(
        '[[expect]]\nop = "x"\ncount = 1\nmin_count = 1\n',
        "line 4: 'min_count' and 'count' together: give an exact value or bounds",
        id="exact and bound",
    ),
    pytest.param(
        '[[expect]]\nop = "x"\nmin_count = 3\nmax_count = 2\n',
        "line 4: 'max_count' (2) is below 'min_count' (3)",
        id="min above max",
    ),
    pytest.param(
        '[[expect]]\nop = "x"\ncount = 1\nnote = 3\n', "line 4: 'note' must be a string, got 3", id="note"
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_files_name_the_line(text: str, message: str) -> None:
    with pytest.raises(TraceError) as raised:
        parse_expectations(text, "e.toml")
    assert raised.value.path == "e.toml"
    assert raised.value.problem.startswith(message), raised.value.problem


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such expectations file"):
        load_expectations(tmp_path / "missing.toml")
    with pytest.raises(TraceError, match="is a directory"):
        load_expectations(tmp_path)
    binary = tmp_path / "b.toml"
    binary.write_bytes(b'[[expect]]\nop = "x"\n\xff\xfe\n')
    with pytest.raises(TraceError, match="line 3: not UTF-8 text"):
        load_expectations(binary)


def test_control_characters_in_names_are_cleaned() -> None:
    (e,) = parse_expectations('[[expect]]\nop = "a\\u001b]52;c;evil\\u0007b"\ncount = 1\n')
    assert "\x1b" not in str(e.target) and "\x07" not in str(e.target)
    with pytest.raises(TraceError) as raised:
        parse_expectations('[[expect]]\nop = "x"\ncount = 1\n"k\\u001b" = 1\n')
    assert "\x1b" not in str(raised.value)


def test_globs() -> None:
    assert glob_problem("triton_*gelu*") is None and glob_problem("[[]x]") is None
    assert glob_problem("a[!b]c") is None and glob_problem("[]]") is None
    assert glob_problem("") == "the glob is empty"
    assert "unclosed '['" in str(glob_problem("a[b"))
    names = ["triton_poi_fused__unsafe_view_gelu_mul_0", "triton_per_fused_sum_0", "Triton_x"]
    assert matching(names, "triton_*gelu_mul*") == names[:1]
    assert matching(names, "triton_p??_*") == names[:2]
    assert matching(names + names, "[tT]riton_*") == names  # distinct, case-sensitive sets
