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
hand-over), a binary search each, never one per event; what it crosses is then attributed with
polars expressions: each instant of a CPU stretch to the innermost event of the span covering it
(its self time on the path), each instant of a GPU stretch to the work running.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from tracetui.insight.launch_gaps import HOST_WAIT, KERNEL_WAIT, NONE, OTHER, launch_gaps
from tracetui.insight.spans import span_windows
from tracetui.trace.categories import LAUNCH_CALLS
from tracetui.trace.memo import kept
from tracetui.trace.stats import annotation_cpu_events, merged_intervals, thread_names

if TYPE_CHECKING:
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
PIECE_SCHEMA = {
    "span": pl.UInt32,
    "id": pl.UInt32,
    "name": pl.String,
    "kind": pl.String,
    "start_ns": pl.Int64,
    "ns": pl.Int64,
    "track": pl.Int32,
    "lane": pl.Int64,
}


@dataclass(frozen=True)
class CriticalPaths:
    """The critical paths of one kind of span (``steps`` or ``annotations``).

    * ``spans``: one row per span: ``span``, ``name``, ``start_ns``, ``end_ns`` (the window's end:
      its CPU end or its GPU work's, the later), ``length_us`` and the parts ``cpu_us``, ``gpu_us``,
      ``launch_us``, ``sync_wait_us``, ``gap_us`` (they sum to ``length_us``);
    * ``segments``: the walk, one row per stretch of one resource (:data:`SEGMENT_SCHEMA`), in time
      order per span;
    * ``pieces``: what the path crossed, one row per event (its time on the path) and per launch
      delay, wait or gap (:data:`PIECE_SCHEMA`; ``id`` null for a host gap), in time order per span.
    """

    spans: pl.DataFrame
    segments: pl.DataFrame
    pieces: pl.DataFrame

    def top(self, span: int, limit: int = 8) -> list[dict[str, Any]]:
        """The names that took most of one span's path: ``name``, ``kind``, ``us``, ``share``."""
        return self.tops(limit).get(span, [])

    def tops(self, limit: int = 8) -> dict[int, list[dict[str, Any]]]:
        """:meth:`top` of every span, in one aggregation over the pieces (computed once)."""
        cached = self.__dict__.get("_tops")
        if cached is not None and cached[0] >= limit:
            return {k: v[:limit] for k, v in cached[1].items()}
        lengths = dict(self.spans.select("span", "length_us").iter_rows())
        summed = (
            self.pieces.group_by("span", "name", "kind")
            .agg((pl.col("ns").sum() / 1000.0).alias("us"))
            .sort(["span", "us", "name", "kind"], descending=[False, True, False, False])
            .group_by("span", maintain_order=True)
            .head(limit)
        )
        found: dict[int, list[dict[str, Any]]] = {}
        for span, name, kind, us in summed.iter_rows():
            length = lengths.get(span) or 0.0
            found.setdefault(span, []).append(
                {"name": name, "kind": kind, "us": us, "share": us / length if length else None}
            )
        object.__setattr__(self, "_tops", (limit, found))
        return found


def top_names(pieces: pl.DataFrame) -> pl.DataFrame:
    """``(name, kind, us)``: pieces summed by name and kind, the largest first (then by name)."""
    return (
        pieces.group_by("name", "kind")
        .agg((pl.col("ns").sum() / 1000.0).alias("us"))
        .sort(["us", "name", "kind"], descending=[True, False, False])
    )


def step_paths(trace: Trace) -> CriticalPaths:
    """The critical path of every ``ProfilerStep#N`` (computed once per trace)."""
    return kept(trace, "critical_steps", lambda: _paths(trace, "steps"))


def annotation_paths(trace: Trace) -> CriticalPaths:
    """The critical path of every annotation call (computed once per trace)."""
    return kept(trace, "critical_annotations", lambda: _paths(trace, "annotations"))


def paths_of(trace: Trace, span: int) -> CriticalPaths | None:
    """The paths (steps' or annotations') that hold ``span``, else None."""
    for paths in (step_paths(trace), annotation_paths(trace)):
        if (paths.spans["span"] == span).any():
            return paths
    return None


# ---- the graph: what the walk looks up -----------------------------------------------------------
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
        exits = _exits(trace, gaps)
        self.exit_track = exits["track"].to_numpy()
        self.exit_at = exits["at_ns"].to_numpy()
        self.exit_what = exits["what"].to_numpy()
        self.exit_target = exits["target"].to_numpy()
        self.exit_upper = exits["upper_ns"].to_numpy()
        self.exit_ref = exits["ref"].to_numpy()
        self.track_bounds = {int(t): (int(a), int(b)) for t, a, b in _runs(self.exit_track)}

    def row_of(self, event_id: int) -> int:
        at = int(np.searchsorted(self.ids_sorted, event_id))
        return int(self.row_of_sorted[at])

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


def _exits(trace: Trace, gaps: pl.DataFrame) -> pl.DataFrame:
    """Where the path leaves a thread: ``track``, ``at_ns`` (the point), ``what`` (0: a blocking call
    whose awaited work ``target`` (a lane row) ended at ``at_ns``; 1: a hand-over to thread
    ``target``, whose work ended at ``at_ns`` in this thread's idle time), ``upper_ns`` (the call's
    end), ``ref`` (the call's id), sorted by track and point."""
    schema = {
        "track": pl.Int32,
        "at_ns": pl.Int64,
        "what": pl.Int8,
        "target": pl.Int64,
        "upper_ns": pl.Int64,
        "ref": pl.Int64,
    }
    parts = [_blocking_exits(trace, gaps).cast(schema), _handover_exits(trace).cast(schema)]  # type: ignore[arg-type]
    return pl.concat(parts).sort("track", "at_ns", "what")


def _process_of(trace: Trace) -> pl.DataFrame:
    """``(track, process)``: each CPU track's process as a number."""
    tracks = trace.tracks.filter(pl.col("kind") == "cpu")
    return tracks.select(
        pl.col("track").cast(pl.Int32), pl.col("pid").rank("dense").cast(pl.Int64).alias("process")
    )


def _blocking_exits(trace: Trace, gaps: pl.DataFrame) -> pl.DataFrame:
    calls = (
        trace.events.lazy()
        .filter(pl.col("cat").is_in(LAUNCH_CALLS) & pl.col("name").cast(pl.String).is_in(BLOCKING_CALLS))
        .select("id", "track", "start_ns", "end_ns")
        .collect()
    )
    empty = pl.DataFrame(
        schema={
            "track": pl.Int32,
            "at_ns": pl.Int64,
            "what": pl.Int8,
            "target": pl.Int64,
            "upper_ns": pl.Int64,
            "ref": pl.Int64,
        }
    )
    if calls.is_empty() or gaps.is_empty():
        return empty
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


def _handover_exits(trace: Trace) -> pl.DataFrame:
    """Threads linked by ``fwdbwd`` (a backward op's thread and its forward op's): for each idle
    interval of one, the latest end of the other's busy time inside it."""
    empty = pl.DataFrame(
        schema={
            "track": pl.Int32,
            "at_ns": pl.Int64,
            "what": pl.Int8,
            "target": pl.Int64,
            "upper_ns": pl.Int64,
            "ref": pl.Int64,
        }
    )
    events = trace.events
    backward = events.lazy().filter(pl.col("fwd_id").is_not_null()).select("track", "fwd_id").collect()
    if backward.is_empty():
        return empty
    forward = trace.lookup(backward["fwd_id"], "track")["track"]
    pairs = (
        pl.DataFrame({"b": backward["track"], "a": forward})
        .drop_nulls()
        .filter(pl.col("a") != pl.col("b"))
        .unique()
    )
    if pairs.is_empty():
        return empty
    links = pl.concat([pairs.select(x="a", y="b"), pairs.select(x="b", y="a")]).unique()
    tracks = pl.concat([links["x"], links["y"]]).unique()
    busy_rows = (
        events.lazy()
        .filter(pl.col("cat").is_in(["cpu_op", *LAUNCH_CALLS]) & pl.col("track").is_in(tracks.implode()))
        .select("track", "start_ns", "end_ns")
        .collect()
    )
    busy = merged_intervals(busy_rows, "track")
    idle = busy.with_columns(
        i0=pl.col("end_ns").shift(1).over("track").fill_null(np.iinfo(np.int64).min),
        i1=pl.col("start_ns"),
    ).select("track", "i0", "i1")
    found = []
    for x, y in links.iter_rows():  # one pair of linked threads at a time (a few)
        mine = idle.filter(pl.col("track") == x).sort("i1")
        ends = busy.filter(pl.col("track") == y).select(pl.col("end_ns").alias("at_ns")).sort("at_ns")
        hit = mine.join_asof(
            ends, left_on="i1", right_on="at_ns", strategy="backward", check_sortedness=False
        )
        hit = hit.filter(pl.col("at_ns").is_not_null() & (pl.col("at_ns") > pl.col("i0")))
        found.append(
            hit.select(
                "track",
                "at_ns",
                pl.lit(1, pl.Int8).alias("what"),
                pl.lit(y, pl.Int64).alias("target"),
                pl.col("i1").alias("upper_ns"),
                pl.lit(None, pl.Int64).alias("ref"),
            )
        )
    return pl.concat(found) if found else empty


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


def _paths(trace: Trace, kind: str) -> CriticalPaths:
    windows = span_windows(trace, kind)
    graph = _graph(trace)
    work = trace.span_work.join(windows.select(pl.col("span")), on="span")
    last = (
        work.sort("end_ns", "id")
        .group_by("span", maintain_order=True)
        .agg(pl.col("id").last().alias("last_id"))
    )
    windows = windows.join(last, on="span", how="left", maintain_order="left")
    rows: list[tuple[Any, ...]] = []
    for span, track, start, cpu_end, last_id in windows.select(
        "span", "track", "start_ns", "cpu_end_ns", "last_id"
    ).iter_rows():  # one walk per span: a loop over spans and, inside, over the path's hops
        last_row = graph.row_of(last_id) if last_id is not None else -1
        walked = _walk(graph, span, -1 if track is None else track, start, cpu_end, last_row)
        rows += [(span, len(walked) - i, *s) for i, s in enumerate(walked)]
    segments = pl.DataFrame(rows, schema=SEGMENT_SCHEMA, orient="row").sort("span", "seq")
    segments = segments.filter(pl.col("end_ns") > pl.col("start_ns"))
    pieces = pl.concat(
        [
            _cpu_pieces(trace, kind, segments),
            _gpu_pieces(graph, segments),
            _other_pieces(trace, graph, segments),
        ]
    ).sort("span", "start_ns", "ns")
    return CriticalPaths(_span_parts(windows, pieces), segments, pieces)


# ---- what the path crossed -------------------------------------------------------------------------
def _cpu_pieces(trace: Trace, kind: str, segments: pl.DataFrame) -> pl.DataFrame:
    """Each CPU stretch's time by the innermost event of the span covering it (its self time on the
    path: the overlap of the event with the span's stretches on its thread, less its children's),
    and the rest as a host gap (untraced time, or a user annotation's self time)."""
    stretches = (
        segments.filter(pl.col("what") == "cpu")
        .select("span", "track", "start_ns", "end_ns")
        .sort("span", "track", "start_ns")
        .with_columns(
            length=pl.col("end_ns") - pl.col("start_ns"),
        )
        .with_columns(before=(pl.col("length").cum_sum() - pl.col("length")).over("span", "track"))
    )
    if stretches.is_empty():
        return pl.DataFrame(schema=PIECE_SCHEMA)
    keys = stretches.select("span", "track").unique(maintain_order=True).with_row_index("code")
    members = _members(trace, kind, keys)
    stretches = stretches.join(keys, on=["span", "track"]).sort("code", "start_ns")
    overlap = members.with_columns(
        on=_path_time_at(stretches, members["code"], members["end_ns"])
        - _path_time_at(stretches, members["code"], members["start_ns"])
    ).filter(pl.col("on") > 0)
    children = (
        overlap.filter(pl.col("parent").is_not_null())
        .group_by("span", "parent")
        .agg(pl.col("on").sum().alias("children"))
        .rename({"parent": "id"})
    )
    own = (
        overlap.join(children, on=["span", "id"], how="left")
        .with_columns(ns=(pl.col("on") - pl.col("children").fill_null(0)).clip(0))
        .filter(pl.col("ns") > 0)
    )
    cat = pl.col("cat")
    piece_kind = (
        pl.when(cat == "python_function")
        .then(pl.lit("python"))
        .when(cat == "user_annotation")
        .then(pl.lit("gap"))
        .when(cat.is_in(LAUNCH_CALLS) & pl.col("name").cast(pl.String).is_in(BLOCKING_CALLS))
        .then(pl.lit("sync"))
        .when(cat.is_in(LAUNCH_CALLS))
        .then(pl.lit("runtime"))
        .otherwise(pl.lit("cpu_op"))
    )
    attributed = own.select(
        "span",
        pl.when(cat == "user_annotation").then(None).otherwise(pl.col("id")).alias("id"),
        pl.when(cat == "user_annotation")
        .then(pl.lit(HOST_GAP))
        .otherwise(pl.col("name").cast(pl.String))
        .alias("name"),
        piece_kind.alias("kind"),
        "start_ns",
        "ns",
        "track",
        pl.lit(None, pl.Int64).alias("lane"),
    )
    # what no member covers: untraced host time, per stretch
    totals = stretches.group_by("span", "track").agg(
        pl.col("length").sum().alias("total"), pl.col("start_ns").min().alias("first")
    )
    covered_ns = own.group_by("span", "track").agg(pl.col("ns").sum().alias("covered"))
    rest = (
        totals.join(covered_ns, on=["span", "track"], how="left")
        .with_columns(ns=pl.col("total") - pl.col("covered").fill_null(0))
        .filter(pl.col("ns") > 0)
        .select(
            "span",
            pl.lit(None, pl.UInt32).alias("id"),
            pl.lit(HOST_GAP).alias("name"),
            pl.lit("gap").alias("kind"),
            pl.col("first").alias("start_ns"),
            "ns",
            "track",
            pl.lit(None, pl.Int64).alias("lane"),
        )
    )
    return pl.concat([attributed.cast(PIECE_SCHEMA), rest.cast(PIECE_SCHEMA)])  # type: ignore[arg-type]


def _path_time_at(stretches: pl.DataFrame, code: pl.Series, at: pl.Series) -> pl.Series:
    """The path's time on a thread of a span up to each point ``at``: the stretches of the
    (span, thread) ``code`` before it, and the part of the one it falls in. ``stretches`` (sorted by
    ``code``, ``start_ns``): ``code``, ``start_ns``, ``length``, ``before`` (the time of the earlier
    stretches of its code). One binary search per point, on keys packing the code with the time."""
    low = int(stretches["start_ns"].min())  # type: ignore[arg-type]
    width = int(stretches["end_ns"].max()) - low + 1  # type: ignore[arg-type]
    starts = stretches["start_ns"].to_numpy()
    codes = stretches["code"].to_numpy().astype(np.int64)
    keys = codes * width + (starts - low)
    points = np.clip(at.to_numpy(), low, low + width - 1)
    wanted = code.to_numpy().astype(np.int64)
    index = np.searchsorted(keys, wanted * width + (points - low), side="right") - 1
    found = index >= 0
    index = np.maximum(index, 0)
    found &= codes[index] == wanted
    length = stretches["length"].to_numpy()
    inside = np.clip(points - starts[index], 0, length[index])
    return pl.Series(np.where(found, stretches["before"].to_numpy()[index] + inside, 0))


def _members(trace: Trace, kind: str, keys: pl.DataFrame) -> pl.DataFrame:
    """The CPU events of each span on the threads its path crossed: ``span``, ``id``, ``name``,
    ``cat``, ``track``, ``start_ns``, ``end_ns``, ``parent``. A step's are the events whose step it
    is (itself included); an annotation call's, the events of its process that start while it is
    open (:func:`annotation_cpu_events`), and itself."""
    columns = ["id", "name", "cat", "track", "start_ns", "end_ns", "parent"]
    tracks = keys["track"].unique().implode()
    events = trace.events.lazy().filter(pl.col("track").is_in(tracks) & pl.col("cat").is_in(CPU_CATS))
    if kind == "steps":
        rows = events.filter(pl.col("step_id").is_not_null()).select(
            pl.col("step_id").alias("span"), *columns
        )
    else:
        pairs = annotation_cpu_events(trace.events)
        calls = trace.annotation_instances.select(pl.col("id").alias("span"), "id")
        pairs = pl.concat([pairs, calls.select("span", "id")])
        rows = events.select(*columns).join(pairs.lazy(), on="id").select("span", *columns)
    return rows.join(keys.lazy(), on=["span", "track"]).collect()


def _gpu_pieces(graph: _Graph, segments: pl.DataFrame) -> pl.DataFrame:
    """Each GPU stretch (a chain of lane rows) by the work running, and the gaps between its work
    (kernel to kernel: the work was queued)."""
    chains = segments.filter(pl.col("what") == "gpu").select(
        "span", "lane", "start_ns", "end_ns", "head", "last", pl.int_range(pl.len()).alias("chain")
    )
    if chains.is_empty():
        return pl.DataFrame(schema=PIECE_SCHEMA)
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
    spent = work.filter(pl.col("ns") > 0).select(
        "span",
        "id",
        "name",
        pl.col("cat").replace_strict(_GPU_KIND, default="kernel").alias("kind"),
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
            pl.lit(KERNEL_TO_KERNEL).alias("name"),
            pl.lit("launch").alias("kind"),
            "start_ns",
            "ns",
            pl.lit(None, pl.Int32).alias("track"),
            "lane",
        )
    )
    return pl.concat([spent.cast(PIECE_SCHEMA), between.cast(PIECE_SCHEMA)])  # type: ignore[arg-type]


def _other_pieces(trace: Trace, graph: _Graph, segments: pl.DataFrame) -> pl.DataFrame:
    """Launch delays, synchronisation waits, waits on another stream and unexplained GPU waits."""
    rest = segments.filter(pl.col("what").is_in(["launch", "sync", "wait", "gap"]))
    if rest.is_empty():
        return pl.DataFrame(schema=PIECE_SCHEMA)
    streams = graph.gaps["stream"]
    sync_names = trace.lookup(rest["ref"].cast(pl.UInt32), "name")["name"].cast(pl.String)
    rest = rest.with_columns(sync_name=sync_names)
    other_stream = pl.col("ref").map_elements(lambda r: int(streams[r]), return_dtype=pl.Int64)
    what = pl.col("what")
    name = (
        pl.when(what == "launch")
        .then(pl.lit(LAUNCH_DELAY))
        .when(what == "sync")
        .then(pl.col("sync_name"))
        .when(what == "wait")
        .then(pl.format("waits for stream {}", other_stream))
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
        name.alias("name"),
        kind.alias("kind"),
        "start_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("ns"),
        "track",
        "lane",
    ).cast(PIECE_SCHEMA)  # type: ignore[arg-type]


def _span_parts(windows: pl.DataFrame, pieces: pl.DataFrame) -> pl.DataFrame:
    """Per span: the length and the parts (pieces summed by :data:`PART` of their kind)."""
    parts = (
        pieces.with_columns(part=pl.col("kind").replace_strict(PART))
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
