"""The timeline's lanes and busy fractions."""

from __future__ import annotations

import tracetui
from tests.app.conftest import fixture
from tracetui.views.timeline import Lane, Window, lane_label, lanes, window_for
from tracetui.views.tree import TreeModel


def test_busy_fraction_over_merged_intervals() -> None:
    lane = Lane("GPU 0 s7", "gpu", [0, 100], [50, 200], [0, 100], [50, 200])
    assert lane.busy(0, 50) == 1.0
    assert lane.busy(50, 100) == 0.0
    assert lane.busy(25, 125) == 0.5
    assert lane.busy(0, 200) == 0.75
    assert lane.block_at(120) == 1 and lane.block_at(70) is None
    assert lane.block_in(30, 110) == 0 and lane.block_in(90, 300) == 1 and lane.block_in(60, 90) is None


def test_step_window_lanes_show_threads_and_streams() -> None:
    trace = tracetui.load(fixture("mlp_train_tbhandler_stack_memory.pt.trace"))
    model = TreeModel(trace)
    step = model.step_ids[0]
    window = window_for(trace, step)
    assert window.title == "ProfilerStep#2" and window.end_ns >= trace.event(step)["end_ns"]
    found = lanes(trace, window)
    assert [lane.label for lane in found] == ["CPU python3", "CPU pt_autograd_0", "GPU 0 s7", "GPU 0 s13"]
    gpu = found[2]
    assert 0 < gpu.busy(window.start_ns, window.end_ns) < 1  # idle gaps are visible


def test_empty_window_has_no_lanes() -> None:
    trace = tracetui.load(fixture("mlp_eager"))
    assert lanes(trace, Window(0, 1, "before the trace")) == []


def test_lane_labels() -> None:
    assert lane_label("thread 472 (pt_autograd_0)", "424", "472", "cpu") == "CPU pt_autograd_0"
    assert lane_label(None, "424", "472", "cpu") == "CPU 472"
    assert lane_label("stream 7", "0", "7", "gpu") == "GPU 0 s7"
