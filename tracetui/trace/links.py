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

from tracetui.trace.align import lookup
from tracetui.trace.categories import GPU_KIND, LAUNCH_CALLS
from tracetui.trace.nesting import ancestor_ids

STEP_PATTERN = r"^ProfilerStep#[0-9]+$"  # ASCII digits: the step number must parse as an integer
MARKER_PATTERN = r"^## .* ##$"
_MARKER = re.compile(MARKER_PATTERN)

ANOMALY_SCHEMA = {"kind": pl.String, "event_id": pl.UInt32, "other_id": pl.UInt32}


def is_op() -> pl.Expr:
    return pl.col("cat") == "cpu_op"


def is_step() -> pl.Expr:
    """A ``ProfilerStep#N`` span (the one definition of a step: the tree, the steps table, the
    comparison and the step links all read it)."""
    return (pl.col("cat") == "user_annotation") & pl.col("name").cast(pl.String).str.contains(STEP_PATTERN)


def is_annotation() -> pl.Expr:
    """A user annotation that is neither a profiler step nor an Inductor marker."""
    return (
        (pl.col("cat") == "user_annotation")
        & ~pl.col("name").cast(pl.String).str.contains(STEP_PATTERN)
        & ~pl.col("name").cast(pl.String).str.contains(MARKER_PATTERN)
    )


def is_marker_name(name: str) -> bool:
    """Whether a user annotation's name is an Inductor ``## … ##`` marker (as :func:`is_annotation`)."""
    return _MARKER.fullmatch(name) is not None


def cpu_ancestors(tree: pl.DataFrame) -> pl.DataFrame:
    """For each CPU event (rows of ``tree`` with ``op`` and ``annotation``: whether each row is an
    op, an annotation): its nearest op and annotation ancestors' ids."""
    return pl.DataFrame(
        {
            "id": tree["id"],
            "op_id": ancestor_ids(tree, pl.col("op"), include_self=False),
            "annotation_id": ancestor_ids(tree, pl.col("annotation")),
        }
    )


def steps_by_time(events: pl.DataFrame, cpu: pl.DataFrame) -> pl.DataFrame:
    """``(id, step_id)`` for the CPU events of ``cpu`` (``id``, ``process``: a number per pid,
    ``start_ns``) that start inside a ``ProfilerStep#N`` of their process (``events`` with ``process``)."""
    return steps_at(events, cpu, "process")


def steps_at(events: pl.DataFrame, points: pl.DataFrame, by: str = "pid") -> pl.DataFrame:
    """``(id, step_id)`` for the ``points`` (``id``, ``by``, ``start_ns``: CPU events, instants) that
    lie inside a ``ProfilerStep#N`` of ``events`` in their process (``by``: ``pid``, or a number per
    pid): the last step of the process that starts at or before the point, if it has not ended (a
    binary search per point in its process's few steps)."""
    steps = (
        events.filter(pl.col("cat") == "user_annotation")
        .filter(is_step() & pl.col("start_ns").is_not_null() & pl.col(by).is_not_null())
        .select(by, pl.col("start_ns").alias("step_start"), pl.col("end_ns").alias("step_end"), "id")
        .sort("step_start", "id")
    )
    empty = pl.DataFrame(schema={"id": points.schema["id"], "step_id": pl.UInt32})
    points = points.filter(pl.col("start_ns").is_not_null())
    if steps.is_empty() or points.is_empty():
        return empty
    found = []
    for (process,), own in steps.group_by(by):
        rows = points.filter(pl.col(by) == process)
        at = own["step_start"].search_sorted(rows["start_ns"], side="right").cast(pl.Int64) - 1
        inside = at >= 0
        rows, at = rows.filter(inside), at.filter(inside)
        step = own.select(pl.col("id").alias("step_id"), "step_end")[at]
        matched = rows.hstack(step).filter(pl.col("start_ns") <= pl.col("step_end"))
        found.append(matched.select("id", "step_id"))
    return pl.concat(found) if found else empty


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
    launching = events["launch_id"].drop_nulls().unique().sort()
    calls = lookup(events, launching, "id", "external_id", "op_id")
    ops = lookup(events, calls["op_id"], "external_id").rename({"external_id": "op_external_id"})
    checked = calls.hstack(ops).filter(
        pl.col("external_id").is_not_null()
        & (pl.col("op_external_id").is_null() | (pl.col("external_id") != pl.col("op_external_id")))
    )
    return checked.select(
        pl.lit("external_id_mismatch").alias("kind"),
        pl.col("id").cast(pl.UInt32).alias("event_id"),
        pl.col("op_id").cast(pl.UInt32).alias("other_id"),
    )


FLOW_COLUMNS = ("cat", "ph", "id", "flow_id", "ts")  # the flows' columns the forward links read


def forward_links(events: pl.DataFrame, op_args: pl.DataFrame, flows: pl.DataFrame) -> pl.DataFrame:
    """``(id, fwd_id)`` for backward ops: from ``fwdbwd`` flows (:data:`FLOW_COLUMNS`, with
    ``ts_ns``), else sequence numbers (of ``op_args``: ``id``, ``seq``, ``fwd_tid``). ``track``:
    each event's and flow's thread."""
    fwdbwd = (  # only the columns read below: the flows are as many as the ops
        flows.lazy()
        .filter(pl.col("cat") == "fwdbwd")
        .select("id", "ph", "flow_id", "track", "ts_ns")
        .collect()
    )
    if not fwdbwd.is_empty():
        # A flow binds to the deepest op starting at its timestamp on its thread (only the ops
        # starting at a flow's timestamp are read: a join on all of them costs their size again).
        at_flow = pl.col("start_ns").is_in(fwdbwd["ts_ns"].drop_nulls().unique().implode())
        ops = events.lazy().filter(is_op() & at_flow).select("id", "track", "start_ns", "depth").collect()
        # the deepest op starting at each (time, thread), found among the ops (not the flows
        # joined to them: a copy of the flows, twice, for a sort and a dedup)
        deepest = ops.sort("depth", descending=True, maintain_order=True).unique(
            ["start_ns", "track"], keep="first", maintain_order=True
        )
        bound = (  # joined on the time alone (one integer key: a smaller table than two), then the thread
            fwdbwd.join(deepest, left_on="ts_ns", right_on="start_ns", suffix="_op")
            .filter(pl.col("track") == pl.col("track_op"))
            .select("ph", "flow_id", "id_op")
        )
        del ops, deepest
        # each end to its start: joined on a hash of the flow id (an integer key), the ids compared after
        key = pl.col("flow_id").hash().alias("key")
        starts = bound.filter(pl.col("ph") == "s").select(key, "flow_id", pl.col("id_op").alias("fwd_id"))
        ends = bound.filter(pl.col("ph") == "f").select(key, "flow_id", pl.col("id_op").alias("id"))
        del bound
        pairs = ends.join(starts, on="key").filter(pl.col("flow_id") == pl.col("flow_id_right"))
        return pairs.select("id", "fwd_id").unique("id", keep="first").sort("id")
    ops = events.lazy().filter(is_op()).select("id", "track", "start_ns", "depth").collect()
    ops = ops.join(op_args.select("id", "seq", "fwd_tid"), on="id", how="left", maintain_order="left")
    forward = (
        ops.filter((pl.col("fwd_tid") == 0) & pl.col("seq").is_not_null())
        .sort("start_ns")
        .group_by("seq")
        .agg(pl.col("id").last().alias("fwd_id"))
    )
    backward = ops.filter(pl.col("fwd_tid") > 0).select("id", "seq")
    return backward.join(forward, on="seq").select("id", "fwd_id").sort("id")
