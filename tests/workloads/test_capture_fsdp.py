"""``tracetui capture fsdp``: FSDP2's all-gathers and reduce-scatters in every rank's trace (gloo on the
CPU here; NCCL kernels on the GPU box); what fsdp shares with ddp is tested in test_capture_ranks.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from .helpers import DISTRIBUTED_EXPECT, Run, complete_names, read_trace, run_cli

UNITS = ("gate_proj", "up_proj", "down_proj")  # one FSDP unit each, then the root (no parameters of its own)
STEPS = 3


@pytest.mark.slow  # a real 2-rank FSDP capture (~35 s here)
def test_traces_hold_the_all_gathers_and_reduce_scatters(rank_captures: dict[str, Run]) -> None:
    for path in sorted((rank_captures["fsdp"].cwd / "fsdp_gloo_2ranks").iterdir()):
        names = Counter(complete_names(read_trace(path)))
        # each unit's parameters are gathered before its forward and again before its backward
        assert names["c10d::_allgather_base_"] == 2 * len(UNITS) * STEPS
        assert all(names[f"FSDP::all_gather ({unit})"] == 2 * STEPS for unit in UNITS)
        # and its gradients reduce-scattered after its backward
        assert names["c10d::_reduce_scatter_base_"] == len(UNITS) * STEPS
        assert all(names[f"FSDP::post_backward_reduce ({unit})"] == STEPS for unit in UNITS)
        # gloo: an all-gather is a gloo all-gather; a reduce-scatter an all-reduce of the whole buffer
        assert names["gloo:all_gather"] == 2 * len(UNITS) * STEPS
        assert names["gloo:all_reduce"] == len(UNITS) * STEPS


@pytest.mark.slow
def test_the_run_aligns_every_collective(rank_captures: dict[str, Run]) -> None:
    pytest.importorskip("polars")
    from tracetui.ranks.discover import resolve
    from tracetui.ranks.run import report_for

    report = report_for(resolve([rank_captures["fsdp"].cwd / "fsdp_gloo_2ranks"]), summary=False)
    collectives = report.analysis.collectives
    assert Counter(collectives["name"]) == {"allgather": 18, "allreduce": 9}
    assert set(collectives["ranks"]) == {2} and not collectives["mismatch"].any()


@pytest.mark.gpu
def test_gpu_capture_fsdp_gloo_on_one_gpu(tmp_path: Path) -> None:
    """On the GPU box: both ranks on GPU 0 with gloo (bf16 mixed precision), kernels visible, every
    rank passing the distributed expectations, the straggler named."""
    args = ["--ranks", "2", "--straggler", "1", "--backend", "gloo", "--expect", str(DISTRIBUTED_EXPECT)]
    run = run_cli("capture", "fsdp", *args, cwd=tmp_path, cpu=False)
    assert run.returncode == 0, run.stderr + run.stdout[-3000:]
    traces = sorted((tmp_path / "fsdp_gloo_2ranks").iterdir())
    assert len(traces) == 2
    trace = read_trace(traces[0])
    assert complete_names(trace, "kernel") and trace["tracetui"]["device"] == "cuda"
    assert Counter(complete_names(trace))["c10d::_reduce_scatter_base_"] == len(UNITS) * STEPS
    assert "Stragglers: rank 1 arrives last" in " ".join(run.stdout.split())  # wrapped at 80 columns


@pytest.mark.gpu
def test_gpu_capture_fsdp_nccl(tmp_path: Path) -> None:
    """With a GPU per rank: NCCL all-gather and reduce-scatter kernels on every rank, overlapping compute."""
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("NCCL needs a GPU per rank: run on a machine with two or more GPUs")
    args = ["--ranks", "2", "--straggler", "1", "--backend", "nccl", "--expect", str(DISTRIBUTED_EXPECT)]
    run = run_cli("capture", "fsdp", *args, cwd=tmp_path, cpu=False)
    assert run.returncode == 0, run.stderr + run.stdout[-3000:]
    traces = sorted((tmp_path / "fsdp_nccl_2ranks").iterdir())
    assert len(traces) == 2
    for path in traces:
        kernels = Counter(complete_names(read_trace(path), "kernel"))
        gathers = sum(n for k, n in kernels.items() if k.startswith("ncclDevKernel_AllGather"))
        scatters = sum(n for k, n in kernels.items() if k.startswith("ncclDevKernel_ReduceScatter"))
        assert gathers == 2 * len(UNITS) * STEPS and scatters == len(UNITS) * STEPS, kernels
    assert "Stragglers: rank 1 arrives last" in " ".join(run.stdout.split())  # wrapped at 80 columns
    pytest.importorskip("polars")
    from tracetui.ranks.discover import resolve
    from tracetui.ranks.run import report_for

    report = report_for(resolve([tmp_path / "fsdp_nccl_2ranks"]), summary=False)
    assert {"allgather", "reducescatter"} <= set(report.analysis.collectives["name"])
    assert (report.analysis.ranks["overlap_pct"] > 0).all()  # FSDP overlaps its collectives with compute
