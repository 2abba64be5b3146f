"""``tracetui capture ddp``: DDP's all-reduces in every rank's trace (gloo on the CPU here); what ddp
shares with fsdp is tested in test_capture_ranks.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import DISTRIBUTED_EXPECT, Run, complete_names, read_trace, run_cli


@pytest.mark.slow
def test_traces_hold_the_all_reduces(rank_captures: dict[str, Run]) -> None:
    for path in sorted((rank_captures["ddp"].cwd / "ddp_gloo_2ranks").iterdir()):
        names = complete_names(read_trace(path))
        assert names.count("c10d::allreduce_") >= 3 and any(n.startswith("gloo:all_reduce") for n in names)


@pytest.mark.slow
def test_the_run_aligns(rank_captures: dict[str, Run]) -> None:
    pytest.importorskip("polars")
    from tracetui.ranks.discover import resolve
    from tracetui.ranks.run import report_for

    report = report_for(resolve([rank_captures["ddp"].cwd / "ddp_gloo_2ranks"]), summary=False)
    collectives = report.analysis.collectives
    assert collectives.height >= 3 and set(collectives["ranks"]) == {2}
    assert not collectives["mismatch"].any()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["mlp", "--ranks", "2"], "--ranks applies to ddp and fsdp only"),
        (["ddp", "--compile"], "--compile does not apply to ddp"),
        (["fsdp", "--cuda-graph"], "--cuda-graph does not apply to fsdp"),
        (["mlp", "--straggler", "0"], "--straggler applies to ddp and fsdp only"),
        (["linear", "--straggler-ms", "10"], "--straggler-ms applies to ddp and fsdp only"),
        (["ddp", "--straggler-ms", "10"], "--straggler-ms is the delay of --straggler RANK; name the rank"),
        (["fsdp", "--straggler", "1", "--straggler-ms", "-1"], "Invalid value for '--straggler-ms'"),
        (["ddp", "--straggler", "1", "--straggler-ms", "nan"], "'--straggler-ms': nan is not"),
        (["ddp", "--ranks", "2", "--straggler", "2"], "--straggler 2 is not a rank of 2"),
        (["fsdp", "--ranks", "3", "--straggler", "5"], "--straggler 5 is not a rank of 3"),
        (["ddp", "--backend", "nccl"], "--backend nccl needs one GPU per rank (2); there is no GPU"),
        (["fsdp", "--backend", "nccl"], "--backend nccl needs one GPU per rank (2); there is no GPU"),
        (["fsdp", "--open"], "--open applies to one trace; run `tracetui open DIR` after fsdp"),
    ],
)
def test_bad_flags(tmp_path: Path, args: list[str], message: str) -> None:
    run = run_cli("capture", *args, cwd=tmp_path)
    assert run.returncode == 2 and message in run.stderr, run.stderr
    assert not list(tmp_path.iterdir())


def test_a_bad_expectations_file_costs_no_capture(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[expect]]\nop = 'aten::mm'\ncount = 'seven'\n")
    run = run_cli("capture", "fsdp", "--expect", str(bad), cwd=tmp_path)
    assert run.returncode == 2 and "bad.toml: line 3" in run.stderr, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_multicast_stays_off_in_every_rank() -> None:
    from tracetui.capture.distributed import child_env, choose_backend

    env = child_env(1, 4, 29500, base={"PATH": "/bin", "NCCL_NVLS_ENABLE": "1"})
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert (env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"], env["MASTER_PORT"]) == ("1", "1", "4", "29500")
    assert env["OMP_NUM_THREADS"] == "1"  # as torchrun: the ranks share the host's cores
    assert child_env(0, 2, 1, base={"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"  # the user's own
    assert "OMP_NUM_THREADS" not in child_env(0, 1, 1, base={})
    assert choose_backend(None, 2, 1) == "gloo" and choose_backend(None, 2, 2) == "nccl"
    assert choose_backend("gloo", 2, 8) == "gloo"


@pytest.mark.gpu
def test_gpu_capture_ddp(tmp_path: Path) -> None:
    """On the GPU box: gloo on one GPU (NCCL with two or more), kernels and collectives visible, every
    rank passing the distributed expectations."""
    import torch

    args = ["capture", "ddp", "--ranks", "2", "--straggler", "1", "--expect", str(DISTRIBUTED_EXPECT)]
    run = run_cli(*args, cwd=tmp_path, cpu=False)
    assert run.returncode == 0, run.stderr + run.stdout[-3000:]
    backend = "nccl" if torch.cuda.device_count() >= 2 else "gloo"
    traces = sorted((tmp_path / f"ddp_{backend}_2ranks").iterdir())
    assert len(traces) == 2
    kernels = complete_names(read_trace(traces[0]), "kernel")
    assert kernels
    if backend == "nccl":
        assert any(k.startswith("ncclDevKernel_AllReduce") for k in kernels)
    assert "Stragglers: rank 1 arrives last" in run.stdout
