"""The profiling loop of ``tracetui capture``: the blog's settings, one export, no temp files left behind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from tracetui.capture.metadata import METADATA_KEY, build_metadata
from tracetui.capture.progress import Stages
from tracetui.workloads.registry import RunConfig
from tracetui.workloads.runner import WARMUP_STEPS, prepare

WAIT, WARMUP = 1, 1


def run_capture(
    config: RunConfig,
    output: Path,
    *,
    steps: int = 3,
    with_stack: bool = False,
    memory: bool = False,
    device: torch.device | None = None,
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """Profile ``steps`` active steps of ``config`` and write the Chrome trace to ``output``.

    ``schedule(wait=1, warmup=1, active=steps, repeat=1)``, ``record_shapes=True``, CPU and (when
    there is a GPU) CUDA activities, a device synchronize after every step. The trace is written
    to a temporary file beside ``output`` and renamed into place, gzipped when the name ends in
    ``.gz``. Returns the metadata stored under the trace's ``"tracetui"`` key.
    """
    phases = WARMUP_STEPS + 1 + int(config.variant.cuda_graph)  # warm-up steps, [CUDA graph], export
    with Stages(phases + WAIT + WARMUP + steps) as stages:
        return _profiled(config, output, stages, steps, with_stack, memory, device, argv)


def _profiled(
    config: RunConfig,
    output: Path,
    stages: Stages,
    steps: int,
    with_stack: bool,
    memory: bool,
    device: torch.device | None,
    argv: list[str] | None,
) -> dict[str, Any]:
    prepared = prepare(config, device, stages.stage)
    on_gpu = prepared.device.type == "cuda"
    sched = {"wait": WAIT, "warmup": WARMUP, "active": steps}
    meta = build_metadata(
        config,
        device_type=prepared.device.type,
        steps=steps,
        schedule=sched,
        optimizer=prepared.optimizer,
        labels=prepared.labels,
        argv=argv,
    )
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    output.parent.mkdir(parents=True, exist_ok=True)
    suffix = ".json.gz" if output.name.endswith(".gz") else ".json"
    tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp{suffix}")
    exported: list[Path] = []

    def on_trace_ready(prof: profile) -> None:
        # Kineto's save is destructive ("Trace is already saved"): export exactly once.
        if not exported:
            prof.export_chrome_trace(str(tmp))
            exported.append(tmp)

    try:
        with profile(
            activities=activities,
            schedule=schedule(wait=WAIT, warmup=WARMUP, active=steps, repeat=1),
            on_trace_ready=on_trace_ready,
            record_shapes=True,
            with_stack=with_stack,
            profile_memory=memory,
        ) as prof:
            total = WAIT + WARMUP + steps
            for i in range(total):
                with stages.stage(step_label(i, steps)):
                    if i == WAIT + WARMUP:  # the first recorded step: the Kineto session is live
                        prof.add_metadata_json(METADATA_KEY, json.dumps(meta))
                    prepared.step()
                    if on_gpu:
                        torch.cuda.synchronize(prepared.device)
                    if i < total - 1:
                        prof.step()
            with stages.stage("exporting the trace"):
                prof.step()  # the last active step ends: on_trace_ready exports
        if not exported:
            raise RuntimeError("the profiler never called on_trace_ready")
        tmp.replace(output)
    finally:
        tmp.unlink(missing_ok=True)
    return meta


def step_label(index: int, active: int) -> str:
    """``profiler step 3/5 (recording 1/3)``: the schedule's phase of step ``index``."""
    total = WAIT + WARMUP + active
    if index < WAIT:
        phase = "wait"
    elif index < WAIT + WARMUP:
        phase = "profiler warm-up"
    else:
        phase = f"recording {index - WAIT - WARMUP + 1}/{active}"
    return f"profiler step {index + 1}/{total} ({phase})"
