"""Where the timeline's events lie: per row, the events sorted by start, and a level-of-detail pyramid.

A *row* is one line of the timeline: a CPU thread's summary (its outermost ops and runtime calls:
they never overlap, and their union is the thread's busy time) or one nesting depth of the thread
(every event of it: ops, calls, annotations, python frames; depths past :data:`MAX_DEPTH_ROWS` share
the last row); a GPU stream's work (kernels, memcpys, memsets), its syncs or its annotations. For
each row the index keeps

* the row's events as positions in the events table, sorted by start (:attr:`EventIndex.order`, 4
  bytes an event: their times are the events' own columns, read when drawn), and every
  :data:`SKIP`-th start, to find a time in two short steps;
* its longest events apart (at most one in :data:`LONG_SHARE`): any other event that reaches into a
  window then starts at most :attr:`RowIndex.reach` ns before it;
* a pyramid of bins of power-of-two widths counted from the trace's first ns (rows of at least
  :data:`PYRAMID_MIN` events): per bin its busy ns, its first and last covered ns and the event
  covering most of it. Its finest level has at most one bin per :data:`BIN_EVENTS` events, each
  coarser one half the bins of the one below. A window whose cells are at least two bins of a level
  wide is drawn from that level (a cell's first and last covered ns make what is drawn exact: see
  :mod:`tracetui.views.timeline.cells`), a finer one from its events.

The index is built once per trace (sorting, per row, the events' (row, start) keys), in a worker,
and kept with the trace's parts (:data:`KIND`: the order, the long events and the pyramid; a reopen
reads it back instead of sorting again).
"""

from __future__ import annotations

import io
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec
import polars as pl

from tracetui.trace.categories import GPU_LANE, GPU_WORK, LAUNCH_CALLS

if TYPE_CHECKING:
    from tracetui.trace import Trace

KIND = "timeline:index"
VERSION = 1
SKIP = 64
LONG_SHARE = 256
PYRAMID_MIN = 2048
BIN_EVENTS = 32
MAX_DEPTH_ROWS = 32
CPU_WORK = ("cpu_op", *LAUNCH_CALLS)
SUMMARY = 0  # a CPU thread's summary row; depth d is row d + 1
GPU_SUBS = {**dict.fromkeys(GPU_WORK, 0), "cuda_sync": 1, "gpu_user_annotation": 2}
GPU_ROW_NAMES = ("work", "syncs", "annotations")
KEY_BITS = 42  # a row's (sub, start) in one Int64 key: the start relative to the first ns
EVENT_COLUMNS = ("cat", "pid", "tid", "track", "depth", "op_id", "start_ns", "end_ns")


@dataclass(frozen=True)
class Level:
    """One level of a row's pyramid: the occupied bins of width ``1 << shift``, in order, and per bin
    its busy ns (``busy``: the running sum before each bin, one more entry than bins), first and last
    covered ns (relative to the index's origin) and the event covering most of it (``top``)."""

    shift: int
    bins: pl.Series
    busy: pl.Series
    first: pl.Series
    last: pl.Series
    top: pl.Series

    def __len__(self) -> int:
        return len(self.bins)


@dataclass(frozen=True)
class RowIndex:
    """One row: ``count`` events at ``offset`` in the index's order (by start), the longest apart."""

    track: int
    sub: int
    offset: int
    count: int
    reach: int
    """The longest of the row's events in the order (ns)."""
    skip: array[int]
    """The start of every :data:`SKIP`-th of them."""
    long_starts: pl.Series
    long_ends: pl.Series
    long_rows: pl.Series
    levels: tuple[Level, ...] = ()
    """Finest first."""

    @property
    def events(self) -> int:
        return self.count + len(self.long_rows)

    def level_for(self, cell_ns: int) -> Level | None:
        """The coarsest level whose bins are at most half a cell of ``cell_ns`` (None: draw the events)."""
        found = None
        for level in self.levels:
            if (2 << level.shift) <= cell_ns:
                found = level
            else:
                break
        return found


@dataclass
class EventIndex:
    """Every row of the trace's timeline, keyed by ``(track, sub)``."""

    origin: int
    end: int
    order: pl.Series
    rows: dict[tuple[int, int], RowIndex] = field(default_factory=dict)
    starts: pl.Series = field(default_factory=lambda: pl.Series([], dtype=pl.Int64))
    ends: pl.Series = field(default_factory=lambda: pl.Series([], dtype=pl.Int64))

    def position(self, row: RowIndex, t: int) -> int:
        """How many of the row's ordered events start before ``t``: a search of the skip list, then
        of one block (a few scalar reads: cheaper than a vectorised search for one time)."""
        block = bisect_left(row.skip, t)  # skip[block - 1] < t <= skip[block]
        if block == 0:
            return 0
        low = (block - 1) * SKIP + 1  # the start at (block - 1) * SKIP is before t
        high = min(block * SKIP, row.count)
        order, starts, offset = self.order, self.starts, row.offset
        while low < high:
            middle = (low + high) // 2
            if starts[order[offset + middle]] < t:
                low = middle + 1
            else:
                high = middle
        return low


def row_keys(trace: Trace, frame: pl.LazyFrame) -> pl.LazyFrame:
    """``(row, track, sub)`` of every (event, timeline row) pair of ``frame`` (the events' columns
    :data:`EVENT_COLUMNS` and ``row``, their position in the events table): the row that draws each
    (a thread's outermost ops and calls are in two: its summary and their depth)."""
    frame = frame.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())  # else: nowhere
    on_cpu = pl.col("track").is_not_null()
    depth = pl.col("depth").fill_null(0).clip(0, MAX_DEPTH_ROWS - 1).cast(pl.Int32) + 1
    cpu = frame.filter(on_cpu).select("row", "track", depth.alias("sub"))
    summary = frame.filter(on_cpu & pl.col("cat").is_in(CPU_WORK) & pl.col("op_id").is_null()).select(
        "row", "track", pl.lit(SUMMARY, pl.Int32).alias("sub")
    )
    gpu = gpu_rows(trace, frame.filter(~on_cpu & pl.col("cat").is_in(GPU_LANE)))
    return pl.concat([summary, cpu, gpu], how="vertical")


def rows_of(trace: Trace, positions: pl.Series) -> pl.DataFrame:
    """:func:`row_keys` of the events at ``positions`` (a few: a selection's flows, a highlight)."""
    events = trace.columns_of("events", *EVENT_COLUMNS)
    at = positions.cast(pl.UInt32)
    frame = events[at].with_columns(row=at)
    return row_keys(trace, frame.lazy()).collect()


def gpu_rows(trace: Trace, frame: pl.LazyFrame) -> pl.LazyFrame:
    """``(row, track, sub)`` of GPU-lane events (``frame``: with ``row``, ``cat``, ``pid``, ``tid``):
    their stream's track in ``trace.tracks`` (joined on the few distinct pairs, as text)."""
    lanes = trace.tracks.filter(pl.col("kind") == "gpu").select("track", "pid", "tid")
    pairs = frame.select("pid", "tid").unique().collect()
    named = pairs.with_columns(pl.col("pid", "tid").cast(pl.String).name.suffix("_text"))
    found = named.join(lanes, left_on=["pid_text", "tid_text"], right_on=["pid", "tid"], how="inner")
    subs = pl.DataFrame(
        {"cat": list(GPU_SUBS), "sub": list(GPU_SUBS.values())}, schema={"cat": pl.String, "sub": pl.Int32}
    )
    return (
        frame.select("row", "cat", "pid", "tid")
        .join(found.select("pid", "tid", "track").lazy(), on=["pid", "tid"], how="inner")
        .with_columns(pl.col("cat").cast(pl.String))
        .join(subs.lazy(), on="cat", how="inner")
        .select("row", pl.col("track").cast(pl.Int32), "sub")
    )


def build(trace: Trace) -> EventIndex:
    """Sort every row's events and build its pyramid, lane by lane (one lane's keys held at a time)."""
    times = trace.columns_of("events", "start_ns", "end_ns")  # kept: every frame reads them
    starts, ends = times["start_ns"], times["end_ns"]
    events = trace.read_once("events", [c for c in EVENT_COLUMNS if c not in times.columns]).with_columns(
        starts, ends
    )  # the rest only to sort: not kept (a trace from the cache reads them for this alone)
    empty = pl.Series("row", [], dtype=pl.UInt32)
    if events.is_empty():
        return EventIndex(0, 1, empty, {}, starts, ends)
    origin, end = int(starts.min()), int(ends.max())  # type: ignore[arg-type]
    index = EventIndex(origin, max(end, origin + 1), empty, {}, starts, ends)
    keys = row_keys(trace, events.lazy().with_row_index("row"))
    orders = []
    offset = 0
    for track in sorted(trace.tracks["track"].to_list()):
        lane = keys.filter(pl.col("track") == track).select("row", "sub").collect()
        for sub, rows in _sorted_rows(lane, starts, origin):
            row, regular = _row(int(track), sub, rows, starts, ends, offset, origin)
            orders.append(rows.filter(regular))
            offset += row.count
            index.rows[(row.track, row.sub)] = row
    index.order = pl.concat(orders) if orders else empty
    return index


def _sorted_rows(lane: pl.DataFrame, starts: pl.Series, origin: int) -> Iterator[tuple[int, pl.Series]]:
    """Per row of one lane: its events' positions sorted by start (ties: by position)."""
    if lane.is_empty():
        return
    frame = lane.with_columns((starts.gather(lane["row"]) - origin).alias("t"))
    if int(frame["t"].max()) < (1 << KEY_BITS) and int(frame["sub"].max()) < (1 << 20):  # type: ignore[arg-type]
        key = (pl.col("sub").cast(pl.Int64) * (1 << KEY_BITS)) + pl.col("t")
        ordered = frame.select("row", "sub", key.alias("k")).sort("k", maintain_order=True)
    else:  # a trace longer than 73 minutes: the three columns
        ordered = frame.sort("sub", "t", "row")
    for (sub,), group in ordered.partition_by("sub", as_dict=True, maintain_order=True).items():
        yield int(sub), group["row"]  # type: ignore[call-overload]


def at_least_one(starts: pl.Series, ends: pl.Series) -> pl.Series:
    """Ends, an instant given one ns: every event covers ``[start, max(end, start + 1))``."""
    return pl.select(pl.max_horizontal(ends, starts + 1)).to_series()  # for a whole row: at build


def _long_mask(durations: pl.Series) -> pl.Series:
    """The row's longest events (at most one in :data:`LONG_SHARE`, those longer than every other)."""
    k = len(durations) // LONG_SHARE
    if k == 0:
        return pl.repeat(False, len(durations), eager=True)
    bound = int(durations.top_k(k + 1).min())  # type: ignore[arg-type]
    return durations > bound


def _row(
    track: int, sub: int, rows: pl.Series, starts: pl.Series, ends: pl.Series, offset: int, origin: int
) -> tuple[RowIndex, pl.Series]:
    """The row's index, and which of ``rows`` are in the order (not long)."""
    s = starts.gather(rows)
    e = at_least_one(s, ends.gather(rows))
    durations = e - s
    long = _long_mask(durations)
    regular = ~long
    levels = _pyramid(s - origin, e - origin, rows) if len(rows) >= PYRAMID_MIN else ()
    row = RowIndex(
        track=track,
        sub=sub,
        offset=offset,
        count=int(regular.sum()),
        reach=int(durations.filter(regular).max() or 0),  # type: ignore[arg-type]
        skip=array("q", s.filter(regular).gather_every(SKIP).to_list()),
        long_starts=s.filter(long),
        long_ends=e.filter(long),
        long_rows=rows.filter(long),
        levels=levels,
    )
    return row, regular


# ---- the pyramid -----------------------------------------------------------------------------------


def _estimate(starts: pl.Series, ends: pl.Series, shift: int) -> int:
    """At most how many bins of width ``1 << shift`` the events (sorted by start) occupy."""
    width = 1 << shift
    first = starts // width
    changes = int((first.diff().fill_null(1) != 0).sum())
    spanned = int(((ends - 1) // width - first).sum())
    return changes + spanned


def finest_shift(starts: pl.Series, ends: pl.Series) -> int:
    """The finest bin width (as a shift) at which the events occupy at most one bin in
    :data:`BIN_EVENTS` of them."""
    target = max(1, len(starts) // BIN_EVENTS)
    low, high = 0, max(1, int(ends.max()).bit_length())  # type: ignore[arg-type]
    while low < high:
        middle = (low + high) // 2
        if _estimate(starts, ends, middle) <= target:
            high = middle
        else:
            low = middle + 1
    return low


def _pyramid(starts: pl.Series, ends: pl.Series, rows: pl.Series) -> tuple[Level, ...]:
    """The row's levels, finest first (times relative to the origin)."""
    shift = finest_shift(starts, ends)
    width = 1 << shift
    pieces = (
        pl.DataFrame({"s": starts, "e": ends, "r": rows})
        .with_columns(bin=pl.int_ranges(pl.col("s") // width, (pl.col("e") - 1) // width + 1))
        .explode("bin")
        .with_columns(
            lo=pl.max_horizontal("s", pl.col("bin") * width),
            hi=pl.min_horizontal("e", (pl.col("bin") + 1) * width),
        )
        .with_columns(ov=pl.col("hi") - pl.col("lo"))
    )
    level = (
        pieces.group_by("bin")
        .agg(
            pl.col("ov").sum().clip(upper_bound=width).alias("busy"),
            pl.col("lo").min().alias("first"),
            pl.col("hi").max().alias("last"),
            pl.col("r").get(pl.col("ov").arg_max()).alias("top"),
        )
        .sort("bin")
    )
    levels = [_level(shift, level)]
    while level.height > 1 and shift < 62:
        shift += 1
        level = (
            level.with_columns(pl.col("bin") // 2)
            .group_by("bin")
            .agg(
                pl.col("busy").sum(),
                pl.col("first").min(),
                pl.col("last").max(),
                pl.col("top").get(pl.col("busy").arg_max()),
            )
            .sort("bin")
        )
        levels.append(_level(shift, level))
    return tuple(levels)


def _level(shift: int, frame: pl.DataFrame) -> Level:
    busy = pl.concat([pl.Series([0], dtype=pl.Int64), frame["busy"].cast(pl.Int64).cum_sum()])
    return Level(
        shift,
        frame["bin"].cast(pl.Int64),
        busy,
        frame["first"].cast(pl.Int64),
        frame["last"].cast(pl.Int64),
        frame["top"].cast(pl.UInt32),
    )


# ---- kept with the trace ---------------------------------------------------------------------------


def write(index: EventIndex) -> dict[str, bytes]:
    """The index as the parts of :data:`KIND`."""
    rows = list(index.rows.values())
    plain = {
        "version": VERSION,
        "origin": index.origin,
        "end": index.end,
        "rows": [(r.track, r.sub, r.offset, r.count, r.reach, len(r.levels)) for r in rows],
    }
    long = pl.DataFrame(
        {
            "n": pl.Series([i for i, r in enumerate(rows) for _ in range(len(r.long_rows))], dtype=pl.UInt32),
            "row": pl.concat([r.long_rows for r in rows]) if rows else pl.Series([], dtype=pl.UInt32),
        }
    )
    levels = [
        pl.DataFrame(
            {
                "n": pl.repeat(i, len(level), dtype=pl.UInt32, eager=True),
                "shift": pl.repeat(level.shift, len(level), dtype=pl.UInt8, eager=True),
            }
        ).with_columns(
            bin=level.bins, first=level.first, last=level.last, top=level.top, busy=level.busy.diff().slice(1)
        )
        for i, r in enumerate(rows)
        for level in r.levels
    ]
    return {
        "index.msgpack": msgspec.msgpack.encode(plain),
        "order.arrow": _ipc(pl.DataFrame({"row": index.order})),
        "long.arrow": _ipc(long),
        "levels.arrow": _ipc(pl.concat(levels) if levels else _EMPTY_LEVELS),
    }


_EMPTY_LEVELS = pl.DataFrame(
    schema={
        "n": pl.UInt32,
        "shift": pl.UInt8,
        "bin": pl.Int64,
        "first": pl.Int64,
        "last": pl.Int64,
        "top": pl.UInt32,
        "busy": pl.Int64,
    }
)


def read(kept: dict[str, bytes], trace: Trace) -> EventIndex | None:
    """The kept index, or None: one that does not decode, or not of this trace's events."""
    try:
        return _decoded(kept, trace)
    except Exception:  # another shape (never served): built again
        return None


def _decoded(kept: dict[str, bytes], trace: Trace) -> EventIndex:
    plain = msgspec.msgpack.decode(kept["index.msgpack"])
    if plain["version"] != VERSION:
        raise ValueError("another version")
    events = trace.columns_of("events", "start_ns", "end_ns")
    starts, ends = events["start_ns"], events["end_ns"]
    order = pl.read_ipc(io.BytesIO(kept["order.arrow"]))["row"]
    long = pl.read_ipc(io.BytesIO(kept["long.arrow"]))
    levels = pl.read_ipc(io.BytesIO(kept["levels.arrow"]))
    if order.dtype != pl.UInt32 or (len(order) and int(order.max()) >= events.height):  # type: ignore[arg-type]
        raise ValueError("not this trace's events")
    index = EventIndex(int(plain["origin"]), int(plain["end"]), order, {}, starts, ends)
    long_by = long.partition_by("n", as_dict=True)
    level_by = levels.partition_by("n", as_dict=True)
    for n, (track, sub, offset, count, reach, depth) in enumerate(plain["rows"]):
        mine = long_by.get((n,))
        long_rows = mine["row"] if mine is not None else pl.Series([], dtype=pl.UInt32)
        s = starts.gather(long_rows)
        e = at_least_one(s, ends.gather(long_rows))
        skip = array("q", starts.gather(order.slice(offset, count).gather_every(SKIP)).to_list())
        kept_levels = level_by.get((n,))
        row_levels: tuple[Level, ...] = ()
        if kept_levels is not None:
            row_levels = tuple(
                _level(int(shift), group.sort("bin"))  # type: ignore[call-overload]
                for (shift,), group in sorted(kept_levels.partition_by("shift", as_dict=True).items())
            )
        if len(row_levels) != depth:
            raise ValueError("levels missing")
        index.rows[(int(track), int(sub))] = RowIndex(
            int(track), int(sub), int(offset), int(count), int(reach), skip, s, e, long_rows, row_levels
        )
    return index


def _ipc(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_ipc(buffer, compression="zstd")
    return buffer.getvalue()


def index_of(trace: Trace) -> EventIndex:
    """The trace's index: kept in its parts, else built (and kept)."""
    kept = trace.parts.get(KIND)
    if kept is not None:
        found = read(kept, trace)
        if found is not None:
            return found
    index = build(trace)
    trace.parts.put(KIND, write(index))
    return index
