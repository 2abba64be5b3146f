"""``tracetui capture`` flag errors: exit code 2 and one stderr line that lists the valid values."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import run_cli


@pytest.mark.parametrize(
    ("args", "must_contain"),
    [
        (["nope"], ["'nope' is not one of", "'matmul-add'", "'linear'", "'mlp'"]),
        (["matmul-add", "--seq", "4"], ["--seq does not apply to matmul-add", "--batch --in-dim --out-dim"]),
        (["mlp", "--bogus"], ["no such option: --bogus", "valid:", "--compile", "--kernel", "--hidden"]),
        (["mlp", "--dtype", "fp8"], ["'fp8' is not one of", "'bf16'", "'fp16'", "'fp32'"]),
        (["mlp", "--kernel", "cuda"], ["'cuda' is not one of", "'torch'", "'triton'", "'triton-fused'"]),
        (["linear", "--kernel", "triton"], ["--kernel triton applies to mlp only"]),
        (["mlp", "--mode", "max-autotune"], ["--mode needs --compile"]),
        (["mlp", "--batch", "0"], ["--batch", "0"]),
        (["mlp", "--kernel", "triton"], ["--kernel triton needs a CUDA GPU and there is none here"]),
        (
            ["mlp", "--kernel", "triton-fused"],
            ["--kernel triton-fused needs a CUDA GPU and there is none here"],
        ),
        (
            ["mlp", "--kernel", "triton-fused", "--train", "--batch", "2"],
            ["--kernel triton-fused needs a CUDA GPU and there is none here"],
        ),
        (
            ["mlp", "--kernel", "triton-fused", "--dtype", "fp32"],
            ["--kernel triton-fused computes in bf16 or fp16"],
        ),
    ],
)
def test_bad_flags_give_one_line(tmp_path: Path, args: list[str], must_contain: list[str]) -> None:
    run = run_cli("capture", *args, cwd=tmp_path)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("tracetui capture: ") and lines[0].endswith("(see --help)")
    for text in must_contain:
        assert text in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_help_lists_workloads_and_flags(tmp_path: Path) -> None:
    run = run_cli("capture", "--help", cwd=tmp_path)
    assert run.returncode == 0
    for text in (
        "matmul-add",
        "linear",
        "mlp",
        "--cuda-graph",
        "--train",
        "--steps",
        "--with-stack",
        "--memory",
    ):
        assert text in run.stdout
