"""``load(path) -> Trace``: read, decode, tabulate, nest, link, count."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from tracetui.trace import links, stats
from tracetui.trace.categories import GPU_LANE, LEGACY_CATEGORIES
from tracetui.trace.decode import Decoded, decode
from tracetui.trace.frames import build_tables
from tracetui.trace.links import ANOMALY_SCHEMA
from tracetui.trace.model import Trace
from tracetui.trace.nesting import nest
from tracetui.trace.source import read_source

Progress = Callable[[str], None]


def load(path: str | Path, progress: Progress | None = None) -> Trace:
    """Load a trace file or ``tensorboard_trace_handler`` directory.

    Raises :class:`tracetui.errors.TraceError` (one line) for input that is not a trace.
    ``progress`` is called with the name of each stage as it starts.
    """
    say = progress or (lambda stage: None)
    with _gc_paused():
        say("reading")
        source = read_source(path)
        say("decoding")
        decoded = decode(source.data, source.path)
        say("tabulating")
        tables = build_tables(decoded.events)
        legacy = _uses_legacy_categories(decoded)
        decoded.events = []
        events = tables.events.with_columns(_exact_times("ts", "dur"))
        tracks = _tracks(events, tables.meta)
        say("nesting")
        tree, overlaps = nest(events, tracks)
        events = events.join(tree.drop("parent_pos"), on="id", how="left")
        tree = tree.join(events.select("id", "cat", "name"), on="id", maintain_order="left")
        say("linking")
        events = events.join(links.cpu_ancestors(tree), on="id", how="left")
        events = events.join(links.steps_by_time(events), on="id", how="left")
        launch, duplicates = links.launches(events)
        events = _with_launch_columns(events, launch)
        events = events.join(links.forward_links(events, _flows_ns(tables.flows)), on="id", how="left")
        say("counting")
        events = events.join(stats.node_stats(events), on="id", how="left").sort("id")
        anomalies = [overlaps, duplicates]
        if "baseTimeNanoseconds" in decoded.top:
            anomalies.append(links.external_id_mismatches(events))
        anomalies.append(_missing_times(events))
    return Trace(
        path=source.path,
        events=events,
        instants=tables.instants,
        flows=tables.flows,
        meta_events=tables.meta,
        tracks=tracks,
        anomalies=pl.concat([a.cast(ANOMALY_SCHEMA) for a in anomalies]),  # type: ignore[arg-type]
        metadata=decoded.top,
        format=_format(decoded, legacy),
        gzipped=source.gzipped,
        truncated=decoded.truncated or source.gzip_truncated,
        repairs=decoded.repairs,
        siblings=source.siblings,
        other_phases=tables.other_phases,
        _events_json=None if decoded.events_json is None else bytes(decoded.events_json),
    )


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


def _exact_times(ts: str, dur: str) -> list[pl.Expr]:
    """Exact integer ns from µs floats: the integer part and the 3-decimal fraction apart."""
    whole = pl.col(ts).floor()
    finite = pl.col(ts).is_finite()
    start = pl.when(finite).then(
        whole.cast(pl.Int64) * 1000 + ((pl.col(ts) - whole) * 1000).round().cast(pl.Int64)
    )
    length = pl.when(pl.col(dur).is_finite()).then((pl.col(dur) * 1000).round().cast(pl.Int64)).otherwise(0)
    return [start.alias("start_ns"), (start + length.clip(0)).alias("end_ns")]


def _flows_ns(flows: pl.DataFrame) -> pl.DataFrame:
    return flows.with_columns(_exact_times("ts", "ts")[0].alias("ts_ns"))


def _tracks(events: pl.DataFrame, meta: pl.DataFrame) -> pl.DataFrame:
    """One row per (pid, tid): kind (cpu/gpu), display name, and a stable track number."""
    names = (
        meta.filter(pl.col("name") == "thread_name")
        .group_by("pid", "tid", maintain_order=True)
        .agg(pl.col("meta_name").first().str.strip_chars().alias("thread_name"))
    )
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


def _with_launch_columns(events: pl.DataFrame, launch: pl.DataFrame) -> pl.DataFrame:
    """GPU rows get launch_id and, from their call, the launching op, annotation and step."""
    from_call = events.select(
        pl.col("id").alias("launch_id"),
        pl.col("op_id").alias("launch_op_id"),
        pl.col("annotation_id").alias("call_annotation"),
        pl.col("step_id").alias("call_step"),
    )
    linked = launch.join(from_call, on="launch_id", how="left")
    events = events.join(linked, on="id", how="left")
    return events.with_columns(
        pl.coalesce("annotation_id", "call_annotation").alias("annotation_id"),
        pl.coalesce("step_id", "call_step").alias("step_id"),
    ).drop("call_annotation", "call_step")


def _missing_times(events: pl.DataFrame) -> pl.DataFrame:
    return events.filter(pl.col("start_ns").is_null()).select(
        pl.lit("missing_timestamp").alias("kind"),
        pl.col("id").alias("event_id"),
        pl.lit(None, pl.UInt32).alias("other_id"),
    )


def _uses_legacy_categories(decoded: Decoded) -> bool:
    return any(event.cat in LEGACY_CATEGORIES for event in decoded.events[:2000])


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
