"""Where the memory went, per device: the peak and what was alive at it, per op and per step.

Everything here reads the memory table (:mod:`tracetui.insight.memory.table`) and is computed
once, by :func:`memory_of`; the summary, ``--json``, export, ``check`` and the explorer all show
these numbers, so a peak reads the same everywhere.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui import formatting as fmt
from tracetui.insight.memory.table import SCHEMA, memory_events

if TYPE_CHECKING:
    from tracetui.trace import Trace

PEAK_FIELDS = (
    "order",
    "id",
    "ts",
    "ts_ns",
    "allocated",
    "reserved",
    "op_id",
    "op",
    "annotation_id",
    "annotation",
    "step_id",
    "step",
    "frame",
)
GROUPED_SCHEMA = {"bytes": pl.Int64, "count": pl.UInt32}
LATEST_FIRST: dict[str, Any] = {"by": ["bytes", "order"], "descending": [True, True]}
"""The one tie rule of equal sizes, on every surface: the later allocation first (at a peak, the
block whose allocation reached it, when it ties for the biggest)."""
NO_OP = "(no enclosing op)"  # how every surface shows a null op: no cpu_op held the instant
# (an allocator thread, or python code between ops)


@dataclass(frozen=True)
class DeviceMemory:
    """One device's memory: its peak, what was alive at it, its end level and its trend."""

    device: str
    events: int
    allocations: int
    frees: int
    peak: dict[str, Any]
    """The event after which the allocated total was highest (its first time): ``PEAK_FIELDS``."""
    peak_reserved: int
    end_allocated: int
    end_reserved: int
    before_trace_at_peak: int
    """Bytes alive at the peak that were allocated before the trace began (no event of theirs
    is in it): the peak minus the allocations seen alive."""
    frees_before_trace: int
    """Frees of blocks allocated before the trace began (a free with no allocation before it)."""
    freed_before_trace: int
    """Their bytes."""
    alive: pl.DataFrame
    """The allocations alive at the peak (memory-table rows), biggest first (ties: the later
    allocation first, :data:`LATEST_FIRST`)."""
    steps: pl.DataFrame
    """Per step: ``step_id``, ``step``, ``start``, ``peak``, ``end``, ``change`` (bytes)."""
    leak_suspect: bool
    verdict: str
    """The end-of-step trend in words."""

    def alive_by(self, column: str) -> pl.DataFrame:
        """The allocations alive at the peak grouped by ``column`` (``op``, ``annotation``,
        ``step``, ``frame``): ``bytes``, ``count``, biggest first (null: none, e.g. no op; equal
        bytes: the group with the later allocation first, as :data:`LATEST_FIRST`)."""
        if self.alive.is_empty():
            return pl.DataFrame(schema={column: SCHEMA[column], **GROUPED_SCHEMA})
        grouped = self.alive.group_by(column).agg(
            pl.col("bytes").sum().cast(pl.Int64).alias("bytes"),
            pl.len().cast(pl.UInt32).alias("count"),
            pl.col("order").max(),
        )
        return grouped.sort(**LATEST_FIRST).drop("order")

    @property
    def biggest(self) -> dict[str, Any] | None:
        """The largest allocation alive at the peak (memory-table row), if any was seen."""
        return self.alive.row(0, named=True) if self.alive.height else None


@dataclass(frozen=True)
class Memory:
    """A trace's memory: the table of events, each device's reading, per op name and largest."""

    events: pl.DataFrame
    devices: tuple[DeviceMemory, ...]
    ops: pl.DataFrame
    """Per device and **allocating** op: ``allocs`` and ``allocated`` (its allocations), ``frees``
    and ``freed`` (how many of them, and their bytes, were freed in the trace, wherever the free
    happened), ``net`` (allocated − freed: what of it the trace never freed), ``at_peak`` (bytes of
    it alive at the device's peak) and ``at_end`` (alive at the end: ``net``). A free is counted
    with the op that made the block, so a column never reads as a leak because the free happened
    in another op (``aten::mul`` allocated 7.7 GiB that ``autograd`` freed); the frees of blocks
    allocated before the trace are the device's :attr:`DeviceMemory.freed_before_trace`."""

    @property
    def present(self) -> bool:
        """Whether the trace has memory events (``profile_memory=True``)."""
        return self.events.height > 0

    def device(self, name: str) -> DeviceMemory | None:
        return next((d for d in self.devices if d.device == name), None)

    def largest(self, limit: int = 10, device: str | None = None) -> pl.DataFrame:
        """The largest single allocations (memory-table rows; of one device if given), biggest first
        (equal sizes: the later first, :data:`LATEST_FIRST`)."""
        allocs = pl.col("kind") == "alloc"
        if device is not None:
            allocs &= pl.col("device") == device
        rows = (  # found on the few columns that choose them: only the rows shown are gathered
            self.events.lazy()
            .with_row_index("row")
            .filter(allocs)
            .sort(**LATEST_FIRST)  # ``order`` is unique: no ties left
            .head(limit)
            .collect()["row"]
        )
        return self.events[rows]

    def below(self, track: int, pos: int, end_pos: int) -> pl.DataFrame:
        """The events that happened inside a CPU subtree (positions ``[pos, end_pos)`` on ``track``:
        an op and everything it called), in time order."""
        inside = (pl.col("track") == track) & pl.col("enclosing_pos").is_between(pos, end_pos - 1)
        return self.events.filter(inside)


def memory_of(trace: Trace) -> Memory:
    """The memory reading of ``trace`` (no devices when it has no memory events)."""
    events = memory_events(trace)
    found = (_device(name, events) for name in events["device"].unique(maintain_order=True))
    devices = tuple(sorted((d for d in found if d is not None), key=lambda d: (d.device == "cpu", d.device)))
    return Memory(events, devices, _per_op(events, devices))


def _device(name: str, events: pl.DataFrame) -> DeviceMemory | None:
    """One device's reading (None: none of its events has the allocator's totals). Each question
    reads only its columns of the device's rows (a lazy filter): no copy of the device's table."""
    rows = events.lazy().with_row_index("row").filter(pl.col("device") == name)
    timed = rows.filter(pl.col("allocated").is_not_null()).select("row", "allocated", "reserved").collect()
    if timed.is_empty():
        return None
    at = int(timed["allocated"].arg_max() or 0)  # the first time the allocated total is highest
    peak = events.row(int(timed["row"][at]), named=True)
    order = peak["order"]
    alloc, free = pl.col("kind") == "alloc", pl.col("kind") == "free"
    counts = rows.select(pl.len(), alloc.sum().alias("allocs"), free.sum().alias("frees")).collect().row(0)
    unpaired = free & pl.col("pair_id").is_null()
    before = rows.select(unpaired.sum(), -pl.col("bytes").filter(unpaired).sum()).collect().row(0)
    alive = (
        rows.filter(alloc & (pl.col("order") <= order))
        .filter(pl.col("pair_order").is_null() | (pl.col("pair_order") > order))
        .drop("row")
        .collect()
        .sort(**LATEST_FIRST)
    )
    steps = _steps(rows)
    suspect, verdict = leak_verdict(steps["end"].to_list(), int(peak["allocated"]))
    return DeviceMemory(
        device=name,
        events=int(counts[0]),
        allocations=int(counts[1]),
        frees=int(counts[2]),
        peak={k: peak[k] for k in PEAK_FIELDS},
        peak_reserved=int(timed["reserved"].max() or 0),  # type: ignore[arg-type]
        end_allocated=int(timed["allocated"][-1]),
        end_reserved=int(timed["reserved"][-1] or 0),
        before_trace_at_peak=int(peak["allocated"]) - int(alive["bytes"].sum()),
        frees_before_trace=int(before[0]),
        freed_before_trace=int(before[1] or 0),
        alive=alive,
        steps=steps,
        leak_suspect=suspect,
        verdict=verdict,
    )


def _steps(rows: pl.LazyFrame) -> pl.DataFrame:
    """Per step with memory events: the level before its first event, its peak and its end."""
    timed = rows.filter(pl.col("step_id").is_not_null() & pl.col("allocated").is_not_null())
    return (
        timed.group_by("step_id", maintain_order=True)
        .agg(
            pl.col("step").first(),
            pl.col("order").first().alias("first"),
            (pl.col("allocated").first() - pl.col("bytes").first().fill_null(0)).alias("start"),
            pl.col("allocated").max().alias("peak"),
            pl.col("allocated").last().alias("end"),
        )
        .sort("first")
        .with_columns(change=pl.col("end") - pl.col("start"))
        .drop("first")
        .collect()
    )


LEAK_MIN_STEPS = 3
"""A leak is read from at least this many step ends (two changes: one can be a one-off)."""
LEAK_JITTER = 1 << 20
"""A step ending lower than the one before by at most this is jitter, not a fall (1 MiB: the
caching allocator's small-block boundary; what a step keeps between steps, scalars, RNG state, a
lazily made buffer, moves by small blocks)."""
LEAK_GROWING_SHARE = 2 / 3
"""A leak grows the end-of-step level in at least this share of the step-to-step changes."""
LEAK_MIN_BYTES = 16 << 20
LEAK_MIN_PEAK_SHARE = 0.005
"""A leak grows the end-of-step level by at least ``max(LEAK_MIN_BYTES, LEAK_MIN_PEAK_SHARE ×
peak)`` beyond its largest single step-to-step change (so a one-off, e.g. the optimizer's state
made in the first step, is none)."""


def leak_verdict(ends: list[int], peak: int) -> tuple[bool, str]:
    """Whether the end-of-step levels ``ends`` (bytes, in step order) read as a leak on a device
    whose peak is ``peak``, and why in words. A leak suspect needs all of: at least
    :data:`LEAK_MIN_STEPS` steps; no step ending more than :data:`LEAK_JITTER` below the one before;
    growth in at least :data:`LEAK_GROWING_SHARE` of the changes; and growth, leaving out the
    largest single change, of at least ``max(LEAK_MIN_BYTES, LEAK_MIN_PEAK_SHARE × peak)``."""
    n = len(ends)
    if n == 0:
        return False, "no profiler steps: no end-of-step trend to read"
    if n == 1:
        return False, f"one step (ends at {fmt.size(ends[0])}): no trend to read"
    low, high = min(ends), max(ends)
    if low == high:
        return False, f"steady: every step ends at {fmt.size(low)} ({n} steps)"
    if n < LEAK_MIN_STEPS:
        listed = ", ".join(fmt.size(e) for e in ends)
        return False, f"{n} steps (ending at {listed}): too few to read a trend ({LEAK_MIN_STEPS} or more)"
    changes = [b - a for a, b in itertools.pairwise(ends)]
    grew, fall = sum(c > 0 for c in changes), -min(changes)
    needed = math.ceil(LEAK_GROWING_SHARE * (n - 1))
    growth = ends[-1] - ends[0]
    beyond = growth - max(changes)
    floor = max(LEAK_MIN_BYTES, LEAK_MIN_PEAK_SHARE * peak)
    within = f"steps end within {fmt.size(low)}–{fmt.size(high)}"
    if fall > LEAK_JITTER:
        return (
            False,
            f"steady: {within}; a step ends {fmt.size(fall)} below the one before (a leak never falls)",
        )
    if grew < needed:
        return False, (
            f"steady: {within}, higher than the step before in {grew} of {n - 1} "
            f"(a leak: in {needed} or more)"
        )
    if beyond < floor:
        return False, (
            f"steady: {within}; grew {fmt.size(growth)} over {n} steps, {fmt.size(max(changes))} of it "
            f"in one step (a one-off: a leak grows {fmt.size(floor)} or more beyond its largest step)"
        )
    return True, (
        f"leak suspect: the end of step grew in {grew} of {n - 1} steps and never fell by more than "
        f"{fmt.size(LEAK_JITTER)} ({fmt.size(ends[0])} → {fmt.size(ends[-1])} over {n} steps, "
        f"+{fmt.size(growth / (n - 1))} per step)"
    )


def _per_op(events: pl.DataFrame, devices: tuple[DeviceMemory, ...]) -> pl.DataFrame:
    """Per device and allocating op: what it allocated, what of that was freed (anywhere), alive at
    the peak and at the end."""
    schema = {"device": SCHEMA["device"], "op": SCHEMA["op"]}
    if events.is_empty():
        counts = {c: pl.Int64 for c in ("allocs", "allocated", "frees", "freed", "net", "at_peak", "at_end")}
        return pl.DataFrame(schema={**schema, **counts})
    freed = pl.col("alive_at_end").not_()  # an allocation paired with its free (made anywhere)
    totals = (
        events.filter(pl.col("kind") == "alloc")
        .group_by("device", "op")
        .agg(
            pl.len().cast(pl.Int64).alias("allocs"),
            pl.col("bytes").sum().cast(pl.Int64).alias("allocated"),
            freed.sum().cast(pl.Int64).alias("frees"),
            pl.col("bytes").filter(freed).sum().cast(pl.Int64).alias("freed"),
            pl.col("bytes").filter(pl.col("alive_at_end")).sum().cast(pl.Int64).alias("at_end"),
        )
    )
    peaks = [
        d.alive_by("op").select(
            pl.lit(d.device, SCHEMA["device"]).alias("device"), "op", pl.col("bytes").alias("at_peak")
        )
        for d in devices
    ]
    at_peak = pl.concat(peaks) if peaks else pl.DataFrame(schema={**schema, "at_peak": pl.Int64})
    return (
        totals.join(at_peak, on=["device", "op"], how="left", nulls_equal=True)
        .with_columns(pl.col("at_peak").fill_null(0), net=pl.col("allocated") - pl.col("freed"))
        .select("device", "op", "allocs", "allocated", "frees", "freed", "net", "at_peak", "at_end")
        .sort(
            ["at_peak", "allocated", "device", "op"], descending=[True, True, False, False], nulls_last=True
        )
    )
