"""``tracetui capture`` end to end on the CPU with tiny shapes (one shared capture per workload)."""

from __future__ import annotations

import re

from .helpers import Run, complete_names, read_trace


def _only_trace(run: Run, name: str):
    path = run.cwd / name
    assert sorted(p.name for p in run.cwd.iterdir()) == [name], "a temporary file was left behind"
    return path


def test_capture_writes_trace_and_says_cpu(cpu_captures: dict[str, Run]) -> None:
    run = cpu_captures["mlp"]
    assert run.returncode == 0, run.stderr
    assert "running on the CPU" in run.stderr
    assert (
        "on the CPU the default dtype is fp32, not bf16 (a CPU without AVX-512 BF16 or AMX runs bf16 "
        "matmuls ~20x slower); --dtype bf16 to run in bf16\n"
    ) in run.stderr
    for n in (1, 2, 3):  # each warm-up step its own line (was one silent stage)
        assert re.search(rf"warming up mlp on cpu: step {n}/3… done in [\d.]+ s", run.stderr)
    assert run.stdout.startswith("wrote mlp_eager.json.gz (")
    _only_trace(run, "mlp_eager.json.gz")


def test_trace_has_labels_steps_and_metadata(cpu_captures: dict[str, Run]) -> None:
    trace = read_trace(_only_trace(cpu_captures["mlp"], "mlp_eager.json.gz"))
    annotations = complete_names(trace, "user_annotation")
    assert sorted(n for n in annotations if n.startswith("ProfilerStep#")) == [
        "ProfilerStep#2",
        "ProfilerStep#3",
        "ProfilerStep#4",
    ]
    assert annotations.count("mlp_fwd") == 3
    ops = complete_names(trace, "cpu_op")
    assert ops.count("aten::linear") == 9 and ops.count("aten::gelu") == 3 and ops.count("aten::mul") == 3
    assert not [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    meta = trace["tracetui"]
    assert meta["workload"] == "mlp" and meta["device"] == "cpu" and meta["dtype"] == "fp32"
    assert meta["shapes"] == {"batch": 4, "seq": 2, "dim": 8, "hidden": 16}
    assert meta["variant"]["tags"] == ["eager"] and meta["variant"]["optimizer"] is None
    assert meta["schedule"] == {"wait": 1, "warmup": 1, "active": 3}
    assert meta["command"] == "tracetui capture mlp --batch 4 --seq 2 --dim 8 --hidden 16"
    assert meta["versions"]["torch"] and meta["versions"]["tracetui"]


def test_trace_loads_with_the_model(cpu_captures: dict[str, Run]) -> None:
    # A plain import: a broken core must fail here, not turn into a skip.
    import polars as pl

    import tracetui

    trace = tracetui.load(_only_trace(cpu_captures["mlp"], "mlp_eager.json.gz"))
    names = trace.events["name"]
    assert names.filter(names.cast(pl.String).str.starts_with("ProfilerStep#")).len() == 3
    assert (
        trace.events.filter((pl.col("cat") == "user_annotation") & (pl.col("name") == "mlp_fwd")).height == 3
    )
    assert trace.metadata["tracetui"]["workload"] == "mlp"
    assert trace.metadata["tracetui"]["labels"] == ["mlp_fwd"]


def test_train_capture_labels_backward_and_optimizer(cpu_captures: dict[str, Run]) -> None:
    run = cpu_captures["linear_train"]
    assert run.returncode == 0, run.stderr
    trace = read_trace(_only_trace(run, "linear_eager_train.json.gz"))
    annotations = complete_names(trace, "user_annotation")
    for label in ("linear_fwd", "backward", "optimizer"):
        assert annotations.count(label) == 3, label
    ops = complete_names(trace, "cpu_op")
    assert "aten::addmm" in ops
    assert "Optimizer.step#AdamW.step" in annotations
    meta = trace["tracetui"]
    assert meta["variant"]["train"] is True and meta["variant"]["optimizer"] == "AdamW(lr=0.0001)"
    assert meta["labels"] == ["linear_fwd", "backward", "optimizer"]
