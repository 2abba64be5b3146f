"""Link GPU work to the CPU: runtime call (correlation), launching op, annotation, step.

* A GPU event (kernel, memcpy, memset, sync) joins its runtime/driver call on
  ``args.correlation``; one call may launch many (``cudaGraphLaunch``). GPU events with
  no call in the trace are orphans: kept, counted and listed. Calls that share an id
  (which should not happen) are anomalies; their GPU events take the nearest preceding call.
* The launching op is the call's nearest ``cpu_op`` ancestor in the CPU tree; the
  annotation its nearest ``user_annotation`` that is neither a ``ProfilerStep#N`` nor an
  Inductor ``## … ##`` marker. The step is the ``ProfilerStep#N`` whose time window holds
  the event's start on any thread of its process (backward ops run on the autograd
  thread, outside the main thread's step span).
* On PyTorch ≥ 2.4 traces the call's ``External id`` names its op; disagreements are
  anomalies (before 2.4 it was the call's own correlation id, so it is not checked).
* ``fwdbwd`` flows (else ``Sequence number`` + ``Fwd thread id``) link backward ops to the
  forward op that created them.
"""

from __future__ import annotations

import re

import polars as pl

from tracetui.trace.categories import GPU_KIND, LAUNCH_CALLS
from tracetui.trace.nesting import ancestor_ids

STEP_PATTERN = r"^ProfilerStep#[0-9]+$"  # ASCII digits: the step number must parse as an integer
MARKER_PATTERN = r"^## .* ##$"
_MARKER = re.compile(MARKER_PATTERN)

ANOMALY_SCHEMA = {"kind": pl.String, "event_id": pl.UInt32, "other_id": pl.UInt32}


def is_step() -> pl.Expr:
    """A ``ProfilerStep#N`` span (the one definition of a step: the tree, the steps table, the
    comparison and the step links all read it)."""
    return (pl.col("cat") == "user_annotation") & pl.col("name").str.contains(STEP_PATTERN)


def is_annotation() -> pl.Expr:
    """A user annotation that is neither a profiler step nor an Inductor marker."""
    return (
        (pl.col("cat") == "user_annotation")
        & ~pl.col("name").str.contains(STEP_PATTERN)
        & ~pl.col("name").str.contains(MARKER_PATTERN)
    )


def is_marker_name(name: str) -> bool:
    """Whether a user annotation's name is an Inductor ``## … ##`` marker (as :func:`is_annotation`)."""
    return _MARKER.fullmatch(name) is not None


def cpu_ancestors(tree: pl.DataFrame) -> pl.DataFrame:
    """For each CPU event (rows of ``tree`` joined with cat/name): op and annotation ids."""
    return pl.DataFrame(
        {
            "id": tree["id"],
            "op_id": ancestor_ids(tree, pl.col("cat") == "cpu_op", include_self=False),
            "annotation_id": ancestor_ids(tree, is_annotation()),
        }
    )


def steps_by_time(events: pl.DataFrame) -> pl.DataFrame:
    """``(id, step_id)`` for CPU events that start inside a ``ProfilerStep#N`` of their process."""
    cpu = events.select("id", "pid", "start_ns", "pos").filter(pl.col("pos").is_not_null()).drop("pos")
    return steps_at(events, cpu)


def steps_at(events: pl.DataFrame, points: pl.DataFrame) -> pl.DataFrame:
    """``(id, step_id)`` for the ``points`` (``id``, ``pid``, ``start_ns``: CPU events, instants)
    that lie inside a ``ProfilerStep#N`` of ``events`` in their process."""
    steps = (
        events.filter(is_step() & pl.col("start_ns").is_not_null())
        .select(
            "pid",
            pl.col("start_ns").alias("step_start"),
            pl.col("end_ns").alias("step_end"),
            pl.col("id").alias("step_id"),
        )
        .sort("step_start")
    )
    points = points.select("id", "pid", "start_ns").filter(pl.col("start_ns").is_not_null()).sort("start_ns")
    if steps.is_empty() or points.is_empty():
        return pl.DataFrame(schema={"id": points.schema["id"], "step_id": pl.UInt32})
    matched = points.join_asof(
        steps,
        left_on="start_ns",
        right_on="step_start",
        by="pid",
        strategy="backward",
        check_sortedness=False,
    )
    return matched.filter(pl.col("start_ns") <= pl.col("step_end")).select("id", "step_id")


def launches(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(id, launch_id)`` for every GPU event (``launch_id`` null for orphans), and anomalies.

    One call with many GPU events is a graph launch. Several calls sharing a correlation id
    should not happen: each of their GPU events takes the nearest preceding call (the latest
    whose start is at or before its own; else the earliest), as an ``ambiguous_launch``
    anomaly, and the calls are ``duplicate_correlation`` anomalies. Memory is linear in the
    events whatever the duplicates (a join on the id alone pairs every call with every event).
    """
    gpu = events.filter(pl.col("cat").is_in(list(GPU_KIND))).select("id", "correlation", "start_ns")
    calls = events.filter(pl.col("cat").is_in(LAUNCH_CALLS) & pl.col("correlation").is_not_null()).select(
        pl.col("id").alias("launch_id"), "correlation", pl.col("start_ns").alias("call_start")
    )
    shared = calls.filter(pl.len().over("correlation") > 1)
    earliest = (  # per correlation id: its one call, or the earliest of several
        calls
        if shared.is_empty()
        else calls.sort("call_start", "launch_id", nulls_last=True).unique("correlation", keep="first")
    )
    linked = gpu.join(earliest.drop("call_start"), on="correlation", how="left", maintain_order="left")
    if not shared.is_empty():
        preceding = (
            gpu.join(shared.select("correlation").unique(), on="correlation")
            .filter(pl.col("start_ns").is_not_null())
            .sort("start_ns")
            .join_asof(
                shared.filter(pl.col("call_start").is_not_null()).sort("call_start", "launch_id"),
                left_on="start_ns",
                right_on="call_start",
                by="correlation",
                strategy="backward",
                check_sortedness=False,
            )
            .select("id", pl.col("launch_id").alias("preceding"))
        )
        linked = linked.join(preceding, on="id", how="left", maintain_order="left").select(
            "id", "correlation", pl.coalesce("preceding", "launch_id").alias("launch_id")
        )
    ambiguous = linked.join(shared.select("correlation").unique(), on="correlation").select(
        pl.lit("ambiguous_launch").alias("kind"),
        pl.col("id").alias("event_id"),
        pl.col("launch_id").alias("other_id"),
    )
    duplicates = shared.select(
        pl.lit("duplicate_correlation").alias("kind"),
        pl.col("launch_id").alias("event_id"),
        pl.lit(None, pl.UInt32).alias("other_id"),
    )
    return linked.select("id", "launch_id"), pl.concat([duplicates, ambiguous])


def external_id_mismatches(events: pl.DataFrame) -> pl.DataFrame:
    """Launch calls whose ``External id`` disagrees with the op that encloses them (≥ 2.4)."""
    launching = events.filter(pl.col("launch_id").is_not_null()).select("launch_id").unique()
    calls = events.join(launching, left_on="id", right_on="launch_id").select("id", "external_id", "op_id")
    ops = events.select(pl.col("id").alias("op_id"), pl.col("external_id").alias("op_external_id"))
    checked = calls.join(ops, on="op_id", how="left").filter(
        pl.col("external_id").is_not_null()
        & (pl.col("op_external_id").is_null() | (pl.col("external_id") != pl.col("op_external_id")))
    )
    return checked.select(
        pl.lit("external_id_mismatch").alias("kind"),
        pl.col("id").cast(pl.UInt32).alias("event_id"),
        pl.col("op_id").cast(pl.UInt32).alias("other_id"),
    )


def forward_links(events: pl.DataFrame, flows: pl.DataFrame) -> pl.DataFrame:
    """``(id, fwd_id)`` for backward ops: from ``fwdbwd`` flows, else sequence numbers."""
    ops = events.select("id", "cat", "pid", "tid", "start_ns", "depth", "seq", "fwd_tid")
    ops = ops.filter(pl.col("cat") == "cpu_op")
    fwdbwd = flows.filter(pl.col("cat") == "fwdbwd")
    if not fwdbwd.is_empty():
        # A flow binds to the deepest op starting at its timestamp on its thread.
        bound = (
            fwdbwd.join(
                ops.select("id", "pid", "tid", "start_ns", "depth"),
                left_on=["pid", "tid", "ts_ns"],
                right_on=["pid", "tid", "start_ns"],
                suffix="_op",
            )
            .sort("depth", descending=True)
            .unique("id", keep="first")
        )
        starts = bound.filter(pl.col("ph") == "s").select("flow_id", pl.col("id_op").alias("fwd_id"))
        ends = bound.filter(pl.col("ph") == "f").select("flow_id", pl.col("id_op").alias("id"))
        return ends.join(starts, on="flow_id").select("id", "fwd_id").unique("id", keep="first").sort("id")
    forward = (
        ops.filter((pl.col("fwd_tid") == 0) & pl.col("seq").is_not_null())
        .sort("start_ns")
        .group_by("seq")
        .agg(pl.col("id").last().alias("fwd_id"))
    )
    backward = ops.filter(pl.col("fwd_tid") > 0).select("id", "seq")
    return backward.join(forward, on="seq").select("id", "fwd_id").sort("id")
