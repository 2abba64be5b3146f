"""Snapshots of memory in the explorer (SVGs in __snapshots__): the Memory table, the memory lanes
with the peak marked, the details of an op's allocations, and all of it at 80×24."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from tests.app.conftest import fixture, goto, keys, settle
from tests.insight import memory_traces as mt
from tracetui.app.app import TraceApp

MEMORY = fixture("mlp_train_tbhandler_stack_memory.pt.trace")
SIZE = (140, 44)


def test_memory_table(snap_compare) -> None:
    """7: every allocation and free in time order, the op (or none), lifetime and fate."""
    assert snap_compare(TraceApp(MEMORY), terminal_size=SIZE, run_before=keys("7"))


def test_memory_peak(snap_compare) -> None:
    """m: the op of the biggest block alive at the peak; the lanes of its step mark the peak (▲)."""
    assert snap_compare(TraceApp(MEMORY), terminal_size=SIZE, run_before=keys("m"))


def test_details_with_allocations(snap_compare, tmp_path: Path) -> None:
    """An op's allocations and frees, each with its fate (freed where, alive at the end)."""

    async def run_before(pilot: Pilot[int]) -> None:
        await settle(pilot)
        await goto(pilot, "aten::mm")

    path = mt.reuse_trace(tmp_path / "reuse.json")
    assert snap_compare(TraceApp(path), terminal_size=SIZE, run_before=run_before)


def test_memory_narrow_terminal(snap_compare) -> None:
    """80×24 after m: the details under the tree, the memory lanes under the busy ones."""
    assert snap_compare(TraceApp(MEMORY), terminal_size=(80, 24), run_before=keys("m"))
