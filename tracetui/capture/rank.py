"""One rank of ``tracetui capture ddp|fsdp`` (a child process; ``python -m tracetui.capture.rank JOB``).

It joins the process group from torchrun's environment variables, builds its rank of the workload
(``build_rank`` of the job's module: :mod:`tracetui.workloads.ddp`, :mod:`tracetui.workloads.fsdp`),
warms it up and profiles it with the blog's schedule, writing its trace with
``tensorboard_trace_handler`` as ``rank<N>.<time>.pt.trace.json.gz``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

WAIT, WARMUP, WARMUP_STEPS = 1, 1, 3


def main(job: dict[str, Any]) -> None:
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    from tracetui import __version__
    from tracetui.capture.metadata import METADATA_KEY, versions
    from tracetui.workloads.runner import torch_dtype

    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    backend = job["backend"]
    if job["device"] == "cuda":
        device = torch.device("cuda", local if backend == "nccl" else 0)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend)
    try:
        build_rank = importlib.import_module(job["module"]).build_rank
        dtype = torch_dtype(job["dtype"])
        step, labels = build_rank(job["shapes"], dtype, device, rank, job["straggler"], job["straggler_ms"])
        for _ in range(WARMUP_STEPS):
            step()
        _sync(device)
        dist.barrier()
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        meta = {
            "workload": job["workload"],
            "variant": {"tags": [job["workload"], backend], "train": True, "optimizer": "AdamW(lr=0.0001)"},
            "shapes": job["shapes"],
            "dtype": job["dtype"],
            "device": device.type,
            "labels": list(labels),
            "steps": job["steps"],
            "schedule": {"wait": WAIT, "warmup": WARMUP, "active": job["steps"]},
            "distributed": {
                "backend": backend,
                "straggler": job["straggler"],
                "straggler_ms": job["straggler_ms"],
            },
            "versions": versions(device.type) | {"tracetui": __version__},
            "command": job["command"],
        }
        handler = tensorboard_trace_handler(job["out_dir"], worker_name=f"rank{rank}", use_gzip=True)
        with profile(
            activities=activities,
            schedule=schedule(wait=WAIT, warmup=WARMUP, active=job["steps"], repeat=1),
            on_trace_ready=handler,
            record_shapes=True,
        ) as prof:
            for i in range(WAIT + WARMUP + job["steps"]):
                if i == WAIT + WARMUP:
                    prof.add_metadata_json(METADATA_KEY, json.dumps(meta))
                step()
                _sync(device)
                prof.step()
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
