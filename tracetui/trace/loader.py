"""Build a :class:`Trace` from a file: read, decode, tabulate, nest, link, count.

The loader owns every read and write of a load: the trace file (now, and later for the raw
args of a trace from the cache) and the cache entry (:mod:`tracetui.trace.cache`). The model it
returns does no I/O of its own.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import polars as pl

from tracetui.errors import TraceError
from tracetui.trace import cache, links, native, stats
from tracetui.trace.align import attach, rows_of
from tracetui.trace.args import Deferred, RawArgs
from tracetui.trace.categories import GPU_LANE
from tracetui.trace.decode import decode
from tracetui.trace.decoded import Decoded
from tracetui.trace.frames import build_tables
from tracetui.trace.links import ANOMALY_SCHEMA
from tracetui.trace.model import TableSource, Trace
from tracetui.trace.nesting import classify_overlaps, nest
from tracetui.trace.release import drop_later
from tracetui.trace.source import Source, locate, read_source
from tracetui.trace.times import exact_times as _exact_times

Progress = Callable[[str], None]


def load_now(
    path: str | Path,
    progress: Progress | None = None,
    source: Source | None = None,
    scanned_raw: native.RawScan | None = None,
    ident: str | None = None,
) -> Trace:
    """:func:`tracetui.trace.load`, here and now; ``source`` and ``scanned_raw``: the file already read and
    natively scanned (by :mod:`prefetch`), ``ident`` its :func:`cache.identity` taken before it was read."""
    say = progress or (lambda stage: None)
    with _gc_paused():
        say("reading")
        if source is None:
            target, siblings = locate(path)
            ident = cache.identity(target)  # before the read: the entry is written only if it still holds
            cached = cache.lookup(target, siblings, partial(_cached_args, target))
            if cached is not None:
                return cached
            source = read_source(path)
            if source.path != target:  # a newer file appeared in the directory meanwhile: not cached
                ident = None
        say("decoding")
        decoded = decode(source.data, source.path, scanned_raw)
        say("tabulating")
        tables = build_tables(decoded.columns)
        drop_later(decoded.columns)
        decoded.columns = []
        events = tables.events.with_columns(_exact_times("ts", "dur"))
        tracks = _tracks(events, tables.meta)
        say("nesting")
        tree, overlaps = nest(events, tracks)
        events = attach(events, tree.drop("parent_pos"))
        tree = tree.with_columns(events.select("cat", "name")[rows_of(events, tree["id"])])
        say("linking")
        events = attach(events, links.cpu_ancestors(tree))
        events = attach(events, links.steps_by_time(events))
        launch, duplicates = links.launches(events)
        events = _with_launch_columns(events, launch)
        events = attach(events, links.forward_links(events, _flows_ns(tables.flows)))
        say("counting")
        events = attach(events, stats.node_stats(events))
        anomalies = [classify_overlaps(overlaps, events), duplicates]
        if "baseTimeNanoseconds" in decoded.top:
            anomalies.append(links.external_id_mismatches(events))
        anomalies.append(_missing_times(events))
    trace = Trace(
        path=source.path,
        events=events,
        instants=tables.instants,
        flows=tables.flows,
        meta_events=tables.meta,
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
        parts=cache.parts_for(source.path, ident, len(source.data)),
    )
    cache.store(trace, len(source.data), ident)
    return trace


def _cached_args(path: Path, tables: TableSource, ident: str) -> RawArgs:
    """The raw args of a trace from the cache: read from the file on first use (a provider that
    stores tables of its own, :class:`~tracetui.trace.model.StoredArgs`, is rebuilt from
    ``tables`` instead)."""
    return Deferred(partial(_args_of_file, path, ident))


def _args_of_file(path: Path, ident: str | None) -> RawArgs:
    """The raw args of a trace file's events, read again as ``load`` decoded them (for a
    trace from the cache, on the first use of its raw args), if the file is still the one
    whose identity the cache entry holds."""
    source = read_source(path)
    decoded = decode(source.data, source.path)
    drop_later(decoded.columns)
    if ident is None or cache.identity(path) != ident:
        raise TraceError(path, "the file changed since it was opened; open it again")
    return decoded.args


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


def _flows_ns(flows: pl.DataFrame) -> pl.DataFrame:
    return flows.with_columns(_exact_times("ts", "ts")[0].alias("ts_ns"))


def _tracks(events: pl.DataFrame, meta: pl.DataFrame) -> pl.DataFrame:
    """One row per (pid, tid): kind (cpu/gpu), display name, and a stable track number."""
    names = _thread_names(meta)
    tracks = (
        events.group_by("pid", "tid")
        .agg(pl.col("cat").is_in(GPU_LANE).any().alias("gpu"), pl.len().alias("events"))
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
    )
    return tracks.drop("gpu", "pid_num", "tid_num")


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


def _with_launch_columns(events: pl.DataFrame, launch: pl.DataFrame) -> pl.DataFrame:
    """GPU rows get launch_id and, from their call, the launching op, annotation and step."""
    linked = launch.filter(pl.col("launch_id").is_not_null())
    calls = events.select("op_id", "annotation_id", "step_id")[rows_of(events, linked["launch_id"])]
    from_call = linked.with_columns(calls.rename({"op_id": "launch_op_id"}))
    return attach(events, launch.select("id", "launch_id")).pipe(attach, from_call.drop("launch_id"))


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
