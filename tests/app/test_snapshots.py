"""Snapshot tests: what the explorer draws, on real traces and synthetic ones (SVGs in __snapshots__)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.app.conftest import WIDE, fixture, goto, keys, settle
from tracetui.app.app import TraceApp


def app_for(path: Path, *, sample: bool = False) -> TraceApp:
    return TraceApp(path, sample=sample)


def test_initial_screen_mlp_eager(snap_compare) -> None:
    """The hottest chain is expanded down to its GEMM kernel, whose details fill the pane."""
    assert snap_compare(app_for(fixture("mlp_eager")), terminal_size=WIDE, run_before=settle)


def test_linear_chain_expanded_to_kernel(snap_compare) -> None:
    """``e`` on a collapsed ``aten::linear`` opens linear → matmul → mm → cuLaunchKernelEx → nvjet."""

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot)
        await pilot.press("c")
        await goto(pilot, "aten::linear")
        await pilot.press("e")
        await settle(pilot)

    assert snap_compare(app_for(fixture("mlp_eager")), terminal_size=WIDE, run_before=run_before)


def test_gemm_kernel_details(snap_compare) -> None:
    """nn.Linear: the bias is the GEMM's epilogue (``aten::addmm``, ``…_bias_…`` kernel)."""
    assert snap_compare(app_for(fixture("linear_eager")), terminal_size=WIDE, run_before=settle)


def test_metadata_only_op(snap_compare) -> None:
    """``aten::t`` launched nothing: dimmed, 'no kernel', and the reason in the details."""

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot)
        await goto(pilot, "aten::t", nth=3)

    assert snap_compare(app_for(fixture("mlp_eager")), terminal_size=WIDE, run_before=run_before)


def test_compiled_trace_fused_triton_kernel(snap_compare) -> None:
    """torch.compile: Torch-Compiled Region, the Inductor marker and the fused gelu·mul kernel."""
    assert snap_compare(
        app_for(fixture("mlp_compiled")),
        terminal_size=WIDE,
        run_before=keys("slash", *"triton_poi", "enter", "n"),
    )


def test_cuda_graph_replay(snap_compare) -> None:
    """One cudaGraphLaunch, seven GPU events under it."""
    assert snap_compare(app_for(fixture("cuda_graph_replay")), terminal_size=WIDE, run_before=settle)


@pytest.mark.parametrize(
    ("tab", "presses"),
    [
        ("1", ("left", "left", "left", "s")),  # ops by calls, most first
        ("2", ("right", "s", "s")),  # kernels by avg, shortest first
        ("3", ("right", "right", "s")),  # annotations by kernels per call
        ("4", ("right", "right", "s")),  # steps by GPU time
        ("5", ("s",)),  # anomalies by kind
        ("6", ("right", "right", "right", "s")),  # orphans by duration
    ],
    ids=["ops", "kernels", "annotations", "steps", "anomalies", "orphans"],
)
def test_tables_sorted(snap_compare, tab: str, presses: tuple[str, ...], orphan_path: Path) -> None:
    path = orphan_path if tab == "6" else fixture("mlp_train_tbhandler_stack_memory.pt.trace")
    assert snap_compare(app_for(path), terminal_size=WIDE, run_before=keys(tab, *presses))


def test_find(snap_compare) -> None:
    """``/gelu`` then ``n``: the second match, highlighted, with its position in the status line."""
    assert snap_compare(
        app_for(fixture("mlp_eager")), terminal_size=WIDE, run_before=keys("slash", *"gelu", "enter", "n")
    )


def test_timeline_zoomed_on_training_step(snap_compare) -> None:
    """A training step: main thread, autograd thread and two streams; ``z`` zooms to the node."""

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot)
        await goto(pilot, "aten::linear", nth=2)
        await pilot.press("z")
        await settle(pilot)

    assert snap_compare(
        app_for(fixture("mlp_train_tbhandler_stack_memory.pt.trace")),
        terminal_size=(140, 44),
        run_before=run_before,
    )


def test_python_frames_hidden(snap_compare) -> None:
    """``p`` on a with_stack trace: the ops' chain without the python frames."""
    assert snap_compare(
        app_for(fixture("mlp_train_tbhandler_stack_memory.pt.trace")),
        terminal_size=WIDE,
        run_before=keys("p"),
    )


def test_kernels_only(snap_compare) -> None:
    """``k``: only nodes that launched GPU work."""
    assert snap_compare(app_for(fixture("mlp_eager")), terminal_size=WIDE, run_before=keys("k", "c", "right"))


def test_help_screen(snap_compare) -> None:
    assert snap_compare(app_for(fixture("mlp_eager")), terminal_size=WIDE, run_before=keys("f1"))


def test_error_screen(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that is not a trace: the CLI's one-line error on a screen."""
    monkeypatch.chdir(tmp_path)
    Path("notes.json").write_text('{"hello": "world"}')
    assert snap_compare(app_for(Path("notes.json")), terminal_size=(100, 20), run_before=settle)


def test_truncated_trace(snap_compare, truncated_path: Path) -> None:
    assert snap_compare(app_for(truncated_path), terminal_size=WIDE, run_before=settle)


def test_markup_injection(snap_compare, markup_path: Path) -> None:
    """Names made of markup and escape bytes render literally."""
    assert snap_compare(app_for(markup_path), terminal_size=WIDE, run_before=keys("c", "right", "down", "e"))


def test_narrow_terminal(snap_compare) -> None:
    """80×24: the details pane moves under the tree."""
    assert snap_compare(app_for(fixture("mlp_eager")), terminal_size=(80, 24), run_before=settle)


def test_deep_python_stack(snap_compare, deep_path: Path) -> None:
    """3 000 nested python frames: the hot chain opens to the kernel; depth shown as a number."""
    assert snap_compare(app_for(deep_path), terminal_size=WIDE, run_before=settle)


def test_bundled_sample_says_so(snap_compare) -> None:
    from tracetui import sample_traces

    assert snap_compare(
        app_for(sample_traces.default_trace(), sample=True), terminal_size=WIDE, run_before=settle
    )
