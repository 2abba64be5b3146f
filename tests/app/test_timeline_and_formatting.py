"""The timeline's lanes and busy fractions, and the shared formatting helpers."""

from __future__ import annotations

import tracetui
from tests.app.conftest import fixture
from tracetui.app.formatting import fit, fmt_bytes, fmt_count, fmt_si, fmt_us, pad
from tracetui.app.palette import name_score
from tracetui.app.timeline_model import Lane, Window, lane_label, lanes, window_for
from tracetui.app.tree_model import TreeModel


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


def test_formatting() -> None:
    assert [fmt_us(v) for v in (0, 3.256, 56.38, 1234.5, 2_500_000)] == [
        "0.0 µs",
        "3.26 µs",
        "56.4 µs",
        "1.23 ms",
        "2.50 s",
    ]
    assert fmt_us(None) == ""
    assert fmt_count(1234567) == "1,234,567" and fmt_count(2.5) == "2.5"
    assert fmt_bytes(213188) == "208.2 KiB"
    assert fmt_si(38_654_705_664, "FLOP") == "38.7 GFLOP" and fmt_si(655_360, "FLOP") == "655 kFLOP"
    assert fmt_si(4.05e12, "B/s") == "4.05 TB/s" and fmt_si(12.5, "B") == "12.5 B"
    assert fit("aten::linear", 8) == "aten::l…"
    assert fit("核函数名字", 5) == "核函…"
    assert pad("ab", 5, "right") == "   ab" and pad("abcdef", 4) == "abc…"


def test_palette_name_score_is_linear_and_ranks_substrings_first() -> None:
    kernel = "void at::native::vectorized_elementwise_kernel<8, at::native::GeluCUDAKernelImpl(" * 8
    assert name_score("aten::gelu", "aten::gelu") == 1.0
    assert name_score("gelu", "aten::gelu") > name_score("gelu", kernel) > 0
    assert name_score("aten gelu", "aten::gelu") > name_score("agl", "aten::gelu") > 0
    assert name_score("aten::gelu", kernel) == 0.3  # the letters in order, found at once
    assert name_score("xyz", "aten::gelu") == 0.0
