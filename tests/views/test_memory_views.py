"""The memory view models: lanes (levels over time, the peak), the Memory table, a node's
allocations and frees, and where ``m`` goes — plain data, no UI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from tests.insight import memory_traces as mt
from tracetui import formatting as fmt
from tracetui.insight.memory import NO_OP, memory_of
from tracetui.trace import load
from tracetui.views.memory import MemoryLane, memory_lanes, memory_table, node_memory, peak_target

FIXTURES = Path(__file__).parent.parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]


def lane(**kw: object) -> MemoryLane:
    base = {
        "label": "alloc cuda:0",
        "device": "cuda:0",
        "times": pl.Series([10, 20, 30], dtype=pl.Int64),
        "levels": pl.Series([150, 300, 120], dtype=pl.Int64),
        "start_level": 100,
        "floor": 100,
        "scale": 300,
        "peak_ns": 20,
    }
    return MemoryLane(**(base | kw))  # type: ignore[arg-type]


def test_a_lane_reads_levels_and_the_highest_in_a_slice() -> None:
    memory = lane()
    assert [memory.level_at(t) for t in (0, 10, 19, 20, 35)] == [100, 150, 150, 300, 120]
    assert memory.highest(0, 10) == 100 and memory.highest(0, 11) == 150  # [start, end)
    assert memory.highest(21, 29) == 300  # held, no event inside
    assert memory.highest(25, 40) == 300 and memory.highest(31, 40) == 120
    assert memory.fraction(0, 5) == 0 and memory.fraction(20, 21) == 1
    assert memory.peak_in(15, 25) and not memory.peak_in(21, 40)
    nothing = lane(levels=pl.Series([0, 0, 0]), start_level=0, floor=0, scale=0)
    assert nothing.fraction(0, 40) is None  # nothing held
    assert lane(floor=300).fraction(0, 40) == 1.0  # a level that never moves: full
    assert memory.legend == "cuda:0 100 B–300 B"


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 1000)), max_size=40),
    st.lists(st.tuples(st.integers(-5, 60), st.integers(1, 20)), min_size=1, max_size=30),
)
def test_a_row_of_cells_reads_what_each_cell_alone_reads(
    events: list[tuple[int, int]], cells: list[tuple[int, int]]
) -> None:
    """A timeline row asks for all its cells at once (:meth:`MemoryLane.fractions`): each must be
    what a plain scan of the events gives for that slice alone (events at a cell's start count,
    those at its end do not; cells may overlap)."""
    events.sort(key=lambda e: e[0])
    times, levels = [t for t, _ in events], [v for _, v in events]
    memory = lane(times=pl.Series(times, dtype=pl.Int64), levels=pl.Series(levels, dtype=pl.Int64), floor=0)
    starts, ends = [lo for lo, _ in cells], [lo + width for lo, width in cells]

    def plain(start: int, end: int) -> int:
        held = [v for t, v in events if t <= start]
        inside = [v for t, v in events if start < t < end]
        return max([held[-1] if held else 100, *inside])

    assert memory.highests(starts, ends) == [plain(lo, hi) for lo, hi in zip(starts, ends, strict=True)]
    assert memory.fractions(starts, ends) == [
        memory.fraction(lo, hi) for lo, hi in zip(starts, ends, strict=True)
    ]


def test_lanes_of_the_fixture() -> None:
    memory = memory_of(load(FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz"))
    allocated, reserved = memory_lanes(memory)
    device = memory.devices[0]
    assert (allocated.label, reserved.label) == ("alloc cuda:0", "resv cuda:0")
    assert allocated.peak_ns == device.peak["ts_ns"] and reserved.peak_ns is None
    assert max(allocated.levels) == device.peak["allocated"]  # the peak the summary shows
    assert allocated.scale == reserved.scale == device.peak_reserved
    assert allocated.floor == min(allocated.levels) == device.end_allocated
    assert allocated.times.is_sorted() and len(allocated.times) == 72


def test_the_memory_table_lists_every_event_and_leads_to_its_op(tmp_path: Path) -> None:
    trace = load(mt.allocator_thread_trace(tmp_path / "allocator.json"))
    spec = memory_table(memory_of(trace), trace.t0_ns)
    assert spec.key == "memory" and spec.frame.height == 5
    rows = spec.frame.iter_rows(named=True)
    texts = [{c.title: c.text(row[c.key]) for c in spec.columns} for row in rows]
    assert [t["op"] for t in texts] == ["aten::mm", NO_OP, NO_OP, NO_OP, NO_OP]
    assert [t["bytes"] for t in texts] == ["+1,000 B", "+4.9 KiB", "+2.9 KiB", "-2.9 KiB", "-1,000 B"]
    assert [t["fate"] for t in texts] == ["freed", "alive at end", "freed", "", ""]
    first = spec.frame.row(0, named=True)
    assert spec.targets(first) == ("id", first["op_id"]) and trace.event(first["op_id"])["name"] == "aten::mm"
    assert spec.targets(spec.frame.row(1, named=True)) == ("id", None)


def test_an_op_lists_what_it_and_its_callees_allocated(tmp_path: Path) -> None:
    trace = load(mt.reuse_trace(tmp_path / "reuse.json"))
    memory = memory_of(trace)
    mm = trace.event(next(i for i in trace.events["id"] if trace.event(i)["name"] == "aten::mm"))
    found = node_memory(memory, trace, mm)
    assert found is not None
    assert (found.allocations, found.allocated, found.frees, found.freed) == (2, 3072, 0, 0)
    assert found.summary == "2 allocations (3.0 KiB), 0 frees (0 B), net +3.0 KiB"
    assert [(r.size, r.op, r.note) for r in found.rows] == [
        ("+1.0 KiB", "aten::mm", "freed 21.0 µs later, in aten::add"),
        ("+2.0 KiB", "aten::mm", "alive at the end"),
    ]
    add = trace.event(next(i for i in trace.events["id"] if trace.event(i)["name"] == "aten::add"))
    notes = [r.note for r in node_memory(memory, trace, add).rows]  # type: ignore[union-attr]
    assert notes == ["allocated before the trace", "allocated 21.0 µs earlier, in aten::mm"]
    step = trace.event(next(i for i in trace.events["id"] if trace.event(i)["name"] == "ProfilerStep#1"))
    whole = node_memory(memory, trace, step, step=True)
    assert whole is not None and whole.allocations == 4 and whole.frees == 3
    assert whole.levels == ["cuda:0: start 4.0 KiB, peak 7.0 KiB, end 2.5 KiB (-1.5 KiB)"]
    relu = trace.event(next(i for i in trace.events["id"] if trace.event(i)["name"] == "aten::relu"))
    freed = node_memory(memory, trace, relu)
    assert freed is not None and (freed.allocations, freed.frees, freed.freed) == (0, 1, 1024)
    assert [r.note for r in freed.rows] == ["allocated 9.00 µs earlier, in aten::empty"]
    ones = trace.event(next(i for i in trace.events["id"] if trace.event(i)["name"] == "aten::ones"))
    assert node_memory(memory, trace, trace.event(int(trace.events["id"][0]))) is not None
    assert node_memory(memory, trace, ones).rows[0].note == "alive at the end"  # type: ignore[union-attr]


def test_m_goes_to_the_op_that_reached_the_peak(tmp_path: Path) -> None:
    trace = load(FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz")
    memory = memory_of(trace)
    target = peak_target(memory)
    device = memory.devices[0]
    assert target is not None and target.peak == device.peak["allocated"]
    assert target.op_id == device.peak["op_id"] and trace.event(target.op_id)["name"] == "aten::mm"
    assert target.message == (
        "Memory peak on cuda:0: 99.6 MiB in ProfilerStep#2, reached in aten::mm; the biggest block alive "
        "then (1.0 MiB, one of 2 of that size) was allocated by aten::mm"
    )
    outside = peak_target(memory_of(load(mt.allocator_thread_trace(tmp_path / "allocator.json"))))
    assert outside is not None and "reached outside any op" in outside.message
    assert outside.op_id == memory_of(load(tmp_path / "allocator.json")).devices[0].peak["step_id"]
    assert peak_target(memory_of(load(FIXTURES / "mlp_eager.json.gz"))) is None


def test_one_tie_rule_one_answer(tmp_path: Path) -> None:
    """Issue 37 item 5: three 500 MiB blocks alive at the peak (llama's log_softmax, nll_loss
    backward, log_softmax backward): ``m`` went to the first, the summary and ``check`` named the
    last, whose allocation reached the peak. Equal sizes: the later allocation first, everywhere."""
    from tracetui.compare.check import check_trace
    from tracetui.compare.expectations import parse_expectations
    from tracetui.insight.memory_data import memory_data

    a, size = mt.Allocator(), 500 << 20
    events = [mt.step(1, 0, 100)]
    for n, name in enumerate(
        ("aten::_log_softmax", "aten::nll_loss_backward", "aten::_log_softmax_backward_data")
    ):
        events += [mt.op(name, 10 + 10 * n, 5), a.alloc(11 + 10 * n, 0x1000 * (n + 1), size)]
    events += [mt.op("aten::relu", 50, 5), a.free(51, 0x1000), a.free(52, 0x2000), a.free(53, 0x3000)]
    trace = load(mt.write(tmp_path / "tie.json", events))
    memory = memory_of(trace)
    last = "aten::_log_softmax_backward_data"
    device = memory.devices[0]
    assert device.peak["op"] == last and device.biggest is not None and device.biggest["op"] == last
    assert device.alive_by("op")["op"].to_list()[0] == last
    assert memory.largest(1)["op"].to_list() == [last]
    target = peak_target(memory)
    assert target is not None and trace.event(target.op_id)["name"] == last  # type: ignore[arg-type]
    assert target.message.endswith(f"(500.0 MiB, one of 3 of that size) was allocated by {last}")
    data = memory_data(memory, trace.t0_ns)["devices"][0]
    assert data["peak_op"] == last and data["alive_at_peak"][0]["op"] == last
    (result,) = check_trace(
        trace, parse_expectations('[[expect]]\nmemory = "cuda:0"\npeak_allocated_max = "1 GiB"\n')
    )
    assert (
        result.actual.endswith(f"({'ProfilerStep#1'}, {last})")
        and trace.event(result.event_id)["name"] == last
    )


@pytest.mark.parametrize("name", ["mlp_train_tbhandler_stack_memory.pt.trace", "mlp_eager"])
def test_memory_views_never_import_the_ui(name: str) -> None:
    script = (
        "import sys, tracetui\n"
        "from tracetui.insight.memory import memory_of\n"
        "from tracetui.views.memory import memory_lanes, memory_table, node_memory, peak_target\n"
        "trace = tracetui.load(sys.argv[1]); memory = memory_of(trace)\n"
        "memory_lanes(memory); memory_table(memory, trace.t0_ns); peak_target(memory)\n"
        "node_memory(memory, trace, trace.event(int(trace.events['id'][0])))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(FIXTURES / f"{name}.json.gz")],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_lanes_put_gpus_first_and_stay_few(tmp_path: Path) -> None:
    gpu, cpu = mt.Allocator(device=mt.CUDA), mt.Allocator(device=mt.CPU)
    events = [mt.step(1, 0, 100), mt.op("aten::mm", 1, 50), cpu.alloc(2, 0x10, 64), gpu.alloc(3, 0x20, 128)]
    memory = memory_of(load(mt.write(tmp_path / "two.json", events)))
    assert [d.device for d in memory.devices] == ["cuda:0", "cpu"]
    labels = [lane.label for lane in memory_lanes(memory)]
    assert labels == ["alloc cuda:0", "resv cuda:0", "alloc cpu", "resv cpu"]
    assert memory.events.filter(pl.col("device") == "cpu")["op"].to_list() == ["aten::mm"]


@pytest.mark.parametrize(
    ("gpu", "cpu", "quiet"),
    [
        (1 << 30, 8, True),  # the sample's CPU lane: 0–8 bytes drew full blocks, the loudest lane
        (1 << 30, (1 << 20) - 512, True),  # under QUIET_BYTES
        (64 << 20, 1 << 20, False),  # at QUIET_BYTES and 1/64 of the GPU's: drawn as it is
        (200 << 20, 2 << 20, False),  # 1% of the GPU's: QUIET_SHARE
        (200 << 20, (2 << 20) - 512, True),  # just under 1%
        (4096, 8, True),  # under QUIET_BYTES beside a higher lane, however small that is
        (4096, 4096, False),  # no lane higher: a trace of small allocations shows them
    ],
)
def test_a_lane_tiny_against_the_others_is_drawn_quietly(
    tmp_path: Path, gpu: int, cpu: int, quiet: bool
) -> None:
    from tracetui.views.memory import QUIET_BYTES, QUIET_SHARE

    cuda, host = mt.Allocator(reserved=gpu), mt.Allocator(device=mt.CPU, reserved=0)
    events = [mt.step(1, 0, 100), mt.op("aten::mm", 1, 50)]
    events += [
        cuda.alloc(2, 0x1000, gpu),
        host.alloc(3, 0x2000, cpu),
        host.free(4, 0x2000),
        cuda.free(5, 0x1000),
    ]
    lanes = {
        lane.label: lane for lane in memory_lanes(memory_of(load(mt.write(tmp_path / "t.json", events))))
    }
    cpu_lane, gpu_lane = lanes["alloc cpu"], lanes["alloc cuda:0"]
    assert cpu_lane.quiet is quiet is (cpu < gpu and (cpu < QUIET_BYTES or cpu < QUIET_SHARE * gpu))
    assert not gpu_lane.quiet and gpu_lane.peak_ns is not None
    if quiet:
        assert cpu_lane.peak_ns is None and cpu_lane.legend == f"cpu ≤ {fmt.size(cpu)} (faint)"
    else:
        assert cpu_lane.legend == f"cpu 0 B–{fmt.size(cpu)}"
