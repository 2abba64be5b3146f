"""Lanes for the timeline strip: per CPU thread and GPU stream, the busy intervals in a window.

Pure: intervals come from one polars pass over the window; a cell's busy fraction is two
binary searches over the merged intervals, so drawing costs O(width · log n) whatever the trace.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from tracetui.trace.categories import GPU_KIND, GPU_WORK, LAUNCH_CALLS
from tracetui.trace.stats import THREAD_NAME, merged_intervals

if TYPE_CHECKING:
    from tracetui.trace import Trace

CPU_WORK = ("cpu_op", *LAUNCH_CALLS)
MAX_LANES = 8


@dataclass(frozen=True)
class Lane:
    """One thread or stream: merged busy intervals and (GPU) the individual blocks, in ns."""

    label: str
    kind: str
    starts: list[int]
    ends: list[int]
    block_starts: list[int] = field(default_factory=list)
    block_ends: list[int] = field(default_factory=list)
    block_ids: list[int] = field(default_factory=list)
    _prefix: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        total = 0
        prefix = [0]
        for start, end in zip(self.starts, self.ends, strict=True):
            total += end - start
            prefix.append(total)
        object.__setattr__(self, "_prefix", prefix)

    def busy_before(self, t: int) -> int:
        """ns of busy time before ``t``."""
        index = bisect_right(self.starts, t)
        if index == 0:
            return 0
        return self._prefix[index] - max(0, self.ends[index - 1] - t)

    def busy(self, start: int, end: int) -> float:
        """Busy fraction of ``[start, end)``."""
        if end <= start:
            return 0.0
        return (self.busy_before(end) - self.busy_before(start)) / (end - start)

    def block_in(self, start: int, end: int) -> int | None:
        """Index of the GPU block that covers most of ``[start, end)``, else ``None``."""
        best, best_overlap = None, 0
        last = bisect_right(self.block_starts, end - 1) - 1
        for index in range(last, max(-1, last - 64), -1):  # blocks on a stream rarely overlap
            overlap = min(end, self.block_ends[index]) - max(start, self.block_starts[index])
            if overlap > best_overlap:
                best, best_overlap = index, overlap
        return best

    def block_at(self, t: int) -> int | None:
        """Index of the GPU block covering ``t`` (for alternating colours), else ``None``."""
        index = bisect_right(self.block_starts, t) - 1
        if index >= 0 and self.block_ends[index] > t:
            return index
        return None


@dataclass(frozen=True)
class Window:
    """The time range drawn, and what it is."""

    start_ns: int
    end_ns: int
    title: str
    subject_us: float | None = None
    """The duration of what the title names (a step's, a zoomed node's); the axis writes it. None:
    the window's own length (a window holds margins, and a step's GPU tail)."""

    @property
    def label_us(self) -> float:
        """What the axis writes after the title."""
        return self.subject_us if self.subject_us is not None else (self.end_ns - self.start_ns) / 1000


def lane_label(thread_name: str | None, pid: str, tid: str, kind: str) -> str:
    """``CPU python3``, ``CPU pt_autograd_0``, ``GPU 0 s7``."""
    if kind == "gpu":
        return f"GPU {pid} s{tid}"
    if thread_name:
        found = re.search(THREAD_NAME, thread_name)
        return f"CPU {found.group(1) if found else thread_name}"
    return f"CPU {tid}"


def lanes(trace: Trace, window: Window) -> list[Lane]:
    """CPU lanes (ops, runtime calls) then GPU lanes (kernels, memcpys, memsets) busy in the window."""
    events = (  # only the window's rows, and only the columns drawn
        trace.columns_of("events", "id", "pid", "tid", "cat", "start_ns", "end_ns")
        .lazy()
        .filter(
            (pl.col("start_ns") < window.end_ns)
            & (pl.col("end_ns") > window.start_ns)
            & pl.col("cat").is_in([*CPU_WORK, *GPU_WORK])
        )
        .select("id", pl.col("pid", "tid").cast(pl.String), "cat", "start_ns", "end_ns")
        .collect()
    )
    tracks = trace.tracks.select("track", "pid", "tid", "thread_name", "kind")
    located = events.join(tracks, on=["pid", "tid"], how="inner")
    located = located.filter(
        ((pl.col("kind") == "cpu") & pl.col("cat").is_in(CPU_WORK))
        | ((pl.col("kind") == "gpu") & pl.col("cat").is_in(GPU_WORK))
    ).sort("track", "start_ns", "end_ns")
    merged = merged_intervals(located, "track")
    result = []
    for (track,), group in merged.group_by("track", maintain_order=True):
        info = tracks.row(by_predicate=pl.col("track") == track, named=True)
        blocks = located.filter(pl.col("track") == track) if info["kind"] == "gpu" else None
        result.append(
            Lane(
                label=lane_label(info["thread_name"], info["pid"], info["tid"], info["kind"]),
                kind=info["kind"],
                starts=group["start_ns"].to_list(),
                ends=group["end_ns"].to_list(),
                block_starts=[] if blocks is None else blocks["start_ns"].to_list(),
                block_ends=[] if blocks is None else blocks["end_ns"].to_list(),
                block_ids=[] if blocks is None else blocks["id"].to_list(),
            )
        )
    cpu = [lane for lane in result if lane.kind == "cpu"]
    gpu = [lane for lane in result if lane.kind == "gpu"]
    return (cpu[: MAX_LANES // 2] + gpu)[:MAX_LANES] if len(cpu) + len(gpu) > MAX_LANES else cpu + gpu


def window_for(trace: Trace, step_id: int | None) -> Window:
    """The step's time range (GPU work it launched included), else the whole trace."""
    if step_id is not None:
        events = trace.columns_of("events", "cat", "name", "step_id", "start_ns", "end_ns", "dur")
        step = events.row(trace.row(step_id), named=True)
        gpu = events.filter(pl.col("cat").is_in(list(GPU_KIND)) & (pl.col("step_id") == step_id))
        end = max(step["end_ns"], gpu["end_ns"].max() or step["end_ns"])  # type: ignore[type-var]
        return Window(step["start_ns"], int(end), step["name"], step["dur"])
    times = trace.columns_of("events", "start_ns", "end_ns")
    start = times["start_ns"].min()
    end = times["end_ns"].max()
    return Window(int(start or 0), int(end or 0), "whole trace")  # type: ignore[arg-type]
