"""``transformer-block``: a training step with memory events, captured on the CPU with tiny shapes
and read back by the memory model (the H200 capture uses the defaults: batch 32, seq 512)."""

from __future__ import annotations

import pytest

from tracetui.workloads.registry import make_config

from .helpers import Run, complete_names, read_trace, run_cli

TINY_BLOCK = ["--batch", "2", "--seq", "16", "--dim", "128", "--hidden", "256"]
NAME = "transformer_block_eager_train.json.gz"


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Run:
    cwd = tmp_path_factory.mktemp("block")
    return run_cli(
        "capture", "transformer-block", "--train", "--memory", "--steps", "2", *TINY_BLOCK, cwd=cwd
    )


def test_defaults_and_heads() -> None:
    config = make_config("transformer-block")
    assert config.shapes == {"batch": 32, "seq": 512, "dim": 1024, "hidden": 4096}
    torch = pytest.importorskip("torch")
    from tracetui.workloads.transformer_block import build

    model, x = build({"batch": 2, "seq": 4, "dim": 128, "hidden": 32}, torch.float32, torch.device("cpu"))
    assert model.heads == 2 and model(x).shape == x.shape
    odd, y = build({"batch": 1, "seq": 3, "dim": 24, "hidden": 8}, torch.float32, torch.device("cpu"))
    assert odd.heads == 1 and odd(y).shape == y.shape


@pytest.mark.slow
def test_a_training_capture_with_memory(capture: Run) -> None:
    assert capture.returncode == 0, capture.stderr
    path = capture.cwd / NAME
    raw = read_trace(path)
    annotations = complete_names(raw, "user_annotation")
    for label in ("transformer_block_fwd", "backward", "optimizer"):
        assert annotations.count(label) == 2, label
    assert "aten::scaled_dot_product_attention" in complete_names(raw, "cpu_op")
    assert "Memory on cpu: peak" in capture.stdout  # the summary capture prints

    from tracetui.insight.memory import memory_of
    from tracetui.trace import load

    (device,) = memory_of(load(path)).devices
    assert device.device == "cpu" and device.allocations > 100 and device.peak["allocated"] > 0
    assert device.peak["step"] in ("ProfilerStep#2", "ProfilerStep#3")
    assert device.alive_by("op").height > 0 and device.steps.height == 2
