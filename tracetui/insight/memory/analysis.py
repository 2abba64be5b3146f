"""Where the memory went, per device: the peak and what was alive at it, per op and per step.

Everything here reads the memory table (:mod:`tracetui.insight.memory.table`) and is computed
once, by :func:`memory_of`; the summary, ``--json``, export, ``check`` and the explorer all show
these numbers, so a peak reads the same everywhere.
"""

from __future__ import annotations

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
    alive: pl.DataFrame
    """The allocations alive at the peak (memory-table rows), biggest first."""
    steps: pl.DataFrame
    """Per step: ``step_id``, ``step``, ``start``, ``peak``, ``end``, ``change`` (bytes)."""
    leak_suspect: bool
    verdict: str
    """The end-of-step trend in words."""

    def alive_by(self, column: str) -> pl.DataFrame:
        """The allocations alive at the peak grouped by ``column`` (``op``, ``annotation``,
        ``step``, ``frame``): ``bytes``, ``count``, biggest first (null: none, e.g. no op)."""
        if self.alive.is_empty():
            return pl.DataFrame(schema={column: SCHEMA[column], **GROUPED_SCHEMA})
        grouped = self.alive.group_by(column).agg(
            pl.col("bytes").sum().cast(pl.Int64).alias("bytes"), pl.len().cast(pl.UInt32).alias("count")
        )
        return grouped.sort(["bytes", column], descending=[True, False], nulls_last=True)

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
    """Per device and op name: ``allocs``, ``allocated``, ``frees``, ``freed``, ``net``,
    ``at_peak`` (bytes alive at the device's peak) and ``at_end`` (never freed), in bytes."""

    @property
    def present(self) -> bool:
        """Whether the trace has memory events (``profile_memory=True``)."""
        return self.events.height > 0

    def device(self, name: str) -> DeviceMemory | None:
        return next((d for d in self.devices if d.device == name), None)

    def largest(self, limit: int = 10, device: str | None = None) -> pl.DataFrame:
        """The largest single allocations (memory-table rows; of one device if given), biggest first."""
        allocs = pl.col("kind") == "alloc"
        if device is not None:
            allocs &= pl.col("device") == device
        rows = (  # found on the few columns that choose them: only the rows shown are gathered
            self.events.lazy()
            .with_row_index("row")
            .filter(allocs)
            .sort(["bytes", "order"], descending=[True, False])  # ``order`` is unique: no ties
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
    alive = (
        rows.filter(alloc & (pl.col("order") <= order))
        .filter(pl.col("pair_order").is_null() | (pl.col("pair_order") > order))
        .drop("row")
        .collect()
        .sort(["bytes", "order"], descending=[True, False])
    )
    steps = _steps(rows)
    suspect, verdict = _trend(steps)
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


def _trend(steps: pl.DataFrame) -> tuple[bool, str]:
    """Whether the end-of-step level grows from every step to the next (a leak suspect), in words."""
    n = steps.height
    if n == 0:
        return False, "no profiler steps: no end-of-step trend to read"
    ends = steps["end"].to_list()
    if n == 1:
        return False, f"one step (ends at {fmt.size(ends[0])}): no trend to read"
    grew = int((steps["end"].diff() > 0).sum())
    growth = ends[-1] - ends[0]
    if grew == n - 1:
        per = fmt.size(growth / (n - 1))
        return True, (
            f"leak suspect: every step ends higher than the one before "
            f"({fmt.size(ends[0])} → {fmt.size(ends[-1])} over {n} steps, +{per} per step)"
        )
    low, high = min(ends), max(ends)
    if low == high:
        return False, f"steady: every step ends at {fmt.size(low)} ({n} steps)"
    return False, (
        f"steady: steps end within {fmt.size(low)}–{fmt.size(high)}, "
        f"higher than the step before in {grew} of {n - 1}"
    )


def _per_op(events: pl.DataFrame, devices: tuple[DeviceMemory, ...]) -> pl.DataFrame:
    """Per device and op name: what it allocated and freed, and what of it was alive at the peak."""
    schema = {"device": SCHEMA["device"], "op": SCHEMA["op"]}
    if events.is_empty():
        counts = {c: pl.Int64 for c in ("allocs", "allocated", "frees", "freed", "net", "at_peak", "at_end")}
        return pl.DataFrame(schema={**schema, **counts})
    alloc, free = pl.col("kind") == "alloc", pl.col("kind") == "free"
    totals = events.group_by("device", "op").agg(
        alloc.sum().cast(pl.Int64).alias("allocs"),
        pl.col("bytes").filter(alloc).sum().cast(pl.Int64).alias("allocated"),
        free.sum().cast(pl.Int64).alias("frees"),
        (-pl.col("bytes").filter(free).sum()).cast(pl.Int64).alias("freed"),
        pl.col("bytes").filter(alloc & pl.col("alive_at_end")).sum().cast(pl.Int64).alias("at_end"),
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
