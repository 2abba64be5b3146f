"""Memory for the explorer, as plain data: the timeline's memory lanes, the Memory table, and the
allocations and frees of one node for the details pane. Pure; everything reads one
:class:`~tracetui.insight.memory.Memory` (the numbers ``summary`` shows)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui import formatting as fmt
from tracetui.insight.memory import NO_OP, Memory
from tracetui.views.table_spec import Column, TableSpec

if TYPE_CHECKING:
    from tracetui.trace import Trace

MAX_MEMORY_LANES = 4
MAX_LISTED = 20
QUIET_BYTES = 1 << 20
"""A lane whose highest level is under this (1 MiB), beside a higher one, is drawn quietly: a few
bytes (the CPU allocator's scalars) drawn full height would be the loudest lane."""
QUIET_SHARE = 0.01
"""So is a lane whose highest level is under this share of the highest lane's. The highest lane is
never quiet (a trace of small allocations alone still shows them)."""


@dataclass(frozen=True)
class MemoryLane:
    """A device's allocated (or reserved) total over time: the level after each event, in ns.

    ``times`` and ``levels`` are columns (Int64), not lists: a trace with 440k memory events would
    hold ~50 MB of python ints for its lanes; a slice of time is found by binary search."""

    label: str
    device: str
    times: pl.Series
    levels: pl.Series
    start_level: int
    """The level before the first event."""
    floor: int
    """The level an empty cell stands for: the device's lowest allocated level in the trace (the
    memory held throughout, e.g. the weights, would flatten every change above it)."""
    scale: int
    """The level a full cell stands for: the device's highest, reserved included."""
    peak_ns: int | None = None
    """Where the device's peak is marked (the allocated lane only)."""
    quiet: bool = False
    """Tiny against the other lanes, or under :data:`QUIET_BYTES`: drawn as a faint line where
    anything is held, with no peak mark (:func:`memory_lanes`)."""

    @property
    def legend(self) -> str:
        """``cuda:0 97.6 MiB–102.0 MiB``: what an empty and a full cell stand for; a quiet lane:
        ``cpu ≤ 8 B (faint)``."""
        if self.quiet:
            return f"{self.device} ≤ {fmt.size(self.scale)} (faint)"
        return f"{self.device} {fmt.size(self.floor)}–{fmt.size(self.scale)}"

    def level_at(self, t: int) -> int:
        """The level at ``t`` (after every event at or before it)."""
        return self.highest(t, t)  # an empty slice: the level at its start

    def highest(self, start: int, end: int) -> int:
        """The highest level in ``[start, end)``."""
        return self.highests([start], [end])[0]

    def highests(self, starts: Sequence[int], ends: Sequence[int]) -> list[int]:
        """:meth:`highest` of each slice ``[starts[i], ends[i])`` (a timeline's cells): the level
        at each start in one search, then the events inside each slice."""
        times, levels = self.times, self.levels
        at = times.search_sorted(pl.Series(starts, dtype=pl.Int64), side="right")  # events up to a start
        ahead = times.search_sorted(pl.Series(ends, dtype=pl.Int64), side="left")  # events before an end
        before = levels.gather((at.cast(pl.Int64) - 1).clip(0)).to_list() if len(levels) else [None] * len(at)
        result = []
        for first, last, level in zip(at.to_list(), ahead.to_list(), before, strict=True):
            here = level if first else self.start_level
            if last > first:  # events strictly inside the slice
                inside = levels.slice(first, last - first).max()
                here = max(here, int(inside))  # type: ignore[arg-type]
            result.append(here)
        return result

    def fraction(self, start: int, end: int) -> float | None:
        """The highest level in ``[start, end)`` between :attr:`floor` (0) and :attr:`scale` (1);
        None when nothing is held."""
        return self.fractions([start], [end])[0]

    def fractions(self, starts: Sequence[int], ends: Sequence[int]) -> list[float | None]:
        """:meth:`fraction` of each slice (a timeline's cells, in one pass)."""
        span = self.scale - self.floor
        return [
            None if level <= 0 else (level - self.floor) / span if span > 0 else 1.0
            for level in self.highests(starts, ends)
        ]

    def peak_in(self, start: int, end: int) -> bool:
        return self.peak_ns is not None and start <= self.peak_ns < end


def memory_lanes(memory: Memory) -> list[MemoryLane]:
    """Per device (GPUs first): its allocated lane, with the peak marked, and its reserved lane
    when the allocator reserves (the CPU's does not). Each lane is scaled to its device; a device
    lower than the highest whose highest level is under :data:`QUIET_BYTES` or :data:`QUIET_SHARE`
    of the highest device's is quiet (a CPU allocator's 8 bytes beside a GPU's gigabytes)."""
    result: list[MemoryLane] = []
    timed = memory.events.lazy().filter(pl.col("allocated").is_not_null() & pl.col("ts_ns").is_not_null())
    for device in memory.devices:
        rows = (  # only the columns a lane reads (the table has 29)
            timed.filter(pl.col("device") == device.device)
            .select("ts_ns", "allocated", "reserved", "bytes")  # Int64 (the table's SCHEMA)
            .collect()
        )
        if rows.is_empty():
            continue
        first = rows.row(0, named=True)
        start = first["allocated"] - (first["bytes"] or 0)
        floor = max(0, min(start, int(rows["allocated"].min() or 0)))  # type: ignore[arg-type]
        scale = max(device.peak["allocated"], device.peak_reserved)
        times = rows["ts_ns"]
        result.append(
            MemoryLane(
                label=f"alloc {device.device}",
                device=device.device,
                times=times,
                levels=rows["allocated"],
                start_level=start,
                floor=floor,
                scale=scale,
                peak_ns=device.peak["ts_ns"],
            )
        )
        if device.peak_reserved > 0:
            reserved = rows["reserved"].fill_null(0)
            lane = MemoryLane(
                f"resv {device.device}", device.device, times, reserved, int(reserved[0]), floor, scale
            )
            result.append(lane)
    loudest = max((lane.scale for lane in result), default=0)
    result = [
        replace(lane, quiet=True, peak_ns=None)
        if lane.scale < loudest and (lane.scale < QUIET_BYTES or lane.scale < QUIET_SHARE * loudest)
        else lane
        for lane in result
    ]
    return result[:MAX_MEMORY_LANES]


def _counted(n: int, noun: str) -> str:
    return f"{fmt.count(n)} {noun}{'' if n == 1 else 's'}"


def _signed_size(value: int) -> str:
    return ("+" if value > 0 else "") + fmt.size(value)


def memory_table(memory: Memory, t0_ns: int) -> TableSpec:
    """The Memory table: every allocation and free in time order; Enter goes to its op."""
    frame = memory.events.with_columns(
        time_ms=(pl.col("ts_ns") - t0_ns) / 1_000_000,
        op_shown=pl.col("op").fill_null(NO_OP),
        fate=pl.when(pl.col("kind") == "alloc")
        .then(pl.when(pl.col("alive_at_end")).then(pl.lit("alive at end")).otherwise(pl.lit("freed")))
        .when(pl.col("kind") == "free")
        .then(pl.when(pl.col("pair_id").is_null()).then(pl.lit("before trace")).otherwise(pl.lit("")))
        .otherwise(pl.lit("")),
    )
    return TableSpec(
        key="memory",
        title="Memory",
        frame=frame,
        columns=[
            Column("time_ms", "time (ms)", 11, fmt=lambda v: fmt.fixed(v, 3)),
            Column("device", "device", 7, "left"),
            Column("bytes", "bytes", 11, fmt=_signed_size),
            Column("allocated", "allocated", 10, fmt=fmt.size),
            Column("reserved", "reserved", 10, fmt=fmt.size),
            Column("op_shown", "op", 26, "left"),
            Column("lifetime_us", "lifetime", 10, fmt=fmt.duration),
            Column("fate", "fate", 12, "left"),
            Column("annotation", "annotation", 14, "left"),
            Column("step", "step", 15, "left"),
            Column("frame", "python frame", 0, "left"),
        ],
        id_column="op_id",
        empty="no memory events: profile with profile_memory=True (tracetui capture --memory)",
    )


@dataclass(frozen=True)
class MemoryRow:
    """One allocation or free as the details pane lists it."""

    offset: str
    size: str
    op: str
    note: str


@dataclass(frozen=True)
class NodeMemory:
    """A node's allocations and frees (its subtree; a step: everything in its window)."""

    allocations: int
    allocated: int
    frees: int
    freed: int
    rows: list[MemoryRow]
    more: int
    levels: list[str]
    """A step's start / peak / end per device."""

    @property
    def summary(self) -> str:
        return (
            f"{_counted(self.allocations, 'allocation')} ({fmt.size(self.allocated)}), "
            f"{_counted(self.frees, 'free')} ({fmt.size(self.freed)}), "
            f"net {_signed_size(self.allocated - self.freed)}"
        )


def node_memory(memory: Memory, trace: Trace, event: dict[str, Any], step: bool = False) -> NodeMemory | None:
    """What ``event`` (a CPU tree row) and everything below it allocated and freed; for a step,
    every event in its window (the autograd thread's too). None when there is none."""
    if step:
        rows = memory.events.filter(pl.col("step_id") == event["id"])
    elif event.get("pos") is not None and event.get("end_pos") is not None:
        rows = memory.below(event["track"], event["pos"], event["end_pos"])
    else:
        return None
    levels = []
    if step:
        for device in memory.devices:
            found = device.steps.filter(pl.col("step_id") == event["id"])
            if found.height:
                s = found.row(0, named=True)
                levels.append(
                    f"{device.device}: start {fmt.size(s['start'])}, peak {fmt.size(s['peak'])}, "
                    f"end {fmt.size(s['end'])} ({_signed_size(s['change'])})"
                )
    if rows.is_empty():
        return None
    alloc, free = rows.filter(pl.col("kind") == "alloc"), rows.filter(pl.col("kind") == "free")
    names = memory.events.select(
        pl.col("id").alias("pair_id"), pl.col("op").alias("pair_op"), pl.col("ts_ns").alias("pair_ns")
    )
    shown = rows.head(MAX_LISTED).join(names, on="pair_id", how="left", maintain_order="left")
    listed = [
        MemoryRow(
            offset=fmt.offset(row["ts_ns"], trace.t0_ns),
            size=_signed_size(row["bytes"] or 0),
            op=row["op"] or NO_OP,
            note=_fate(row),
        )
        for row in shown.iter_rows(named=True)
    ]
    return NodeMemory(
        allocations=alloc.height,
        allocated=int(alloc["bytes"].sum()),
        frees=free.height,
        freed=-int(free["bytes"].sum()),
        rows=listed,
        more=max(0, rows.height - MAX_LISTED),
        levels=levels,
    )


def _fate(row: dict[str, Any]) -> str:
    """What became of an allocation, or where a freed block came from."""
    where = f"in {row['pair_op']}" if row["pair_op"] is not None else "outside any op"
    if row["kind"] == "alloc":
        if row["pair_id"] is None:
            return "alive at the end"
        return f"freed {fmt.duration(row['lifetime_us'])} later, {where}"
    if row["kind"] == "free":
        if row["pair_id"] is None:
            return "allocated before the trace"
        return f"allocated {fmt.duration((row['ts_ns'] - row['pair_ns']) / 1000)} earlier, {where}"
    return ""


@dataclass(frozen=True)
class PeakTarget:
    """Where ``m`` goes: the op during which a device's allocated total reached its peak (the op
    ``summary`` and ``check`` name as the peak's), else the peak's step."""

    device: str
    peak: int
    op_id: int | None
    message: str


def peak_target(memory: Memory) -> PeakTarget | None:
    """The first device's (GPUs first) peak, the op that reached it and the biggest block alive
    then (ties: the later allocation, as every surface breaks them), in words."""
    if not memory.devices:
        return None
    device = memory.devices[0]
    peak = device.peak
    where = f" in {peak['step']}" if peak["step"] else ""
    head = f"Memory peak on {device.device}: {fmt.size(peak['allocated'])}{where}"
    reached = (
        f", reached in {peak['op']}" if peak["op"] is not None else f", reached outside any op ({NO_OP})"
    )
    target = peak["op_id"] if peak["op_id"] is not None else peak["step_id"]
    biggest = device.biggest
    if biggest is None:
        block = "every block alive then came from before the trace"
    else:
        ties = int((device.alive["bytes"] == biggest["bytes"]).sum())
        size = fmt.size(biggest["bytes"]) + (f", one of {ties} of that size" if ties > 1 else "")
        by = biggest["op"] if biggest["op"] is not None else f"outside any op ({NO_OP})"
        block = f"the biggest block alive then ({size}) was allocated by {by}"
    return PeakTarget(device.device, peak["allocated"], target, f"{head}{reached}; {block}")
