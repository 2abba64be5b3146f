"""Build a :class:`Trace` from a file: read, decode, tabulate, nest, link, count.

The loader owns every read and write of a load: the trace file (now, and later for the raw
args of a trace from the cache) and the cache entry (:mod:`tracetui.trace.cache`). The model it
returns does no I/O of its own.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import polars as pl

from tracetui.errors import TraceError
from tracetui.trace import allocator, cache, links, stats, stream
from tracetui.trace.align import Rows
from tracetui.trace.args import ArgsBlocks, Deferred, RawArgs
from tracetui.trace.categories import GPU_LANE, GPU_WORK
from tracetui.trace.decoded import Decoded
from tracetui.trace.frames import build_tables
from tracetui.trace.layout import ARGS_FILE, ARGS_TABLES, schema
from tracetui.trace.links import ANOMALY_SCHEMA
from tracetui.trace.model import NO_PARTS, PartStore, TableSource, Trace, Unread, read_table
from tracetui.trace.nesting import classify_overlaps, nest
from tracetui.trace.release import hand_back
from tracetui.trace.source import Source, open_source, read_fraction
from tracetui.trace.spill import SpilledTables
from tracetui.trace.times import exact_ns as _exact_ns
from tracetui.trace.times import exact_times as _exact_times
from tracetui.trace.times import usable_duration

Progress = Callable[[str], None]
EVENT_COLUMNS = list(schema("events"))  # the events table's columns, in their order
Read = tuple[Source, "stream.Streamed", str | None]  # a file read and scanned, and its cache identity


def load_now(
    path: str | Path,
    progress: Progress | None = None,
    read: Read | None = None,
    fraction: Callable[[float], None] | None = None,
    max_inflate: float | None = None,
    workers: int | None = None,
) -> Trace:
    """:func:`tracetui.trace.load`, here and now; ``read``: the file already read and scanned (by
    :mod:`prefetch`), with its :func:`cache.identity` taken before it was read."""
    say = _handing_back(progress or (lambda stage: None))
    with _gc_paused():
        if read is None:
            say("reading")
            found = read_trace(path, fraction, max_inflate, workers)
            if isinstance(found, Trace):
                return found
            read = found
        source, streamed, ident = read
        allocator.keep_freed_below(source.json_bytes // 2)  # half the JSON: see the module
        say("decoding")
        decoded = stream.finish(streamed)
        del streamed, read
        parts: PartStore = NO_PARTS
        if source.regular:
            parts = cache.parts_for(source.path, ident, source.json_bytes, source.digest)
        trace = build(decoded, source, parts, say)
    hand_back()
    if source.regular:
        cache.store(trace, source.json_bytes, ident, source.digest)
    return trace


def _handing_back(say: Progress) -> Progress:
    """``say``, which also gives the C heap's free pages back as each stage begins (what the one
    before freed would otherwise stay resident under the next one's peak)."""

    def stage(name: str) -> None:
        hand_back()
        say(name)

    return stage


def read_trace(
    path: str | Path,
    fraction: Callable[[float], None] | None = None,
    max_inflate: float | None = None,
    workers: int | None = None,
) -> Read | Trace:
    """The cached trace of ``path``, or its file read and scanned (no polars needed; inflated within
    ``max_inflate``: :func:`open_source`; scanned on ``workers`` cores), with the file's cache
    identity taken before the read (the entry is written only if it still holds after)."""
    source, blocks = open_source(path, max_inflate)
    on_block = read_fraction(source, fraction)
    if not source.regular:  # a pipe: read once, never cached
        return source, stream.read(source.path, blocks, on_block=on_block, workers=workers), None
    ident = cache.identity(source.path)
    cached = cache.lookup(source.path, source.siblings, partial(_cached_args, source.path, max_inflate))
    if cached is not None:
        return cached
    return source, stream.read(source.path, blocks, on_block=on_block, workers=workers), ident


def _cached_args(path: Path, max_inflate: float | None, tables: TableSource, ident: str) -> RawArgs:
    """The raw args of a trace from the cache: from the entry's args tables and file (the deflated
    blocks the load kept, read on first use), else read again from the file."""
    if set(ARGS_TABLES) <= set(tables.names) and ARGS_FILE in tables.files:
        return Deferred(partial(_stored_args, tables))
    return Deferred(partial(_args_of_file, path, ident, max_inflate))


def _stored_args(tables: TableSource) -> RawArgs:
    blocks, lengths = (read_table(tables, name) for name in ARGS_TABLES)
    data = tables.file(ARGS_FILE)
    try:
        return ArgsBlocks.from_tables(blocks, lengths, data)
    except ValueError:  # the file is not what its blocks say: the entry is removed
        data.close()
        raise tables.damaged(ARGS_FILE) from None
    except BaseException:
        data.close()
        raise


def _args_of_file(path: Path, ident: str | None, max_inflate: float | None) -> RawArgs:
    """The raw args of a trace file's events, read again as ``load`` decoded them, if the file is
    still the one whose identity the cache entry holds."""
    source, blocks = open_source(path, max_inflate)
    args = stream.finish(stream.read(source.path, blocks)).args
    if ident is None or cache.identity(path) != ident:
        raise TraceError(path, "the file changed since it was opened; open it again")
    return args


def build(decoded: Decoded, source: Source, parts: PartStore, say: Progress = lambda stage: None) -> Trace:
    """The model of a decoded trace."""
    say("tabulating")
    tables = build_tables(decoded.tables)
    decoded.tables = {}
    events = tables.events.with_columns(_as_query(tables.events, ("ts", "dur"), _exact_times("ts", "dur")))
    tables.events = events.clear()  # the scan's own columns are held by ``events`` alone
    bad_durations = _bad_durations(events)
    tracks, lanes = _tracks(events, decoded.lanes, tables.meta)
    # what the forward links read of the flows (a fifth of them at most); the model's flows and
    # recorded shapes are kept on disk until used (it counts the flows, and reads the shapes of
    # the ops that launched GPU work once)
    fwdbwd = _fwdbwd_flows(tables.flows, lanes["track"])
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracetui-build") as aside:
        # the other core (polars and the C passes release the GIL): the seldom-read tables are
        # written to disk (~0.1 s at 1 GB, and let go), then the launches are found (they need
        # only the scanned columns) while the trees are built (the rest, in turn, would hold the
        # transients of both at once)
        seldom = {"flows": tables.flows.drop("lane"), "recorded_shapes": tables.args.pop("shapes")}
        tables.flows = tables.flows.clear()
        kept_aside = aside.submit(_kept_aside, source.path, seldom)
        del seldom
        lane_rows = events["lane"]
        thread = lanes["track"].gather(lane_rows).alias("track")  # every row's (pid, tid) track
        process = lanes["process"].gather(lane_rows).alias("process")
        events = events.drop("lane")  # read: its memory goes now, not after the build
        del lane_rows
        rows = Rows(events)  # every column below goes on these rows
        launched = aside.submit(links.launches, events)
        say("nesting")
        tree, overlaps = nest(events.select("id", "cat", "start_ns", "end_ns", thread))
        del thread
        tree_rows = rows.of(tree["id"])  # the events row of each tree row
        on_tree = rows.placement_of_rows(tree_rows)  # the tree row of each event (null: not nested)
        say("linking")
        marks = events.select(links.is_op().alias("op"), _annotation_mark(events))[tree_rows]
        tree = tree.hstack(marks).with_columns(process.gather(tree_rows))
        del marks, tree_rows
        steps = links.steps_by_time(events.with_columns(process), tree.select("id", "process", "start_ns"))
        del process
        cpu = links.cpu_ancestors(tree).with_columns(
            _in_tree_order(steps, "step_id", rows, on_tree, len(tree))
        )
        del steps
        placed = [*tree.select(CPU_COLUMNS).get_columns(), *cpu.drop("id").get_columns()]
        tree = tree.select("start_ns", "end_ns", "end_pos", "parent_pos")  # what counting reads
        # placed one at a time: the tree's own columns (track, pos, parent, depth) go as they are
        # placed (each new column is a column of events: 77 MB in all at 1 GB)
        events = rows.place(events, _one_by_one(placed), on_tree)
        launch, duplicates = launched.result()
        aside_tables = kept_aside.result()
    call_at = on_tree.gather(rows.of(launch["launch_id"].drop_nulls()))  # the calls' tree rows
    events = _with_launch_columns(events, launch, cpu, call_at, rows)
    del cpu
    counts = stats.node_stats(tree, _launched_work(events, launch, call_at, rows))
    del tree, launch, call_at  # the counts keep only the subtree ends once they have the self
    self_time = next(counts).gather(on_tree)  # times: the tree's times and parents go now
    forward = links.forward_links(events, tables.args["op_args"], fwdbwd)
    del fwdbwd
    events = rows.attach(events, forward)
    del forward
    say("counting")
    events = rows.place(events.with_columns(self_time), counts, on_tree).select(EVENT_COLUMNS)
    del counts, self_time, on_tree
    anomalies = [classify_overlaps(overlaps, events), duplicates]
    if "baseTimeNanoseconds" in decoded.top:
        anomalies.append(links.external_id_mismatches(events))
    anomalies += [_missing_times(events), bad_durations, _long_values(decoded)]
    return Trace(
        path=source.path,
        events=events,
        instants=tables.instants.drop("lane"),
        flows=aside_tables["flows"],
        meta_events=tables.meta.drop("lane"),
        counters=tables.counters,
        tracks=tracks,
        anomalies=pl.concat([a.cast(ANOMALY_SCHEMA) for a in anomalies]),  # type: ignore[arg-type]
        metadata=decoded.top,
        format=_format(decoded, tables.legacy_categories),
        gzipped=source.gzipped,
        truncated=decoded.truncated or source.gzip_truncated,
        repairs=decoded.repairs,
        reader=decoded.reader,
        siblings=source.siblings,
        other_phases=tables.other_phases,
        raw_args=decoded.args,
        parts=parts,
        gpu_args=tables.args["gpu_args"],
        call_args=tables.args["call_args"],
        op_args=tables.args["op_args"],
        python_args=tables.args["python_args"],
        recorded_shapes=aside_tables["recorded_shapes"],
    )


def _kept_aside(path: Path, tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame | Unread]:
    """The model's tables that are seldom read, on disk until first used (:mod:`tracetui.trace.spill`),
    else (small, or no temporary file) in memory."""
    spilled = SpilledTables.of(path, tables)
    return dict(tables) if spilled is None else {name: Unread(spilled, name) for name in tables}


def _fwdbwd_flows(flows: pl.DataFrame, track: pl.Series) -> pl.DataFrame:
    """The ``fwdbwd`` flows' :data:`links.FLOW_COLUMNS`, ``ts_ns`` and ``track`` (from their ``lane``):
    what the forward links read (only these rows are copied)."""
    rows = (flows["cat"] == "fwdbwd").arg_true()
    picked = flows.select(*links.FLOW_COLUMNS, "lane")[rows]
    return _flows_ns(picked).with_columns(track.gather(picked["lane"]).alias("track")).drop("lane")


def _annotation_mark(events: pl.DataFrame) -> pl.Series:
    """Whether each event is an annotation (:func:`links.is_annotation`), its name tested on the
    user annotations only."""
    rows = (events["cat"] == "user_annotation").arg_true()
    found = events[rows].select(links.is_annotation()).to_series()
    return pl.repeat(False, len(events), eager=True).scatter(rows, found).alias("annotation")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The decoder allocates millions of acyclic objects: skip the cyclic GC meanwhile."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _as_query(frame: pl.DataFrame, inputs: tuple[str, ...], exprs: list[pl.Expr]) -> list[pl.Series]:
    """``exprs`` over the ``inputs`` columns of ``frame``, as a query: it computes a shared part
    once (the exact times' start and its floor), on both cores. Its columns come in pieces; they
    are joined into one each, so that the frame's later gathers need not."""
    return frame.select(inputs).lazy().select(exprs).collect().rechunk().get_columns()


def _flows_ns(flows: pl.DataFrame) -> pl.DataFrame:
    return flows.with_columns(_as_query(flows, ("ts",), [_exact_ns("ts").alias("ts_ns")]))


def _tracks(
    events: pl.DataFrame, lanes: pl.DataFrame, meta: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One row per (pid, tid) of the events: kind (cpu/gpu), display name, and a stable track
    number; and per lane of the scan (its (pid, tid)), its ``track`` and ``process`` (a number
    per pid)."""
    names = _thread_names(meta)
    per_lane = events.group_by("lane").agg(
        pl.col("cat").is_in(GPU_LANE).any().alias("gpu"), pl.len().alias("events")
    )
    tracks = (
        per_lane.join(lanes, on="lane")
        .group_by("pid", "tid")
        .agg(pl.col("gpu").any(), pl.col("events").sum().cast(pl.UInt32))
        .join(names, on=["pid", "tid"], how="left")
        .with_columns(
            pid_num=pl.col("pid").cast(pl.Int64, strict=False),
            tid_num=pl.col("tid").cast(pl.Int64, strict=False),
        )
        .sort(["gpu", "pid_num", "pid", "tid_num", "tid"], nulls_last=True)
        .with_row_index("track")
        .with_columns(
            pl.col("track").cast(pl.Int32), kind=pl.when("gpu").then(pl.lit("gpu")).otherwise(pl.lit("cpu"))
        )
        .drop("gpu", "pid_num", "tid_num")
    )
    of_lanes = lanes.join(
        tracks.select("pid", "tid", "track"),
        on=["pid", "tid"],
        how="left",
        nulls_equal=True,
        maintain_order="left",
    ).with_columns(process=pl.col("pid").rank("dense").cast(pl.UInt32))
    return tracks, of_lanes


def _thread_names(meta: pl.DataFrame) -> pl.DataFrame:
    """``(pid, tid, thread_name)``. Kineto may name a thread twice, ``thread 502 (python3)`` (the
    process's name) and ``thread 502 (pt_autograd_0)``, in either order: the specific name wins."""
    process = meta.filter(pl.col("name") == "process_name").group_by("pid").agg(pl.col("meta_name").last())
    name = pl.col("meta_name").str.strip_chars()
    generic = name.str.ends_with(pl.format("({})", pl.col("process"))).fill_null(False)
    return (
        meta.filter((pl.col("name") == "thread_name") & pl.col("meta_name").is_not_null())
        .join(process.rename({"meta_name": "process"}), on="pid", how="left")
        .group_by("pid", "tid", maintain_order=True)
        .agg(pl.coalesce(name.filter(~generic).last(), name.last()).alias("thread_name"))
    )


# the tree's columns on the events table
CPU_COLUMNS = ("track", "pos", "end_pos", "parent", "depth")


def _one_by_one(columns: list[pl.Series]) -> Iterator[pl.Series]:
    """``columns`` one at a time, in order, each let go of as it is given (the list is emptied)."""
    columns.reverse()
    while columns:
        yield columns.pop()


def _in_tree_order(part: pl.DataFrame, column: str, rows: Rows, on_tree: pl.Series, size: int) -> pl.Series:
    """``part``'s ``column`` (for some of the ``size`` tree events, by ``id``) on the tree's rows
    (null elsewhere)."""
    at = on_tree.gather(rows.of(part["id"]))
    return (
        pl.repeat(None, size, dtype=part.schema[column], eager=True).scatter(at, part[column]).alias(column)
    )


def _with_launch_columns(
    events: pl.DataFrame, launch: pl.DataFrame, cpu: pl.DataFrame, call_at: pl.Series, rows: Rows
) -> pl.DataFrame:
    """GPU rows get launch_id and, from their call (``cpu``'s row ``call_at``, for those with one),
    the launching op, annotation and step."""
    linked = launch["launch_id"].is_not_null()
    calls = cpu.select(pl.col("op_id").alias("launch_op_id"), "annotation_id", "step_id")
    from_call = calls.select(pl.all().gather(call_at))
    placed = {name: _scatter_nulls(from_call[name], linked) for name in from_call.columns}
    return rows.attach(events, launch.with_columns(**placed))


def _scatter_nulls(values: pl.Series, mask: pl.Series) -> pl.Series:
    """``values`` on the rows of ``mask`` that hold (as many), null on the others."""
    if values.len() == mask.len():
        return values
    return (
        pl.repeat(None, mask.len(), dtype=values.dtype, eager=True)
        .scatter(mask.arg_true(), values)
        .alias(values.name)
    )


def _launched_work(
    events: pl.DataFrame, launch: pl.DataFrame, call_at: pl.Series, rows: Rows
) -> pl.DataFrame:
    """The GPU work with a launching call in the tree: its call's tree row ``at``, ``cat``, ``dur`` (ns)."""
    linked = launch.filter(pl.col("launch_id").is_not_null()).with_columns(at=call_at)
    work = events.select("cat", (pl.col("end_ns") - pl.col("start_ns")).alias("dur"))[rows.of(linked["id"])]
    return work.with_columns(linked["at"]).filter(pl.col("cat").is_in(GPU_WORK) & pl.col("at").is_not_null())


def _bad_durations(events: pl.DataFrame) -> pl.DataFrame:
    """Events with a start whose duration is not one (:func:`times.usable_duration`): they load
    as zero-length, and each is a ``bad_duration`` anomaly (summary and ``--json`` count them)."""
    return events.filter(pl.col("start_ns").is_not_null() & ~usable_duration("dur").fill_null(False)).select(
        pl.lit("bad_duration").alias("kind"),
        pl.col("id").alias("event_id"),
        pl.lit(None, pl.UInt32).alias("other_id"),
    )


def _long_values(decoded: Decoded) -> pl.DataFrame:
    """The values the read cut (``long_string``: a text value over ``limits.MAX_TEXT`` bytes) and
    the args objects it did not keep (``long_args``): an anomaly each, on its event (the
    repairs say how long the longest was)."""
    return pl.DataFrame(
        {
            "kind": [kind for _, kind, _ in decoded.cuts],
            "event_id": [event for event, _, _ in decoded.cuts],
            "other_id": [None] * len(decoded.cuts),
        },
        schema=ANOMALY_SCHEMA,
    )


def _missing_times(events: pl.DataFrame) -> pl.DataFrame:
    return events.filter(pl.col("start_ns").is_null()).select(
        pl.lit("missing_timestamp").alias("kind"),
        pl.col("id").alias("event_id"),
        pl.lit(None, pl.UInt32).alias("other_id"),
    )


def _format(decoded: Decoded, legacy: bool) -> str:
    """Which PyTorch produced the file, as far as its layout tells."""
    if decoded.form == "array":
        return "legacy exporter (bare event array)"
    if legacy:
        return "pre-2.0 Kineto (old category names)"
    keys = decoded.top_keys
    if "baseTimeNanoseconds" in keys:
        if "traceEvents" in keys and keys.index("baseTimeNanoseconds") < keys.index("traceEvents"):
            return "PyTorch 2.8+ (ns timestamps, base time first)"
        return "PyTorch 2.4–2.7 (ns timestamps)"
    return "PyTorch 2.0–2.3 (integer µs timestamps)"
