"""The shipped expectation files (workloads/expect/*.toml) pass on the bundled sample traces."""

from __future__ import annotations

import pytest

from tests.compare.conftest import EXPECT, sample
from tracetui.compare.check import check_trace
from tracetui.compare.expectations import load_expectations

# sample trace (sample_traces/<stem>.json.gz) -> expectations file (workloads/expect/<name>.toml)
PAIRS = {
    "matmul_add_eager": "matmul_add",
    "linear_eager": "linear_eager",
    "linear_compiled": "linear_compiled",
    "mlp_eager": "mlp_eager",
    "mlp_compiled": "mlp_compiled",
    "mlp_triton": "mlp_triton",
    "mlp_cudagraph": "mlp_cudagraph",
    "mlp_triton_train": "mlp_triton_train",
    "mlp_triton_fused": "mlp_triton_fused",
    "transformer_block_train_memory": "transformer_block_train_memory",
}
# expectations checked on every rank of fresh CPU captures (tests/workloads/test_capture_ranks.py) and
# of the bundled runs (tests/workloads/test_sample_runs.py)
ON_CAPTURES = ("distributed",)


def test_every_expectation_file_has_a_sample() -> None:
    assert sorted(p.stem for p in EXPECT.glob("*.toml")) == sorted([*PAIRS.values(), *ON_CAPTURES])


@pytest.mark.parametrize(("trace", "expect"), PAIRS.items())
def test_expectations_pass_on_the_sample(trace: str, expect: str) -> None:
    results = check_trace(sample(trace), load_expectations(EXPECT / f"{expect}.toml"))
    failed = [
        f"line {r.check.line}: {r.expectation.label}: {r.check.text} -> {r.actual}"
        for r in results
        if not r.passed
    ]
    assert not failed, failed
    assert len(results) >= 5


def test_expectations_catch_the_other_variant() -> None:
    """Eager guesses on the compiled trace fail exactly where compile changed things."""
    results = check_trace(sample("mlp_compiled"), load_expectations(EXPECT / "mlp_eager.toml"))
    failed = {(r.expectation.label, r.check.key) for r in results if not r.passed}
    assert ("annotation mlp_fwd", "kernels_per_call") in failed
    assert ("kernel *GeluCUDAKernelImpl* per mlp_fwd", "count") in failed
    assert ("kernel triton_*", "count") in failed
    assert ("op aten::linear per mlp_fwd", "count") in failed
    assert ("kernel nvjet_* per mlp_fwd", "count") not in failed  # the GEMMs did not change
