"""``tracetui capture ddp|fsdp``: start one process per rank, as torchrun does, and collect their traces.

Each child (:mod:`tracetui.capture.rank`) gets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``MASTER_ADDR`` and ``MASTER_PORT``, joins the process group and writes its trace into the output
directory with ``tensorboard_trace_handler`` (``rank<N>.<time>.pt.trace.json.gz``). NVLink multicast
stays off in every child (``NCCL_NVLS_ENABLE=0``, ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``,
``NVSHMEM_DISABLE_NVLS=1``). If one rank fails, the others are stopped and its error is reported.
Importing this module needs no torch.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from tracetui.workloads.registry import RunConfig

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
TIMEOUT_S = 900.0


def choose_backend(requested: str | None, ranks: int, gpus: int) -> str:
    """``nccl`` when each rank can have its own GPU, else ``gloo``; a UsageError for NCCL without
    enough GPUs."""
    if requested == "nccl" and gpus < ranks:
        have = "no GPU" if gpus == 0 else f"only {gpus} GPU(s)"
        raise click.UsageError(f"--backend nccl needs one GPU per rank ({ranks}); there is {have} (use gloo)")
    return requested or ("nccl" if gpus >= ranks > 0 else "gloo")


def child_env(rank: int, ranks: int, port: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of rank ``rank``'s process: torchrun's variables, multicast off, and, as torchrun
    does for several processes on one host, one OpenMP thread a rank unless ``OMP_NUM_THREADS`` is set
    (the ranks share the host's cores; more threads each oversubscribe them, and a rank descheduled
    at a collective looks like a straggler)."""
    env = dict(os.environ if base is None else base)
    if ranks > 1:
        env.setdefault("OMP_NUM_THREADS", "1")
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(ranks),
        LOCAL_WORLD_SIZE=str(ranks),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        **NO_MULTICAST,
    )
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_ranks_capture(
    config: RunConfig,
    out_dir: Path,
    *,
    ranks: int,
    backend: str,
    straggler: int | None,
    straggler_ms: float | None,
    steps: int,
    device: str,
    argv: list[str] | None = None,
) -> list[Path]:
    """Run ``ranks`` processes of ``config`` and return the traces they wrote into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    before = set(out_dir.glob("*.pt.trace.json*"))
    job: dict[str, Any] = {
        "workload": config.workload.name,
        "module": config.workload.module,
        "shapes": dict(config.shapes),
        "dtype": config.dtype,
        "backend": backend,
        "straggler": straggler,
        "straggler_ms": straggler_ms,
        "steps": steps,
        "device": device,
        "out_dir": str(out_dir.resolve()),
        "command": _command(config.workload.name, argv),
    }
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="tracetui-ranks-") as scratch:
        logs = [Path(scratch) / f"rank{rank}.log" for rank in range(ranks)]
        procs = []
        for rank, log in enumerate(logs):
            with log.open("w") as sink:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "tracetui.capture.rank", json.dumps(job)],
                        env=child_env(rank, ranks, port),
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                    )
                )
        failed = _wait(procs)
        if failed is not None:
            tail = logs[failed].read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise click.ClickException(f"rank {failed} failed: {tail[0]}")
    return sorted(set(out_dir.glob("*.pt.trace.json*")) - before)


def _wait(procs: list[subprocess.Popen[bytes]]) -> int | None:
    """Wait for every rank; on the first failure stop the others. The failed rank, or None."""
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while True:
            codes = [p.poll() for p in procs]
            bad = next((rank for rank, code in enumerate(codes) if code not in (None, 0)), None)
            if bad is not None or time.monotonic() > deadline:
                return bad if bad is not None else next(r for r, c in enumerate(codes) if c is None)
            if all(code == 0 for code in codes):
                return None
            time.sleep(0.05)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _command(workload: str, argv: list[str] | None) -> str:

    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "capture":
        return shlex.join(["tracetui", *args])
    return f"tracetui capture {workload}"
