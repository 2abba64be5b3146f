"""``tracetui capture ddp``: N processes, one trace per rank in one directory (gloo on the CPU here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Run, read_trace, run_cli

TINY = ["--batch", "2", "--seq", "4", "--dim", "16", "--hidden", "32"]


@pytest.fixture(scope="module")
def ddp_capture(tmp_path_factory: pytest.TempPathFactory) -> Run:
    cwd = tmp_path_factory.mktemp("ddp")
    return run_cli("capture", "ddp", "--ranks", "2", "--straggler", "1", "--steps", "2", *TINY, cwd=cwd)


def test_one_trace_per_rank_in_one_directory(ddp_capture: Run) -> None:
    run = ddp_capture
    assert run.returncode == 0, run.stderr
    out_dir = run.cwd / "ddp_gloo_2ranks"
    assert run.stdout.startswith(f"wrote 2 traces (gloo) to {out_dir.name} (")
    files = sorted(p.name for p in out_dir.iterdir())
    assert [name.split(".")[0] for name in files] == ["rank0", "rank1"]
    assert all(name.endswith(".pt.trace.json.gz") for name in files)
    assert sorted(p.name for p in run.cwd.iterdir()) == ["ddp_gloo_2ranks"]  # nothing else left behind
    # then the summary of the run
    text = " ".join(run.stdout.split())  # the report wraps at 80 columns
    assert "2 ranks from ddp_gloo_2ranks; rank from distributedInfo, world size 2, backend gloo" in text
    assert "Stragglers:" in text and "rank 0: rank0." in text


def test_traces_say_their_rank_and_hold_the_collectives(ddp_capture: Run) -> None:
    for rank, path in enumerate(sorted((ddp_capture.cwd / "ddp_gloo_2ranks").iterdir())):
        trace = read_trace(path)
        info = trace["distributedInfo"]
        assert (info["rank"], info["world_size"], info["backend"]) == (rank, 2, "gloo")
        names = [e.get("name") for e in trace["traceEvents"] if e.get("ph") == "X"]
        assert names.count("ddp_step") == 2 and sum(n.startswith("ProfilerStep#") for n in names) == 2
        assert any(n.startswith("gloo:all_reduce") for n in names)
        assert names.count("straggler_delay") == (2 if rank == 1 else 0)
        meta = trace["tracetui"]
        assert meta["workload"] == "ddp" and meta["distributed"] == {"backend": "gloo", "straggler": 1}


def test_the_run_aligns(ddp_capture: Run) -> None:
    pytest.importorskip("polars")
    from tracetui.ranks.discover import resolve
    from tracetui.ranks.run import report_for

    report = report_for(resolve([ddp_capture.cwd / "ddp_gloo_2ranks"]), summary=False)
    collectives = report.analysis.collectives
    assert collectives.height >= 2 and set(collectives["ranks"]) == {2}
    assert not collectives["mismatch"].any()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["mlp", "--ranks", "2"], "--ranks applies to ddp only"),
        (["ddp", "--compile"], "--compile does not apply to ddp"),
        (["ddp", "--ranks", "2", "--straggler", "2"], "--straggler 2 is not a rank of 2"),
        (["ddp", "--backend", "nccl"], "--backend nccl needs one GPU per rank (2); there is no GPU"),
    ],
)
def test_bad_flags(tmp_path: Path, args: list[str], message: str) -> None:
    run = run_cli("capture", *args, cwd=tmp_path)
    assert run.returncode == 2 and message in run.stderr, run.stderr
    assert not list(tmp_path.iterdir())


def test_multicast_stays_off_in_every_rank() -> None:
    from tracetui.capture.distributed import child_env, choose_backend

    env = child_env(1, 4, 29500, base={"PATH": "/bin", "NCCL_NVLS_ENABLE": "1"})
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert (env["RANK"], env["LOCAL_RANK"], env["WORLD_SIZE"], env["MASTER_PORT"]) == ("1", "1", "4", "29500")
    assert choose_backend(None, 2, 1) == "gloo" and choose_backend(None, 2, 2) == "nccl"
    assert choose_backend("gloo", 2, 8) == "gloo"


@pytest.mark.gpu
def test_gpu_capture_ddp(tmp_path: Path) -> None:
    """On the GPU box: gloo on one GPU (NCCL with two or more), kernels and collectives visible."""
    import torch

    run = run_cli("capture", "ddp", "--ranks", "2", "--straggler", "1", cwd=tmp_path, cpu=False)
    assert run.returncode == 0, run.stderr
    backend = "nccl" if torch.cuda.device_count() >= 2 else "gloo"
    traces = sorted((tmp_path / f"ddp_{backend}_2ranks").iterdir())
    assert len(traces) == 2
    trace = read_trace(traces[0])
    assert any(e.get("cat") == "kernel" for e in trace["traceEvents"])
    assert "Stragglers: rank 1 arrives last" in run.stdout
