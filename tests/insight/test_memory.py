"""The memory model against an independent replay of the events, on a real trace and on small
traces made for one case each (address reuse, no enclosing op, a leak)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from tests.insight import memory_traces as mt
from tests.insight.memory_replay import innermost, read, replay
from tracetui.insight.memory import memory_of
from tracetui.insight.memory.pairing import pair_events
from tracetui.insight.memory.table import SCHEMA
from tracetui.sample_traces import default_trace
from tracetui.trace import load

FIXTURES = Path(__file__).parent.parent / "fixtures"
MEMORY_TRACE = FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz"
TWO_DEVICES = default_trace().parent / "transformer_block_train_memory.json.gz"  # as installed
SOURCE_LINE = re.compile(r"\(\d+\): ")  # a python frame of a source line


@pytest.fixture(scope="module")
def fixture_memory():  # type: ignore[no-untyped-def]
    return memory_of(load(MEMORY_TRACE))


def test_the_peak_and_what_was_alive_match_a_plain_replay(fixture_memory) -> None:  # type: ignore[no-untyped-def]
    expected = replay(MEMORY_TRACE)
    assert list(expected.peak) == [(1, 0)]
    device = fixture_memory.device("cuda:0")
    assert device is not None
    assert device.peak["allocated"] == expected.peak[(1, 0)] == 104_425_472
    assert device.peak["id"] == expected.peak_index[(1, 0)]
    by_op = {row["op"]: (row["bytes"], row["count"]) for row in device.alive_by("op").iter_rows(named=True)}
    assert by_op == expected.alive_by_op((1, 0))
    seen = sum(size for size, _ in expected.alive[(1, 0)].values())
    assert device.before_trace_at_peak == expected.peak[(1, 0)] - seen > 0


def test_every_event_has_the_innermost_op_of_a_replay(fixture_memory) -> None:  # type: ignore[no-untyped-def]
    expected = replay(MEMORY_TRACE).ops
    events = fixture_memory.events
    assert events.height == len(expected) == 72
    assert dict(zip(events["id"].to_list(), events["op"].to_list(), strict=True)) == expected
    assert events["op"].null_count() > 0  # frees after an op returned, in python code
    assert events.filter(pl.col("op").is_null())["frame"].null_count() == 0  # … whose frame is known


def test_every_event_has_the_innermost_python_frame_of_a_replay(fixture_memory) -> None:  # type: ignore[no-untyped-def]
    raw = read(MEMORY_TRACE)
    instants = [i for i, e in enumerate(raw) if e.get("ph") in ("i", "I") and e.get("name") == "[memory]"]
    expected = innermost(
        raw, instants, lambda e: e.get("cat") == "python_function" and bool(SOURCE_LINE.search(e["name"]))
    )
    events = fixture_memory.events
    assert dict(zip(events["id"].to_list(), events["frame"].to_list(), strict=True)) == expected
    assert 0 < events["frame"].null_count() < events.height  # some instants are in no source line


def test_each_device_is_read_from_its_own_events_alone() -> None:
    memory = memory_of(load(TWO_DEVICES))
    expected = replay(TWO_DEVICES)
    events = memory.events
    assert [d.device for d in memory.devices] == ["cuda:0", "cpu"]
    labels = {(1, 0): "cuda:0", (0, -1): "cpu"}
    assert {labels[k]: v for k, v in expected.peak.items()} == {
        d.device: d.peak["allocated"] for d in memory.devices
    }
    for device in memory.devices:
        own = events.filter(pl.col("device") == device.device)
        timed = own.filter(pl.col("allocated").is_not_null())
        allocs = own.filter(pl.col("kind") == "alloc").rows(named=True)
        assert (device.events, device.allocations) == (own.height, len(allocs))
        assert device.frees == own.filter(pl.col("kind") == "free").height
        first_peak = timed.filter(pl.col("allocated") == timed["allocated"].max())["order"].min()
        assert device.peak["order"] == first_peak
        assert (device.end_allocated, device.peak_reserved) == (
            timed["allocated"][-1],
            timed["reserved"].max(),
        )
        by_size = sorted(allocs, key=lambda row: (-row["bytes"], -row["order"]))  # ties: the later first
        assert memory.largest(5, device.device).rows(named=True) == by_size[:5]
        alive = [
            r
            for r in by_size
            if r["order"] <= first_peak and (r["pair_order"] or first_peak + 1) > first_peak
        ]
        assert device.alive.rows(named=True) == alive
    every = sorted(
        events.filter(pl.col("kind") == "alloc").rows(named=True), key=lambda r: (-r["bytes"], -r["order"])
    )
    assert memory.largest(7).rows(named=True) == every[:7]


def test_every_event_is_one_row_in_time_order(fixture_memory) -> None:  # type: ignore[no-untyped-def]
    raw = [e for e in read(MEMORY_TRACE) if e.get("name") == "[memory]"]
    events = fixture_memory.events
    assert sorted(events["bytes"].to_list()) == sorted(e["args"]["Bytes"] for e in raw)
    assert events["ts_ns"].is_sorted()
    assert events["order"].to_list() == list(range(len(raw)))
    assert set(events["step"].drop_nulls()) == {"ProfilerStep#2", "ProfilerStep#3"}


def test_address_reuse_pairs_each_allocation_with_its_own_free(tmp_path: Path) -> None:
    memory = memory_of(load(mt.reuse_trace(tmp_path / "reuse.json")))
    rows = {row["ts"]: row for row in memory.events.iter_rows(named=True)}
    assert rows[2]["pair_id"] == rows[11]["id"] and rows[11]["pair_id"] == rows[2]["id"]
    assert rows[21]["pair_id"] == rows[42]["id"] and rows[42]["pair_id"] == rows[21]["id"]
    assert rows[2]["lifetime_us"] == 9 and rows[21]["lifetime_us"] == 21
    assert rows[22]["alive_at_end"] and rows[61]["alive_at_end"]
    assert rows[41]["pair_id"] is None  # freed what was allocated before the trace
    assert [rows[t]["op"] for t in (2, 11, 21, 22, 41, 61)] == [
        "aten::empty",
        "aten::relu",
        "aten::mm",
        "aten::mm",
        "aten::add",
        "aten::ones",
    ]
    device = memory.devices[0]
    assert (device.device, device.peak["allocated"], device.peak["ts"]) == ("cuda:0", 7168, 22)
    assert device.alive_by("op").rows() == [("aten::mm", 3072, 2)]
    assert device.before_trace_at_peak == 4096
    assert device.end_allocated == 2560
    assert device.biggest is not None and device.biggest["ts"] == 22


def test_events_with_no_enclosing_op_have_a_null_op(tmp_path: Path) -> None:
    memory = memory_of(load(mt.allocator_thread_trace(tmp_path / "allocator.json")))
    by_ts = {row["ts"]: row for row in memory.events.iter_rows(named=True)}
    assert by_ts[6]["op"] == "aten::mm"
    assert [by_ts[t]["op"] for t in (20, 21, 30)] == [None, None, None]
    assert [by_ts[t]["track"] for t in (20, 21, 30)] == [None, None, None]  # a thread with no events
    device = memory.devices[0]
    assert device.peak["allocated"] == 9000 and device.peak["op"] is None
    assert device.alive_by("op").rows() == [(None, 8000, 2), ("aten::mm", 1000, 1)]
    ops = memory.ops.filter(pl.col("op").is_null())
    # frees are counted with the allocating op: of the two blocks allocated outside any op, one was
    # freed (3000 B); the free at 40, outside any op too, freed aten::mm's block
    assert ops.select("allocs", "allocated", "frees", "freed", "net", "at_peak").row(0) == (
        2,
        8000,
        1,
        3000,
        5000,
        8000,
    )
    mm = memory.ops.filter(pl.col("op") == "aten::mm")
    assert mm.select("allocs", "allocated", "frees", "freed", "net", "at_end").row(0) == (
        1,
        1000,
        1,
        1000,
        0,
        0,
    )


def test_a_growing_end_of_step_level_is_a_leak_suspect(tmp_path: Path) -> None:
    leaking = memory_of(load(mt.leaking_trace(tmp_path / "leak.json"))).devices[0]
    assert leaking.leak_suspect
    assert leaking.verdict == (
        "leak suspect: the end of step grew in 2 of 2 steps and never fell by more than 1.0 MiB "
        "(33.0 MiB → 97.0 MiB over 3 steps, +32.0 MiB per step)"
    )
    assert leaking.steps["change"].to_list() == [32 << 20] * 3
    steady = memory_of(load(mt.leaking_trace(tmp_path / "steady.json", leak=False))).devices[0]
    assert not steady.leak_suspect and steady.verdict.startswith("steady")
    assert steady.steps.select("start", "peak", "end").row(0) == (1 << 20, (1 << 20) + 4096, 1 << 20)
    # issue 37 item 5: 512 B kept a step was a "leak suspect"; it is far under what a leak needs
    crumbs = memory_of(load(mt.leaking_trace(tmp_path / "crumbs.json", steps=5, kept=512))).devices[0]
    assert not crumbs.leak_suspect
    assert crumbs.verdict == (
        "steady: steps end within 1.0 MiB–1.0 MiB; grew 2.0 KiB over 5 steps, 512 B of it in one step "
        "(a one-off: a leak grows 16.0 MiB or more beyond its largest step)"
    )


MIB = 1 << 20


@pytest.mark.parametrize(
    ("ends", "peak", "suspect", "verdict"),
    [
        ([], 0, False, "no profiler steps: no end-of-step trend to read"),
        (
            [0, 100 * MIB],
            0,
            False,
            "2 steps (ending at 0 B, 100.0 MiB): too few to read a trend",
        ),  # LEAK_MIN_STEPS
        ([0, 100 * MIB, 200 * MIB], 0, True, "leak suspect"),
        ([5 * MIB] * 4, 0, False, "steady: every step ends at 5.0 MiB (4 steps)"),
        # never falls by more than LEAK_JITTER: 1 MiB + 1 byte is a fall, 1 MiB is jitter
        ([0, 100 * MIB, 99 * MIB - 1, 200 * MIB], 0, False, "steady: steps end within"),
        ([0, 100 * MIB, 99 * MIB, 200 * MIB], 0, True, "leak suspect"),
        # grows in at least 2/3 of the changes: 2 of 3 is enough, 2 of 4 is not
        ([0, 50 * MIB, 50 * MIB, 100 * MIB], 0, True, "leak suspect"),
        (
            [0, 50 * MIB, 50 * MIB, 50 * MIB, 100 * MIB],
            0,
            False,
            "steady: steps end within 0 B–100.0 MiB, higher",
        ),
        # beyond the largest change, at least max(16 MiB, 0.5% of the peak)
        ([0, 8 * MIB, 16 * MIB, 24 * MIB], 0, True, "leak suspect"),  # 24 − 8 = 16 MiB
        ([0, 8 * MIB, 16 * MIB, 24 * MIB - 1], 0, False, "steady: steps end within"),
        ([0, 8 * MIB, 16 * MIB, 24 * MIB], 4 * 1024 * MIB, False, "steady: "),  # 0.5% of 4 GiB: 20.5 MiB
        ([0, 11 * MIB, 22 * MIB, 33 * MIB], 4 * 1024 * MIB, True, "leak suspect"),  # 22 MiB beyond
        # a one-off (the optimizer's state in the first step) with crumbs after it
        ([0, 2048 * MIB, 2048 * MIB + 512, 2048 * MIB + 1024], 0, False, "steady: "),
    ],
)
def test_the_leak_rule_s_thresholds(ends: list[int], peak: int, suspect: bool, verdict: str) -> None:
    from tracetui.insight.memory import leak_verdict

    found, text = leak_verdict(ends, peak)
    assert found is suspect and text.startswith(verdict), text


def test_no_trace_at_hand_is_a_leak_suspect() -> None:
    """The samples and fixtures with memory events: every device is steady (their steps end level)."""
    for path in (
        default_trace().parent / "transformer_block_train_memory.json.gz",
        FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz",
        FIXTURES / "capture_linear_eager_fp32.json.gz",
    ):
        for device in memory_of(load(path)).devices:
            assert not device.leak_suspect, (path.name, device.device, device.verdict)


def test_a_trace_without_memory_events_has_no_devices(fixture_memory) -> None:  # type: ignore[no-untyped-def]
    memory = memory_of(load(FIXTURES / "mlp_eager.json.gz"))
    assert not memory.present and memory.devices == () and memory.ops.is_empty()
    assert memory.events.schema == fixture_memory.events.schema == pl.Schema(SCHEMA)


# ---- pairing: any valid allocator history ---------------------------------------------------------
@st.composite
def histories(draw: st.DrawFn) -> list[tuple[int, int]]:
    """(addr, ±size) in time order, as a caching allocator could write them (addresses reused)."""
    live: dict[int, int] = {}
    out: list[tuple[int, int]] = []
    for _ in range(draw(st.integers(1, 60))):
        free_addrs = [a for a in range(8) if a not in live]
        if live and (not free_addrs or draw(st.booleans())):
            addr = draw(st.sampled_from(sorted(live)))
            out.append((addr, -live.pop(addr)))
        else:
            addr = draw(st.sampled_from(free_addrs))
            live[addr] = draw(st.sampled_from([512, 1024, 2048]))
            out.append((addr, live[addr]))
    return out


@settings(max_examples=examples(200), deadline=None)
@given(histories(), st.booleans())
def test_pairing_matches_a_replay(history: list[tuple[int, int]], cut_start: bool) -> None:
    if cut_start:  # the trace begins mid-history: some frees have no allocation in it
        history = history[len(history) // 3 :]
    frame = pl.DataFrame(
        {
            "id": list(range(len(history))),
            "device_type": [1] * len(history),
            "device_id": [0] * len(history),
            "addr": [a for a, _ in history],
            "bytes": [b for _, b in history],
            "order": list(range(len(history))),
            "ts_ns": [10 * i for i in range(len(history))],
        },
        schema_overrides={"id": pl.UInt32, "order": pl.UInt32},
    ).with_columns(kind=pl.when(pl.col("bytes") > 0).then(pl.lit("alloc")).otherwise(pl.lit("free")))
    expected: dict[int, int] = {}
    open_blocks: dict[int, int] = {}
    for index, (addr, size) in enumerate(history):
        if size > 0:
            open_blocks[addr] = index
        elif addr in open_blocks:
            start = open_blocks.pop(addr)
            expected[start], expected[index] = index, start
    found = pair_events(frame)
    assert dict(zip(found["id"].to_list(), found["pair_id"].to_list(), strict=True)) == expected


# ---- where an instant happened: any nesting of ops on several threads ------------------------------
@st.composite
def threads_of_ops(draw: st.DrawFn) -> list[tuple[int, int, int]]:
    """(tid, start, end) of properly nested ops (µs) on two threads whose times interleave: equal
    starts (an op and its first child), equal ends, identical spans, and gaps."""
    ops: list[tuple[int, int, int]] = []
    for tid in (1, 2):
        kept: list[tuple[int, int]] = []
        for _ in range(draw(st.integers(0, 12))):
            start = draw(st.integers(0, 12))
            end = start + draw(st.integers(0, 8))
            nests = all(
                end <= s or start >= e or (s <= start and end <= e) or (start <= s and e <= end)
                for s, e in kept
            )
            if nests:  # no partial overlaps: each op holds or is held by or is apart from the others
                kept.append((start, end))
        ops += [(tid, start, end) for start, end in kept]
    return ops


@settings(max_examples=examples(80), deadline=None)
@given(
    threads_of_ops(),
    st.lists(st.tuples(st.sampled_from([1, 2, 3]), st.integers(-1, 21)), min_size=1, max_size=20),
)
def test_each_instant_is_placed_in_the_innermost_op_holding_it(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[int, int, int]], instants: list[tuple[int, int]]
) -> None:
    """Against a plain scan: the innermost op of the instant's thread whose span holds it (bounds
    included); of equal starts the shorter, of identical spans the later written. Thread 3 has no ops."""
    alloc = mt.Allocator()
    events = [mt.op(f"op{k}", start, end - start, tid=tid) for k, (tid, start, end) in enumerate(ops)]
    events += [alloc.alloc(ts, addr, 512, tid=tid) for addr, (tid, ts) in enumerate(instants)]
    path = mt.write(tmp_path_factory.mktemp("nest") / "t.json", events)
    table = memory_of(load(path)).events.sort("id")
    expected = []
    for tid, ts in instants:
        holders = [
            (start, -end, k) for k, (t, start, end) in enumerate(ops) if t == tid and start <= ts <= end
        ]
        expected.append(max(holders)[2] if holders else None)  # op k is event k of the file
    assert table["enclosing_id"].to_list() == expected
    assert table["op"].to_list() == [None if k is None else f"op{k}" for k in expected]
    threads = {t for t, _, _ in ops}  # a thread with no events has no CPU track (thread 3 never has)
    assert table["track"].is_null().to_list() == [tid not in threads for tid, _ in instants]


def test_each_event_is_labelled_with_its_device(tmp_path: Path) -> None:
    """Labels as torch prints them (ROCm's GPUs are ``cuda``), made once per device and placed on
    every row: the CPU allocator's device -1 is ``cpu``, an unknown type keeps its number, and an
    event with no device is ``unknown``."""
    devices = [(1, 0), (0, -1), (19, 1), (42, 0), (1, 3), None, (1, 0)]
    events = [mt.op("aten::empty", 0, 100)]
    for k, device in enumerate(devices):
        event = mt.mem(1 + k, addr=k, nbytes=512, allocated=512 * (k + 1), device=device or (1, 0))
        if device is None:
            del event["args"]["Device Type"], event["args"]["Device Id"]
        events.append(event)
    table = memory_of(load(mt.write(tmp_path / "devices.json", events))).events
    assert table.sort("order")["device"].to_list() == [
        "cuda:0",
        "cpu",
        "mtia:1",
        "type 42:0",
        "cuda:3",
        "unknown",
        "cuda:0",
    ]


def test_a_trace_with_memory_events_and_no_cpu_event_reads_them_all(tmp_path: Path) -> None:
    """Memory events beside GPU events only, or alone: every event is read, none placed in an op
    (before, the placing failed with an out-of-bounds gather)."""
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 5, "args": {}}
    for name, others in (("alone", []), ("gpu_only", [kernel])):
        alloc = mt.Allocator()
        events = [*others, alloc.alloc(2, 1, 512), alloc.alloc(3, 2, 1024), alloc.free(4, 1)]
        memory = memory_of(load(mt.write(tmp_path / f"{name}.json", events)))
        assert memory.events.height == 3, name
        assert memory.events["op"].null_count() == 3 and memory.events["enclosing_id"].null_count() == 3
        device = memory.device("cuda:0")
        assert device is not None and device.peak["allocated"] == 1536
        assert memory.ops["op"].to_list() == [None] and memory.ops.schema["op"] == SCHEMA["op"]
