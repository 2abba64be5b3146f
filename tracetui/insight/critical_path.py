"""The critical path of each step and annotation call: the chain of dependent work that set its
length, found by walking backwards from its end and asking, at each point, what was the last thing
that had to finish (docs/why.md states the graph, its edges and the rules).

The walk moves over *resources*: CPU threads and GPU lanes (device, stream). A thread's time is one
chain (each instant waits for the one before it) except where it waited for something else: inside
a blocking call (a synchronize, a synchronous memcpy: :data:`BLOCKING_CALLS`) whose awaited GPU work
ended inside it, the path goes to that work; in a thread's idle time that a linked thread's work
(``fwdbwd``: the autograd engine's thread and the thread that ran the forward) ended in, the path
goes to that thread. On a lane, work that waited only for the work before it (a kernel wait of
:mod:`tracetui.insight.launch_gaps`) continues the chain; work that waited for its launch (host
wait) sends the path to the launch call's thread; work launched in time that still waited (other)
sends it to the latest work of another stream of the device that ended in the gap, if any.

The walk is the one Python loop here: one iteration per change of resource (a sync, a launch, a
hand-over), a binary search each, never one per event. What it crossed is then attributed with
numpy over the CPU events in tree order (each instant of a CPU stretch to the innermost event of
the span covering it: its self time on the path) and polars expressions (each instant of a GPU
stretch to the work running), a part of the spans at a time (:data:`PART_ROWS` events): what is
kept is each span's parts and its path summed by name (:attr:`CriticalPaths.names`); the path
event by event is :func:`pieces`, made again for the spans asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tracetui.insight.launch_gaps import HOST_WAIT, KERNEL_WAIT, NONE, OTHER, launch_gaps
from tracetui.insight.spans import span_windows
from tracetui.trace.categories import LAUNCH_CALLS
from tracetui.trace.memo import kept, kept_value
from tracetui.trace.stats import thread_names

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

    from tracetui.trace import Trace

BLOCKING_CALLS = (
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "cudaMemcpy2D",
    "cudaMemcpy2DAsync",
)
"""Calls that may block the host until the GPU is done (HTA's list, less the non-blocking
``cudaEventQuery``); a call blocked when GPU work it may wait for ended inside it."""
CPU_CATS = ("cpu_op", "user_annotation", "python_function", *LAUNCH_CALLS)
# what a piece of the path is, and the part of the length it counts in
KINDS = ("cpu_op", "python", "runtime", "sync", "launch", "kernel", "memcpy", "memset", "gap")
PART = {
    "cpu_op": "cpu_us",
    "python": "cpu_us",
    "runtime": "launch_us",
    "launch": "launch_us",
    "sync": "sync_wait_us",
    "kernel": "gpu_us",
    "memcpy": "gpu_us",
    "memset": "gpu_us",
    "gap": "gap_us",
}
PARTS = ("cpu_us", "gpu_us", "launch_us", "sync_wait_us", "gap_us")
HOST_GAP = "host gap (untraced)"
LAUNCH_DELAY = "launch delay"
KERNEL_TO_KERNEL = "kernel to kernel"
GPU_WAIT = "GPU wait (launched, not started)"
MAX_HOPS = 1_000_000  # a walk changes resource at most this often (each hop is used once anyway)
PART_ROWS = 1 << 18
"""The spans' CPU events attributed at a time (a part of the spans): what bounds the memory."""
SEARCH_STEP_ROWS = 20_000
"""A gather costs about this many rows more than the rows it gathers (a binary search of a thread's
starts, a gather per step, against one gather of them all)."""
KIND = pl.Enum(KINDS)

_CAUSE = {HOST_WAIT: 0, KERNEL_WAIT: 1, OTHER: 2, NONE: 3}
_GPU_KIND = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
SEGMENT_SCHEMA = {
    "span": pl.UInt32,
    "seq": pl.UInt32,
    "what": pl.String,  # cpu | gpu | launch | sync | wait | gap
    "track": pl.Int32,  # the thread of a cpu stretch, the thread of a launch / sync
    "lane": pl.Int64,  # the lane of a gpu stretch, a launch delay, a wait
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "head": pl.Int64,  # gpu: the chain's first row; launch / wait / gap: the work's row
    "last": pl.Int64,  # gpu: the chain's last row
    "ref": pl.Int64,  # sync: the call's id; wait: the other stream's work row
}
PIECE_SCHEMA: dict[str, PolarsDataType] = {
    "span": pl.UInt32,
    "id": pl.UInt32,
    "name": pl.String,
    "kind": pl.String,
    "start_ns": pl.Int64,
    "ns": pl.Int64,
    "track": pl.Int32,
    "lane": pl.Int64,
}
# the pieces while they are made: names as the events' categories, kinds as an enum
_PIECES: dict[str, PolarsDataType] = PIECE_SCHEMA | {"name": pl.Categorical, "kind": KIND}
SUMMED = ("span", "name", "kind", "ns")
"""The columns of the pieces summed (what :attr:`CriticalPaths.names` is made of)."""
_SUMMED = {k: _PIECES[k] for k in SUMMED}
NAME_SCHEMA: dict[str, PolarsDataType] = {
    "span": pl.UInt32,
    "name": pl.String,
    "kind": pl.String,
    "ns": pl.Int64,
}


@dataclass(frozen=True)
class CriticalPaths:
    """The critical paths of one kind of span (``steps`` or ``annotations``).

    * ``spans``: one row per span: ``span``, ``name``, ``start_ns``, ``end_ns`` (the window's end:
      its CPU end or its GPU work's, the later), ``length_us`` and the parts ``cpu_us``, ``gpu_us``,
      ``launch_us``, ``sync_wait_us``, ``gap_us`` (they sum to ``length_us``);
    * ``segments``: the walk, one row per stretch of one resource (:data:`SEGMENT_SCHEMA`), in time
      order per span;
    * ``names``: what the path crossed, summed per span, name and kind (``ns``): the pieces of
      :func:`pieces` grouped;
    * ``windows``: the spans' windows (:func:`~tracetui.insight.spans.span_windows`), which
      :func:`pieces` reads again.
    """

    kind: str
    spans: pl.DataFrame
    segments: pl.DataFrame
    names: pl.DataFrame
    windows: pl.DataFrame
    _made: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def record(self, span: int) -> dict[str, Any] | None:
        """One span's row of :attr:`spans` (a dict), else None."""
        rows = self._made.get("rows")
        if rows is None:
            rows = self._made["rows"] = self.spans.rows_by_key("span", named=True, unique=True)
        return rows.get(span)  # type: ignore[no-any-return]

    def top(self, span: int, limit: int = 8) -> list[dict[str, Any]]:
        """The names that took most of one span's path: ``name``, ``kind``, ``us``, ``share``."""
        return self.tops(limit).get(span, [])

    def tops(self, limit: int = 8) -> dict[int, list[dict[str, Any]]]:
        """:meth:`top` of every span, in one aggregation over :attr:`names` (computed once)."""
        found: dict[int, list[dict[str, Any]]] | None = self._made.get(("tops", limit))
        if found is not None:
            return found
        lengths = dict(self.spans.select("span", "length_us").iter_rows())
        summed = (
            self.names.select("span", "name", "kind", (pl.col("ns") / 1000.0).alias("us"))
            .sort(["span", "us", "name", "kind"], descending=[False, True, False, False])
            .group_by("span", maintain_order=True)
            .head(limit)
        )
        found = {}
        for span, name, kind, us in summed.iter_rows():
            length = lengths.get(span) or 0.0
            found.setdefault(span, []).append(
                {"name": name, "kind": kind, "us": us, "share": us / length if length else None}
            )
        self._made[("tops", limit)] = found
        return found


def step_paths(trace: Trace) -> CriticalPaths:
    """The critical path of every ``ProfilerStep#N`` (computed once per trace)."""
    return kept(trace, "critical_steps", lambda: _paths(trace, "steps"))


def annotation_paths(trace: Trace, spans: Iterable[int] | None = None) -> CriticalPaths:
    """The critical path of every annotation call (computed once per trace), or of the calls
    ``spans`` only (computed for them, unless every call's is kept already)."""
    if spans is None:
        return kept(trace, "critical_annotations", lambda: _paths(trace, "annotations"))
    wanted = sorted(set(spans))
    every = kept_value(trace, "critical_annotations")
    if every is not None:
        return _subset(every, wanted)
    return _paths(trace, "annotations", wanted)


def paths_of(trace: Trace, span: int) -> CriticalPaths | None:
    """The paths (steps' or annotations') that hold ``span``, else None."""
    steps = step_paths(trace)
    if steps.record(span) is not None:
        return steps
    if (trace.annotation_instances["id"] == span).any():
        return annotation_paths(trace, [span])
    return None


def _subset(paths: CriticalPaths, spans: list[int]) -> CriticalPaths:
    wanted = pl.col("span").is_in(pl.Series(spans, dtype=pl.UInt32).implode())
    return CriticalPaths(
        paths.kind,
        paths.spans.filter(wanted),
        paths.segments.filter(wanted),
        paths.names.filter(wanted),
        paths.windows.filter(wanted),
    )


def pieces(trace: Trace, paths: CriticalPaths, spans: Iterable[int] | None = None) -> pl.DataFrame:
    """What the path of each span (of ``spans``, default every span of ``paths``) crossed, one row
    per event (its time on the path) and per launch delay, wait or gap (:data:`PIECE_SCHEMA`;
    ``id`` null for a host gap), in time order per span: made again on each call."""
    parts = list(piece_parts(trace, paths, spans))
    return pl.concat(parts) if parts else pl.DataFrame(schema=PIECE_SCHEMA)


def piece_parts(
    trace: Trace, paths: CriticalPaths, spans: Iterable[int] | None = None
) -> Iterator[pl.DataFrame]:
    """:func:`pieces` a part of the spans at a time (an export writes each as it comes)."""
    windows, segments = paths.windows, paths.segments
    if spans is not None:
        wanted = pl.col("span").is_in(pl.Series(sorted(set(spans)), dtype=pl.UInt32).implode())
        windows, segments = windows.filter(wanted), segments.filter(wanted)
    for part in _parts(trace, windows, segments, _graph(trace), paths.kind):
        yield part.sort("span", "start_ns", "ns").cast(PIECE_SCHEMA)  # type: ignore[arg-type]


# ---- the graph: what the walk looks up -----------------------------------------------------------
class _Threads:
    """The CPU events in tree order (``pos``: by thread, then by start), as numpy arrays: per
    position, ``row`` (the event's row in ``events``) and ``parent`` (its parent's position, -1:
    none), and each thread's positions (``bounds``): what a span's members are found in, kept with
    the trace (two 4-byte columns of its CPU events)."""

    def __init__(self, trace: Trace) -> None:
        events = self.events = trace.events
        position = events["pos"]
        cpu = position.is_not_null()
        pos = position.filter(cpu).to_numpy()
        self.size = len(pos)
        self.row = np.empty(self.size, dtype=np.uint32)
        self.row[pos] = cpu.arg_true().to_numpy()
        # each parent's position: a table from CPU event id to position (-1: none)
        ids = events["id"].filter(cpu).to_numpy()
        pos_of_id = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int32)
        pos_of_id[ids] = pos
        del ids
        parent = events["parent"].filter(cpu)
        known = parent.is_not_null().to_numpy() & (parent.fill_null(0).to_numpy() < len(pos_of_id))
        parents = pos_of_id[np.where(known, parent.fill_null(0).to_numpy(), 0)]
        self.parent = np.empty(self.size, dtype=np.int32)
        self.parent[pos] = np.where(known, parents, -1)
        del pos_of_id, parent, parents, known
        # each thread's positions, from its first to its last: the runs of the tracks in tree order
        # (one per thread: the tracks come one after another; null: none)
        unknown = np.iinfo(np.int64).min  # no Int32 track
        tracks = np.empty(self.size, dtype=np.int64)
        tracks[pos] = events["track"].filter(cpu).cast(pl.Int64).fill_null(unknown).to_numpy()
        self.bounds: dict[int, tuple[int, int]] = {}
        for t, lo, hi in _runs(tracks):
            if t == unknown:
                continue
            low, high = self.bounds.get(t, (lo, hi))
            self.bounds[t] = (min(low, lo), max(high, hi))

    def columns(self, positions: np.ndarray, *names: str) -> pl.DataFrame:
        """Columns of the events at tree positions ``positions`` (one gather)."""
        return self.events.select(names)[pl.Series(self.row[positions])]

    def first_at(self, track: int, *times: tuple[np.ndarray, str]) -> list[np.ndarray]:
        """Positions on ``track`` of the first event starting at or after each time of each
        ``(times, side)`` (side "left"), or after it ("right"). A thread's starts are sorted (tree
        order): one gather of them all and a binary search, or, where that gathers more than a
        search of a gather per step would (a long thread, few times), that search."""
        lo, hi = self.bounds.get(track, (0, 0))
        count = sum(len(at) for at, _ in times)
        steps = max(hi - lo, 1).bit_length()
        if hi - lo <= steps * (SEARCH_STEP_ROWS + count):
            starts = self.columns(np.arange(lo, hi), "start_ns")["start_ns"].to_numpy()
            return [lo + np.searchsorted(starts, at, side=side) for at, side in times]  # type: ignore[call-overload]
        return [self._search(lo, hi, at, side) for at, side in times]

    def _search(self, lo: int, hi: int, times: np.ndarray, side: str) -> np.ndarray:
        """:meth:`first_at` of ``times`` in positions ``[lo, hi)``: a binary search of them all at
        once, each step one gather."""
        low, high = np.full(len(times), lo, dtype=np.int64), np.full(len(times), hi, dtype=np.int64)
        while True:
            open_ = low < high
            if not open_.any():
                return low
            middle = (low + high) // 2
            at = self.columns(np.where(open_, middle, lo), "start_ns")["start_ns"].to_numpy()
            later = at > times if side == "right" else at >= times
            high = np.where(open_ & later, middle, high)
            low = np.where(open_ & ~later, middle + 1, low)


def _threads(trace: Trace) -> _Threads:
    return kept(trace, "critical_threads", lambda: _Threads(trace))


class _Graph:
    """The GPU lanes (:func:`launch_gaps`, as numpy arrays) and, per thread, the points where the
    path may leave it (sorted by time): blocking calls and hand-overs between linked threads."""

    def __init__(self, trace: Trace) -> None:
        gaps = launch_gaps(trace)
        self.gaps = gaps
        self.start = gaps["start_ns"].to_numpy()
        self.end = gaps["end_ns"].to_numpy()
        self.lane = gaps["lane"].to_numpy().astype(np.int64)
        self.device = gaps["device"].to_numpy()
        self.head = gaps["head"].to_numpy().astype(np.int64)
        self.reach = gaps["reach_ns"].fill_null(-1).to_numpy()
        self.reach_row = gaps["reach_row"].to_numpy()
        self.cause = gaps["cause"].replace_strict(_CAUSE, return_dtype=pl.Int8).to_numpy()
        self.launch_end = gaps["launch_end_ns"].fill_null(-1).to_numpy()
        self.launch_track = gaps["launch_track"].fill_null(-1).to_numpy()
        order = np.argsort(gaps["id"].to_numpy(), kind="stable")
        self.ids_sorted = gaps["id"].to_numpy()[order]
        self.row_of_sorted = order
        # per device, the work by end: a wait's other stream is found by a binary search
        by_end = gaps.select("row", "device", "end_ns").sort("device", "end_ns", "row")
        self.dev_rows = by_end["row"].to_numpy().astype(np.int64)
        self.dev_end = by_end["end_ns"].to_numpy()
        devices = by_end["device"].to_numpy()
        self.dev_bounds = {int(d): (int(a), int(b)) for d, a, b in _runs(devices)}
        exits = _exits(trace, gaps, _threads(trace))
        self.exit_track = exits["track"].to_numpy()
        self.exit_at = exits["at_ns"].to_numpy()
        self.exit_what = exits["what"].to_numpy()
        self.exit_target = exits["target"].to_numpy()
        self.exit_upper = exits["upper_ns"].to_numpy()
        self.exit_ref = exits["ref"].to_numpy()
        self.track_bounds = {int(t): (int(a), int(b)) for t, a, b in _runs(self.exit_track)}

    def rows_of(self, event_ids: pl.Series) -> np.ndarray:
        """The lane row of each GPU work id (-1 where null): one binary search of them all."""
        known = event_ids.is_not_null().to_numpy()
        if not len(self.ids_sorted):
            return np.full(len(event_ids), -1, dtype=np.int64)
        at = np.searchsorted(self.ids_sorted, event_ids.fill_null(0).to_numpy())
        return np.where(known, self.row_of_sorted[np.minimum(at, len(self.ids_sorted) - 1)], -1)

    def exit_before(self, track: int, t: int, used: set[int]) -> int:
        """Index of the latest unused exit of ``track`` at or before ``t``, else -1."""
        bounds = self.track_bounds.get(track)
        if bounds is None:
            return -1
        low, high = bounds
        index = low + int(np.searchsorted(self.exit_at[low:high], t, side="right")) - 1
        while index >= low and index in used:
            index -= 1
        return index if index >= low else -1

    def other_stream(self, row: int, used: set[int]) -> int:
        """The latest work of another lane of ``row``'s device that ended in the gap before it."""
        bounds = self.dev_bounds.get(int(self.device[row]))
        if bounds is None:
            return -1
        low, high = bounds
        start, after = int(self.start[row]), int(self.reach[row])
        index = low + int(np.searchsorted(self.dev_end[low:high], start, side="right")) - 1
        for _ in range(64):  # the few latest ends: another lane's is near
            if index < low or self.dev_end[index] <= after:
                return -1
            other = int(self.dev_rows[index])
            if self.lane[other] != self.lane[row] and other not in used:
                return other
            index -= 1
        return -1


def _runs(values: np.ndarray) -> list[tuple[int, int, int]]:
    """``(value, first, past_last)`` of each run of equal values of a sorted array."""
    if not len(values):
        return []
    change = np.flatnonzero(np.diff(values)) + 1
    firsts = np.concatenate([[0], change])
    lasts = np.concatenate([change, [len(values)]])
    return [(int(values[a]), int(a), int(b)) for a, b in zip(firsts, lasts, strict=True)]


EXIT_SCHEMA: dict[str, PolarsDataType] = {
    "track": pl.Int32,
    "at_ns": pl.Int64,
    "what": pl.Int8,
    "target": pl.Int64,
    "upper_ns": pl.Int64,
    "ref": pl.Int64,
}


def _exits(trace: Trace, gaps: pl.DataFrame, threads: _Threads) -> pl.DataFrame:
    """Where the path leaves a thread: ``track``, ``at_ns`` (the point), ``what`` (0: a blocking call
    whose awaited work ``target`` (a lane row) ended at ``at_ns``; 1: a hand-over to thread
    ``target``, whose work ended at ``at_ns`` in this thread's idle time), ``upper_ns`` (the call's
    end), ``ref`` (the call's id), sorted by track and point."""
    exits = (_blocking_exits(trace, gaps), _handover_exits(trace, threads))
    parts = [part.cast(EXIT_SCHEMA) for part in exits]  # type: ignore[arg-type]
    return pl.concat(parts).sort("track", "at_ns", "what", "target", "upper_ns", maintain_order=True)


def _process_of(trace: Trace) -> pl.DataFrame:
    """``(track, process)``: each CPU track's process as a number."""
    tracks = trace.tracks.filter(pl.col("kind") == "cpu")
    return tracks.select(
        pl.col("track").cast(pl.Int32), pl.col("pid").rank("dense").cast(pl.Int64).alias("process")
    )


def _blocking_exits(trace: Trace, gaps: pl.DataFrame) -> pl.DataFrame:
    calls = (
        trace.events.lazy()
        .filter(pl.col("cat").is_in(LAUNCH_CALLS) & pl.col("name").is_in(BLOCKING_CALLS))
        .select("id", "track", "start_ns", "end_ns")
        .collect()
    )
    if calls.is_empty() or gaps.is_empty():
        return pl.DataFrame(schema=EXIT_SCHEMA)
    process = _process_of(trace)
    calls = calls.join(process, on="track", how="left").with_columns(pl.col("process").fill_null(-1))
    work = (
        gaps.filter(pl.col("launch_track").is_not_null())
        .select("row", "end_ns", "launch_start_ns", pl.col("launch_track").alias("track"))
        .join(process, on="track", how="left")
        .with_columns(pl.col("process").fill_null(-1))
        .select("row", pl.col("end_ns").alias("work_end"), "launch_start_ns", "process")
        .sort("work_end")
    )
    found = calls.sort("end_ns").join_asof(
        work, left_on="end_ns", right_on="work_end", by="process", strategy="backward", check_sortedness=False
    )
    found = found.filter(
        (pl.col("work_end") >= pl.col("start_ns")) & (pl.col("launch_start_ns") < pl.col("end_ns"))
    ).select("id", "track", "end_ns", "row", "work_end")
    # a call that launched work itself (a synchronous copy: .item()'s) waited for that work when it
    # started before the call returned (its end may be stamped a little after: CUPTI's clock skew)
    own = (
        gaps.filter(
            pl.col("launch_id").is_in(calls["id"].implode()) & (pl.col("start_ns") < pl.col("launch_end_ns"))
        )
        .sort("end_ns")
        .group_by("launch_id")
        .agg(pl.col("row").last(), pl.col("end_ns").last().alias("work_end"))
        .rename({"launch_id": "id"})
        .join(calls.select("id", "track", "end_ns"), on="id")
        .with_columns(pl.min_horizontal("work_end", "end_ns").alias("work_end"))
        .select("id", "track", "end_ns", "row", "work_end")
    )
    found = pl.concat([own.cast(found.schema), found.join(own.select("id"), on="id", how="anti")])  # type: ignore[arg-type]
    return found.select(
        "track",
        pl.col("work_end").alias("at_ns"),
        pl.lit(0, pl.Int8).alias("what"),
        pl.col("row").cast(pl.Int64).alias("target"),
        pl.col("end_ns").alias("upper_ns"),
        pl.col("id").cast(pl.Int64).alias("ref"),
    )


def _handover_exits(trace: Trace, threads: _Threads) -> pl.DataFrame:
    """Threads linked by ``fwdbwd`` (a backward op's thread and its forward op's): for each idle
    interval of one, the latest end of the other's busy time inside it (one binary search each)."""
    events = trace.events
    backward = events.lazy().filter(pl.col("fwd_id").is_not_null()).select("track", "fwd_id").collect()
    if backward.is_empty():
        return pl.DataFrame(schema=EXIT_SCHEMA)
    forward = trace.lookup(backward["fwd_id"], "track")["track"]
    pairs = (
        pl.DataFrame({"b": backward["track"], "a": forward})
        .drop_nulls()
        .filter(pl.col("a") != pl.col("b"))
        .unique()
    )
    links = sorted(
        {(int(a), int(b)) for a, b in pairs.iter_rows()} | {(int(b), int(a)) for a, b in pairs.iter_rows()}
    )
    busy = {track: _busy(threads, track) for track in {t for link in links for t in link}}
    found = []
    for x, y in links:  # one pair of linked threads at a time (a few)
        starts, ends = busy[x]
        idle_from = np.concatenate([[np.iinfo(np.int64).min], ends[:-1]])  # each idle interval: to a start
        other = busy[y][1]
        at = np.searchsorted(other, starts, side="right") - 1
        hit = at >= 0
        ended = np.where(hit, other[np.maximum(at, 0)], 0)
        hit &= ended > idle_from
        found.append(
            pl.DataFrame(
                {
                    "track": np.full(int(hit.sum()), x, dtype=np.int32),
                    "at_ns": ended[hit],
                    "what": np.ones(int(hit.sum()), dtype=np.int8),
                    "target": np.full(int(hit.sum()), y, dtype=np.int64),
                    "upper_ns": starts[hit],
                    "ref": pl.Series([None] * int(hit.sum()), dtype=pl.Int64),
                }
            )
        )
    return pl.concat(found) if found else pl.DataFrame(schema=EXIT_SCHEMA)


def _busy(threads: _Threads, track: int) -> tuple[np.ndarray, np.ndarray]:
    """A thread's busy time (the union of its ops and runtime calls) as disjoint intervals: starts
    and ends, sorted (the events in tree order are by start: a running maximum of the ends)."""
    lo, hi = threads.bounds.get(track, (0, 0))
    positions = np.arange(lo, hi)
    picked = threads.columns(positions, "cat", "start_ns", "end_ns").filter(
        pl.col("cat").is_in(["cpu_op", *LAUNCH_CALLS]) & pl.col("end_ns").is_not_null()
    )
    starts, ends = picked["start_ns"].to_numpy(), picked["end_ns"].to_numpy()
    if not len(starts):
        return starts, ends
    reach = np.maximum.accumulate(ends)
    opens = np.concatenate([[True], starts[1:] > reach[:-1]])
    firsts = np.flatnonzero(opens)
    return starts[firsts], reach[np.concatenate([firsts[1:] - 1, [len(starts) - 1]])]


def _graph(trace: Trace) -> _Graph:
    return kept(trace, "critical_graph", lambda: _Graph(trace))


# ---- the walk --------------------------------------------------------------------------------------
def _walk(
    graph: _Graph, span: int, track: int, start: int, cpu_end: int, last_row: int
) -> list[tuple[Any, ...]]:
    """The segments of one span's path, latest first: ``(what, track, lane, start, end, head, last,
    ref)`` (see :data:`SEGMENT_SCHEMA`). ``last_row``: the lane row of the span's last-ending GPU
    work (-1: none); the walk starts there if it ends after the CPU does, else on ``track`` at
    ``cpu_end``."""
    out: list[tuple[Any, ...]] = []
    used_exits: set[int] = set()
    used_rows: set[int] = set()
    on_gpu = last_row >= 0 and int(graph.end[last_row]) > cpu_end
    row, thread, t = last_row, track, int(graph.end[last_row]) if on_gpu else cpu_end
    for _ in range(MAX_HOPS):
        if t <= start:
            break
        if on_gpu:
            used_rows.add(row)
            head = int(graph.head[row])
            head_start = int(graph.start[head])
            out.append(("gpu", None, int(graph.lane[row]), max(start, head_start), t, head, row, None))
            if head_start <= start:
                break
            lane = int(graph.lane[head])
            cause = int(graph.cause[head])
            if cause == 0 and graph.launch_track[head] >= 0:  # host wait: to the launch
                at = min(int(graph.launch_end[head]), head_start)
                out.append(
                    (
                        "launch",
                        int(graph.launch_track[head]),
                        lane,
                        max(start, at),
                        head_start,
                        head,
                        None,
                        None,
                    )
                )
                on_gpu, thread, t = False, int(graph.launch_track[head]), at
                continue
            other = graph.other_stream(head, used_rows) if cause == 2 else -1
            if other >= 0:
                at = int(graph.end[other])
                out.append(("wait", None, lane, max(start, at), head_start, head, None, other))
                row, t = other, at
                continue
            before = int(graph.reach_row[head])
            at = int(graph.reach[head]) if before >= 0 else start
            out.append(("gap", None, lane, max(start, at), head_start, head, None, None))
            if before < 0 or before in used_rows:
                break
            row, t = before, at
            continue
        index = graph.exit_before(thread, t, used_exits)
        if index < 0 or int(graph.exit_at[index]) <= start:
            out.append(("cpu", thread, None, start, t, None, None, None))
            break
        used_exits.add(index)
        at = int(graph.exit_at[index])
        if graph.exit_what[index] == 0:  # a blocking call: to the work it waited for
            upper = min(t, int(graph.exit_upper[index]))
            out.append(("cpu", thread, None, upper, t, None, None, None))
            out.append(("sync", thread, None, at, upper, None, None, int(graph.exit_ref[index])))
            target = int(graph.exit_target[index])
            if target in used_rows:
                out.append(("cpu", thread, None, start, at, None, None, None))
                break
            on_gpu, row, t = True, target, at
            continue
        out.append(("cpu", thread, None, at, t, None, None, None))
        thread, t = int(graph.exit_target[index]), at
    return out


def _paths(trace: Trace, kind: str, only: list[int] | None = None) -> CriticalPaths:
    windows = span_windows(trace, kind)
    if only is not None:
        windows = windows.filter(pl.col("span").is_in(pl.Series(only, dtype=pl.UInt32).implode()))
    graph = _graph(trace)
    work = trace.span_work.join(windows.select(pl.col("span")), on="span")
    last = (
        work.sort("end_ns", "id")
        .group_by("span", maintain_order=True)
        .agg(pl.col("id").last().alias("last_id"))
    )
    windows = windows.join(last, on="span", how="left", maintain_order="left")
    rows: list[tuple[Any, ...]] = []
    last_rows = graph.rows_of(windows["last_id"]).tolist()
    for (span, track, start, cpu_end), last_row in zip(
        windows.select("span", "track", "start_ns", "cpu_end_ns").iter_rows(), last_rows, strict=True
    ):  # one walk per span: a loop over spans and, inside, over the path's hops
        walked = _walk(graph, span, -1 if track is None else track, start, cpu_end, last_row)
        rows += [(span, len(walked) - i, *s) for i, s in enumerate(walked)]
    windows = windows.drop("last_id")
    segments = pl.DataFrame(rows, schema=SEGMENT_SCHEMA, orient="row").sort("span", "seq")
    segments = segments.filter(pl.col("end_ns") > pl.col("start_ns"))
    summed = [
        part.group_by("span", "name", "kind").agg(pl.col("ns").sum())
        for part in _parts(trace, windows, segments, graph, kind, summed=True)
    ]
    names = (
        pl.concat(summed).cast(NAME_SCHEMA).sort("span", "name", "kind")  # type: ignore[arg-type]
        if summed
        else pl.DataFrame(schema=NAME_SCHEMA)
    )
    return CriticalPaths(kind, _span_parts(windows, names), segments, names, windows)


# ---- what the path crossed -------------------------------------------------------------------------
def _parts(
    trace: Trace,
    windows: pl.DataFrame,
    segments: pl.DataFrame,
    graph: _Graph,
    kind: str,
    summed: bool = False,
) -> Iterator[pl.DataFrame]:
    """The pieces (:data:`_PIECES`) of the spans' paths, a part of the spans at a time: each part's
    spans hold at most :data:`PART_ROWS` CPU events on the threads their paths crossed (or one span).
    ``summed``: only ``span``, ``name``, ``kind``, ``ns``, the CPU pieces already summed by span,
    name and category (what :attr:`CriticalPaths.names` sums: no row per event made)."""
    if segments.is_empty():
        return
    threads = _threads(trace)
    members = _member_ranges(trace, windows, segments, threads, kind)
    sizes = members.group_by("span").agg((pl.col("hi") - pl.col("lo")).sum().alias("n"))
    spans = windows.select("span").join(sizes, on="span", how="left", maintain_order="left")
    counts = spans["n"].fill_null(0).to_numpy()
    cut = _cuts(counts, PART_ROWS)
    for first, past in pairwise(cut.tolist()):
        chosen = spans["span"].slice(int(first), int(past - first)).implode()
        mine = pl.col("span").is_in(chosen)
        part = segments.filter(mine)
        found = [
            _cpu_pieces(trace, threads, part, members.filter(mine), kind, summed),
            _gpu_pieces(graph, part),
            _other_pieces(trace, graph, part),
        ]
        yield pl.concat([f.select(SUMMED) for f in found] if summed else found)


def _cuts(counts: np.ndarray, most: int) -> np.ndarray:
    """Boundaries of consecutive runs of ``counts`` each summing to at most ``most`` (or one item)."""
    bounds, total = [0], 0
    for i, n in enumerate(counts.tolist()):  # one per span
        if total and total + n > most:
            bounds.append(i)
            total = 0
        total += n
    bounds.append(len(counts))
    return np.asarray(bounds if len(counts) else [0], dtype=np.int64)


def _member_ranges(
    trace: Trace, windows: pl.DataFrame, segments: pl.DataFrame, threads: _Threads, kind: str
) -> pl.DataFrame:
    """Per (span, thread) of the path's CPU stretches: the tree positions ``[lo, hi)`` of the
    thread's events that start inside the span (from its start to its CPU end): its members are
    there (a step's: those whose step it is; an annotation call's: all, if the thread is of its
    process). Sorted by span and thread, with ``code`` their rank."""
    keys = (
        segments.filter(pl.col("what") == "cpu")
        .select("span", "track")
        .unique()
        .join(windows.select("span", pl.col("track").alias("own"), "start_ns", "cpu_end_ns"), on="span")
        .sort("span", "track")
    )
    if kind == "annotations":  # the events of the call's process only
        process = _process_of(trace)
        keys = (
            keys.join(process, on="track", how="left")
            .join(process.rename({"track": "own", "process": "own_process"}), on="own", how="left")
            .filter(pl.col("process") == pl.col("own_process"))
        )
    lo = np.zeros(len(keys), dtype=np.int64)
    hi = np.zeros(len(keys), dtype=np.int64)
    tracks = keys["track"].to_numpy()
    starts, ends = keys["start_ns"].to_numpy(), keys["cpu_end_ns"].to_numpy()
    for track in np.unique(tracks):  # a few threads
        at = tracks == track
        lo[at], hi[at] = threads.first_at(int(track), (starts[at], "left"), (ends[at], "right"))
    return keys.select("span", "track", lo=pl.Series(lo), hi=pl.Series(np.maximum(hi, lo)))


def _cpu_pieces(
    trace: Trace,
    threads: _Threads,
    segments: pl.DataFrame,
    members: pl.DataFrame,
    kind: str,
    summed: bool = False,
) -> pl.DataFrame:
    """Each CPU stretch's time by the innermost event of the span covering it (its self time on the
    path: the overlap of the event with the span's stretches on its thread, less its children's),
    and the rest as a host gap (untraced time, or a user annotation's self time). ``summed``: the
    events' time summed per span, name and category first (:data:`SUMMED` columns only)."""
    stretches = (
        segments.filter(pl.col("what") == "cpu")
        .select("span", "track", "start_ns", "end_ns")
        .sort("span", "track", "start_ns")
        .with_columns(length=pl.col("end_ns") - pl.col("start_ns"))
        .with_columns(before=(pl.col("length").cum_sum() - pl.col("length")).over("span", "track"))
    )
    if stretches.is_empty():
        return pl.DataFrame(schema=_PIECES)
    keys = stretches.select("span", "track").unique(maintain_order=True).with_row_index("code")
    stretches = stretches.join(keys, on=["span", "track"]).sort("code", "start_ns")
    ranges = members.join(keys, on=["span", "track"]).sort("code")
    # the members' tree positions, each (span, thread) a range in code order: sorted by (code, pos)
    counts = (ranges["hi"] - ranges["lo"]).to_numpy()
    total = int(counts.sum())
    offsets = np.repeat(np.cumsum(counts) - counts, counts)  # each slot's range's first slot
    first = np.repeat(ranges["lo"].to_numpy(), counts)  # each slot's range's first position
    pos = first + (np.arange(total) - offsets)
    code = np.repeat(ranges["code"].to_numpy().astype(np.int64), counts)
    span = np.repeat(ranges["span"].to_numpy(), counts)
    wanted = ("name", "cat", "start_ns", "end_ns", "step_id")
    picked = threads.columns(pos, *wanted if summed else ("id", *wanted))
    keep = picked["cat"].is_in(CPU_CATS)
    if kind == "steps":
        keep = keep & (picked["step_id"] == pl.Series(span)).fill_null(False)
    mask = keep.to_numpy()
    slots = np.flatnonzero(mask)
    picked = picked.filter(keep)
    pos, code, span, first, offsets = pos[slots], code[slots], span[slots], first[slots], offsets[slots]
    start, end = picked["start_ns"].to_numpy(), picked["end_ns"].to_numpy()
    to_end, to_start = _path_time_at(stretches, code, end, start)
    on = to_end - to_start
    # children: a member's parent is a member of its (span, thread) if it is in the same range (its
    # slot there holds a member): each member's time goes off its parent's
    member_at = np.full(total, -1, dtype=np.int64)
    member_at[slots] = np.arange(len(slots))
    parent = threads.parent[pos].astype(np.int64)
    inside = parent >= first
    parent_member = np.full(len(slots), -1, dtype=np.int64)
    parent_member[inside] = member_at[offsets[inside] + parent[inside] - first[inside]]
    found = parent_member >= 0
    children = np.bincount(parent_member[found], weights=on[found], minlength=len(slots))
    ns = np.maximum(on - children.round().astype(np.int64), 0)
    own = ns > 0
    cat = pl.col("cat")
    piece_kind = (
        pl.when(cat == "python_function")
        .then(pl.lit("python"))
        .when(cat == "user_annotation")
        .then(pl.lit("gap"))
        .when(cat.is_in(LAUNCH_CALLS) & pl.col("name").is_in(BLOCKING_CALLS))
        .then(pl.lit("sync"))
        .when(cat.is_in(LAUNCH_CALLS))
        .then(pl.lit("runtime"))
        .otherwise(pl.lit("cpu_op"))
    )
    piece_name = (  # a step's own time between its ops: untraced host work
        pl.when(cat == "user_annotation").then(pl.lit(HOST_GAP, pl.Categorical)).otherwise(pl.col("name"))
    )
    if summed:  # a row per span, name and category: the kinds and names then read on those
        names = picked["name"].to_physical().to_numpy().astype(np.int64)
        cats = picked["cat"].to_physical().to_numpy().astype(np.int64)
        width = int(names.max(initial=0)) + 1
        group = (code * (int(cats.max(initial=0)) + 1) + cats) * width + names  # (span, thread), cat, name
        chosen = np.flatnonzero(own)
        sums = (
            pl.DataFrame({"group": group[chosen], "row": chosen, "ns": ns[chosen]})
            .group_by("group")
            .agg(pl.col("row").first(), pl.col("ns").sum())
        )
        rows = sums["row"]
        attributed = (
            picked.select("name", "cat")[rows]
            .with_columns(span=pl.Series(span).gather(rows), ns=sums["ns"])
            .select(
                "span",
                piece_name.alias("name"),
                piece_kind.cast(KIND).alias("kind"),
                "ns",
            )
        )
        gaps = _host_gaps(stretches, code, ns, own, keys).select(SUMMED)
        return pl.concat([attributed.cast(_SUMMED), gaps])  # type: ignore[arg-type]
    attributed = (
        picked.with_columns(
            span=pl.Series(span),
            start_ns=pl.Series(start),
            ns=pl.Series(ns),
            track=pl.Series(
                keys["track"].gather(pl.Series(code)) if len(code) else pl.Series([], dtype=pl.Int32)
            ),
        )
        .filter(pl.Series(own))
        .select(
            "span",
            pl.when(cat == "user_annotation").then(None).otherwise(pl.col("id")).alias("id"),
            piece_name.alias("name"),
            piece_kind.cast(KIND).alias("kind"),
            "start_ns",
            "ns",
            "track",
            pl.lit(None, pl.Int64).alias("lane"),
        )
    )
    rest = _host_gaps(stretches, code, ns, own, keys)
    return pl.concat([attributed.cast(_PIECES), rest])  # type: ignore[arg-type]


def _host_gaps(
    stretches: pl.DataFrame, code: np.ndarray, ns: np.ndarray, own: np.ndarray, keys: pl.DataFrame
) -> pl.DataFrame:
    """What no member covers: untraced host time, per (span, thread) (:data:`_PIECES`)."""
    covered = np.bincount(code[own], weights=ns[own], minlength=len(keys)).round().astype(np.int64)
    totals = stretches.group_by("code").agg(
        pl.col("span", "track").first(), pl.col("length").sum().alias("total"), pl.col("start_ns").min()
    )
    rest = (
        totals.with_columns(ns=pl.col("total") - pl.lit(pl.Series(covered)).gather(pl.col("code")))
        .filter(pl.col("ns") > 0)
        .sort("code")
        .select(
            "span",
            pl.lit(None, pl.UInt32).alias("id"),
            pl.lit(HOST_GAP, pl.Categorical).alias("name"),
            pl.lit("gap", KIND).alias("kind"),
            "start_ns",
            "ns",
            "track",
            pl.lit(None, pl.Int64).alias("lane"),
        )
    )
    return rest.cast(_PIECES)  # type: ignore[arg-type]


def _path_time_at(stretches: pl.DataFrame, code: np.ndarray, *ats: np.ndarray) -> list[np.ndarray]:
    """The path's time on a thread of a span up to each point of each ``at``: the stretches of the
    (span, thread) ``code`` before it, and the part of the one it falls in. ``stretches`` (sorted by
    ``code``, ``start_ns``): ``code``, ``start_ns``, ``end_ns``, ``before`` (the time of the earlier
    stretches of its code). One binary search per point, on keys packing the code with the time;
    each code opens with a stretch of no time at the earliest point (a point before the code's
    first stretch falls in it), so the stretch found is always of the point's code, and the time is
    ``before - start + min(point, end)`` (the point is at or after the stretch's start)."""
    low = int(stretches["start_ns"].min())  # type: ignore[arg-type]
    width = int(stretches["end_ns"].max()) - low + 1  # type: ignore[arg-type]
    codes = stretches["code"].to_numpy().astype(np.int64)
    firsts = np.flatnonzero(np.concatenate([[True], codes[1:] != codes[:-1]]))
    keys = np.insert(codes * width + (stretches["start_ns"].to_numpy() - low), firsts, codes[firsts] * width)
    ends = np.insert(stretches["end_ns"].to_numpy(), firsts, low)
    offset = np.insert(
        stretches.select(pl.col("before") - pl.col("start_ns")).to_series().to_numpy(), firsts, -low
    )
    found = []
    for at in ats:
        points = np.clip(at, low, low + width - 1)
        index = np.searchsorted(keys, code * width + (points - low), side="right") - 1
        found.append(offset[index] + np.minimum(points, ends[index]))
    return found


def _gpu_pieces(graph: _Graph, segments: pl.DataFrame) -> pl.DataFrame:
    """Each GPU stretch (a chain of lane rows) by the work running, and the gaps between its work
    (kernel to kernel: the work was queued)."""
    chains = segments.filter(pl.col("what") == "gpu").select(
        "span", "lane", "start_ns", "end_ns", "head", "last", pl.int_range(pl.len()).alias("chain")
    )
    if chains.is_empty():
        return pl.DataFrame(schema=_PIECES)
    rows = chains.with_columns(row=pl.int_ranges("head", pl.col("last") + 1)).explode("row")
    gaps = graph.gaps
    picked = rows.with_columns(
        gaps["id"].gather(rows["row"]).alias("id"),
        gaps["name"].gather(rows["row"]).alias("name"),
        gaps["cat"].gather(rows["row"]).alias("cat"),
        gaps["start_ns"].gather(rows["row"]).alias("w_start"),
        gaps["end_ns"].gather(rows["row"]).alias("w_end"),
        gaps["reach_ns"].gather(rows["row"]).alias("w_reach"),
    )
    first = pl.col("row") == pl.col("head")
    low = pl.max_horizontal("w_start", pl.when(first).then(None).otherwise(pl.col("w_reach")), "start_ns")
    high = pl.min_horizontal("w_end", "end_ns")
    work = picked.with_columns(piece_start=low, ns=(high - low).clip(0))
    cat = pl.col("cat")
    gpu_kind = (
        pl.when(cat == "gpu_memcpy").then(pl.lit("memcpy")).when(cat == "gpu_memset").then(pl.lit("memset"))
    )
    spent = work.filter(pl.col("ns") > 0).select(
        "span",
        "id",
        "name",
        gpu_kind.otherwise(pl.lit("kernel")).cast(KIND).alias("kind"),
        pl.col("piece_start").alias("start_ns"),
        "ns",
        pl.lit(None, pl.Int32).alias("track"),
        "lane",
    )
    between = (
        work.group_by("span", "chain")
        .agg(
            (pl.col("end_ns").first() - pl.col("start_ns").first() - pl.col("ns").sum()).alias("ns"),
            pl.col("start_ns").first(),
            pl.col("lane").first(),
        )
        .filter(pl.col("ns") > 0)
        .select(
            "span",
            pl.lit(None, pl.UInt32).alias("id"),
            pl.lit(KERNEL_TO_KERNEL, pl.Categorical).alias("name"),
            pl.lit("launch", KIND).alias("kind"),
            "start_ns",
            "ns",
            pl.lit(None, pl.Int32).alias("track"),
            "lane",
        )
    )
    return pl.concat([spent.cast(_PIECES), between.cast(_PIECES)])  # type: ignore[arg-type]


def _other_pieces(trace: Trace, graph: _Graph, segments: pl.DataFrame) -> pl.DataFrame:
    """Launch delays, synchronisation waits, waits on another stream and unexplained GPU waits."""
    rest = segments.filter(pl.col("what").is_in(["launch", "sync", "wait", "gap"]))
    if rest.is_empty():
        return pl.DataFrame(schema=_PIECES)
    what = pl.col("what")
    sync_names = trace.lookup(rest["ref"].cast(pl.UInt32), "name")["name"].cast(pl.String)
    waited = rest["ref"].filter(rest["what"] == "wait")
    streams = graph.gaps["stream"].gather(waited) if len(waited) else pl.Series([], dtype=pl.Int64)
    other = pl.Series(pl.repeat(None, len(rest), dtype=pl.Int64, eager=True)).scatter(
        (rest["what"] == "wait").arg_true(), streams
    )
    rest = rest.with_columns(sync_name=sync_names, other=other)
    name = (
        pl.when(what == "launch")
        .then(pl.lit(LAUNCH_DELAY))
        .when(what == "sync")
        .then(pl.col("sync_name"))
        .when(what == "wait")
        .then(pl.format("waits for stream {}", "other"))
        .otherwise(pl.lit(GPU_WAIT))
    )
    kind = (
        pl.when(what == "launch")
        .then(pl.lit("launch"))
        .when(what == "sync")
        .then(pl.lit("sync"))
        .otherwise(pl.lit("gap"))
    )
    return rest.select(
        "span",
        pl.when(what == "sync").then(pl.col("ref")).otherwise(None).cast(pl.UInt32).alias("id"),
        name.cast(pl.Categorical).alias("name"),
        kind.cast(KIND).alias("kind"),
        "start_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("ns"),
        "track",
        "lane",
    ).cast(_PIECES)  # type: ignore[arg-type]


def _span_parts(windows: pl.DataFrame, names: pl.DataFrame) -> pl.DataFrame:
    """Per span: the length and the parts (the pieces summed by :data:`PART` of their kind)."""
    parts = (
        names.with_columns(part=pl.col("kind").replace_strict(PART))
        .group_by("span")
        .agg(*((pl.col("ns").filter(pl.col("part") == p).sum() / 1000.0).alias(p) for p in PARTS))
    )
    table = (
        windows.select("span", "name", "start_ns", "end_ns")
        .join(parts, on="span", how="left", maintain_order="left")
        .with_columns(
            pl.col(*PARTS).fill_null(0.0), length_us=(pl.col("end_ns") - pl.col("start_ns")) / 1000.0
        )
    )
    # with_stack's frames that straddle the annotation they open (partial overlaps) can count an
    # instant twice: the excess comes off the CPU part, so that the parts sum to the length
    excess = (pl.sum_horizontal(*PARTS) - pl.col("length_us")).clip(0)
    return table.with_columns(cpu_us=(pl.col("cpu_us") - excess).clip(0)).select(
        "span", "name", "start_ns", "end_ns", "length_us", *PARTS
    )


def thread_label(trace: Trace, track: int | None) -> str:
    """A thread's short name (``python3``, ``pt_autograd_0``)."""
    if track is None:
        return ""
    names = thread_names(trace.tracks).filter(pl.col("track") == track)
    return str(names["thread"][0]) if not names.is_empty() else str(track)
