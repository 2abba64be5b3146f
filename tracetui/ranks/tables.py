"""One rank's small tables: everything the cross-rank analysis reads, computed from its loaded trace.

* ``rank``: one row, the rank's line of the Ranks table.
* ``steps``: the trace's steps, each with its GPU-time breakdown.
* ``collectives``: one row per collective (:mod:`tracetui.ranks.collectives`).
* ``kernels``: per GPU-work name, calls and time (the kernel breakdown across ranks).
* ``lead``: what filled the time between its collectives (:mod:`tracetui.ranks.lead`).

**Temporal breakdown** (HTA's rule). The window is the profiled steps: each step from its start to
the next step's start, the last one to the end of its own CPU span or of the GPU work it launched,
whichever is later (the whole trace when it has no steps). GPU work inside the window is clipped to
it and classified: communication (collective kernels, and copies made inside ``gloo:``/``nccl:``
spans), memory (other memcpys and memsets) and compute (every other kernel). With ``|X|`` the length
of the union of X's intervals (streams merged, nothing counted twice): compute = ``|C|``,
communication = ``|C ∪ M| − |C|`` (compute overlapping a collective counts as compute), memcpy/memset
= ``|C ∪ M ∪ Mem| − |C ∪ M|``, idle = window − ``|C ∪ M ∪ Mem|``; so the four add up to the window.
Overlap = ``|C ∩ M| ÷ |M|``: the share of collective time during which the GPU also computed. Host
collective time is the union of the ``gloo:*``/``c10d::*`` spans on CPU threads inside the window.
All lengths are exact integer ns until they are shown in µs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui.insight.gpu_work import gpu_work_union_us
from tracetui.ranks.collectives import (
    COMM_ANNOTATION,
    FALLBACK_COLLECTIVE,
    HOST_COLLECTIVE,
    comm_kernels,
    outermost_c10d,
    rank_collectives,
)
from tracetui.ranks.lead import lead_table
from tracetui.safetext import clean
from tracetui.trace.categories import GPU_WORK
from tracetui.trace.stats import union_length
from tracetui.trace.text import matches

if TYPE_CHECKING:
    from tracetui.ranks.discover import RankFile
    from tracetui.trace import Trace

US = 1000
COMPUTE, COMM, MEMORY = 0, 1, 2
# union sets per window: |C|, |M|, |C ∪ M|, |C ∪ M ∪ Mem|, host collective spans
SET_C, SET_M, SET_CM, SET_ALL, SET_HOST = range(5)
SETS = 5
TABLES = ("rank", "steps", "collectives", "kernels", "lead")
BREAKDOWN = ("window_us", "compute_us", "comm_us", "memory_us", "idle_us", "overlap_us", "host_comm_us")

RANK_SCHEMA: dict[Any, Any] = {
    "rank": pl.Int64,
    "file": pl.String,
    "path": pl.String,
    "source": pl.String,
    "device": pl.String,
    "backend": pl.String,
    "world_size": pl.Int64,
    "events": pl.Int64,
    "steps": pl.Int64,
    "step_us_median": pl.Float64,
    "gpu_busy_us": pl.Float64,
    "window_us": pl.Float64,
    "compute_us": pl.Float64,
    "comm_us": pl.Float64,
    "memory_us": pl.Float64,
    "idle_us": pl.Float64,
    "overlap_pct": pl.Float64,
    "host_comm_us": pl.Float64,
    "collectives": pl.Int64,
    "unaligned_collectives": pl.Int64,
    "damaged": pl.String,  # what is wrong with the rank's file (truncated, repaired), else null
}


@dataclass
class RankTables:
    """The small tables of one rank (each with a ``rank`` column)."""

    rank: pl.DataFrame
    steps: pl.DataFrame
    collectives: pl.DataFrame
    kernels: pl.DataFrame
    lead: pl.DataFrame  # what filled the time between its collectives (tracetui.ranks.lead)

    def frames(self) -> dict[str, pl.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}


def rank_tables(trace: Trace, entry: RankFile) -> RankTables:
    """Compute the small tables of ``entry``'s loaded ``trace``."""
    steps = step_breakdown(trace)
    collectives = rank_collectives(trace, entry.groups)
    kernels = trace.kernels.select(
        "name", pl.col("cat").alias("category"), pl.col("calls").cast(pl.Int64), "total_us"
    )
    totals = steps.select(pl.col(c).sum() for c in BREAKDOWN)
    comm_ns = steps["comm_all_us"].sum()
    row = {
        "rank": entry.rank,
        "file": clean(entry.path.name),
        "path": clean(str(entry.path)),
        "source": entry.source,
        "device": device_label(trace),
        "backend": entry.backend,
        "world_size": entry.world_size,
        "events": trace.event_count,
        "steps": int(steps["step"].is_not_null().sum()),
        "step_us_median": trace.steps["dur"].median() if len(trace.steps) else None,
        "gpu_busy_us": gpu_work_union_us(trace),
        **totals.row(0, named=True),
        "overlap_pct": 100.0 * totals["overlap_us"][0] / comm_ns if comm_ns else None,
        "collectives": len(collectives),
        "unaligned_collectives": int((~collectives["aligned"]).sum()),
        "damaged": damage(trace),
    }
    rank = pl.DataFrame([row]).select(list(RANK_SCHEMA)).cast(RANK_SCHEMA)
    with_rank = pl.lit(entry.rank, pl.Int64).alias("rank")
    return RankTables(
        rank=rank,
        steps=steps.select(with_rank, pl.all()),
        collectives=collectives.select(with_rank, pl.all()),
        kernels=kernels.select(with_rank, pl.all()),
        lead=lead_table(trace, collectives).select(with_rank, pl.all()),
    )


def damage(trace: Trace) -> str | None:
    """What is wrong with the trace's file, as the single-trace summary warns: truncated, repaired."""
    found = (["the file is truncated"] if trace.truncated else []) + [f"repaired: {r}" for r in trace.repairs]
    return clean("; ".join(found)) if found else None


def device_label(trace: Trace) -> str:
    """``GPU 1 (NVIDIA H200)``: the devices the rank's GPU work ran on; ``CPU`` without any."""
    used = trace.gpu.filter(pl.col("cat").is_in(GPU_WORK))["device"].drop_nulls().unique().sort().to_list()
    if not used:
        return "CPU"
    names = {d.get("id"): d.get("name") for d in trace.devices}
    kinds = sorted({clean(str(names[d])) for d in used if names.get(d)})
    return f"GPU {', '.join(map(str, used))}" + (f" ({', '.join(kinds)})" if kinds else "")


def windows(trace: Trace) -> pl.DataFrame:
    """The breakdown windows (``window``, ``step``, ``w_start``, ``w_end``), see the module doc."""
    steps = trace.steps.sort("start_ns")
    if steps.is_empty():
        events = trace.events
        return pl.DataFrame(
            {
                "window": [0],
                "step_id": [None],
                "w_start": [events["start_ns"].min()],
                "w_end": [events["end_ns"].max()],
            },
            schema={"window": pl.UInt32, "step_id": pl.UInt32, "w_start": pl.Int64, "w_end": pl.Int64},
        )
    last_gpu = trace.gpu.filter(pl.col("step_id") == steps["id"][-1])["end_ns"].max()
    return steps.select(
        pl.int_range(pl.len(), dtype=pl.UInt32).alias("window"),
        pl.col("id").alias("step_id"),
        pl.col("start_ns").alias("w_start"),
        pl.col("start_ns")
        .shift(-1)
        .fill_null(pl.max_horizontal(pl.col("end_ns").last(), pl.lit(last_gpu, pl.Int64)))
        .alias("w_end"),
    )


def classified_work(trace: Trace) -> pl.DataFrame:
    """GPU work with its class (``cls``: compute, communication, memory) and interval."""
    events = trace.events
    annotations = events.select(pl.col("id").alias("annotation_id"), pl.col("name").alias("annotation"))
    work = trace.gpu.filter(
        pl.col("cat").is_in(GPU_WORK) & pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()
    ).join(annotations, on="annotation_id", how="left")
    in_collective = work.join(_launched_inside_c10d(trace), on="id", how="semi")["id"]
    comm = (
        pl.col("id").is_in(comm_kernels(events)["id"].implode())
        | matches("annotation", COMM_ANNOTATION).fill_null(False)
        | pl.col("id").is_in(in_collective.implode())
    )
    cls = pl.when(comm).then(COMM).when(pl.col("cat") == "kernel").then(COMPUTE).otherwise(MEMORY)
    return work.select("id", "start_ns", "end_ns", cls.cast(pl.Int8).alias("cls"))


def _launched_inside_c10d(trace: Trace) -> pl.DataFrame:
    """Ids of GPU work whose launching call ran inside a ``c10d::*`` op (its copies, for gloo)."""
    events = trace.events
    spans = outermost_c10d(events).filter(pl.col("pos").is_not_null())
    if spans.is_empty():
        return pl.DataFrame(schema={"id": pl.UInt32})
    spans = spans.select("track", pl.col("pos").alias("op_pos"), pl.col("end_pos").alias("op_end"))
    calls = events.select(pl.col("id").alias("launch_id"), "track", "pos").filter(pl.col("pos").is_not_null())
    work = trace.gpu.select("id", "launch_id").join(calls, on="launch_id")
    return (
        work.sort("pos")
        .join_asof(spans.sort("op_pos"), left_on="pos", right_on="op_pos", by="track", check_sortedness=False)
        .filter(pl.col("pos") < pl.col("op_end"))
        .select("id")
    )


def host_collective_spans(trace: Trace) -> pl.DataFrame:
    """CPU spans of collectives (``gloo:*`` annotations and ``c10d::*`` ops)."""
    named = matches("name", HOST_COLLECTIVE) | matches("name", FALLBACK_COLLECTIVE)
    return trace.events.filter(
        pl.col("cat").is_in(["user_annotation", "cpu_op"]) & named & pl.col("start_ns").is_not_null()
    ).select("start_ns", "end_ns")


def step_breakdown(trace: Trace) -> pl.DataFrame:
    """Per window (step): the trace's step row and its breakdown in µs (see the module doc)."""
    wins = windows(trace)
    work = classified_work(trace)
    host = host_collective_spans(trace).with_columns(cls=pl.lit(-1, pl.Int8))
    clipped = (
        pl.concat([work.drop("id"), host])
        .join_where(wins, pl.col("start_ns") < pl.col("w_end"), pl.col("end_ns") > pl.col("w_start"))
        .select(
            "window",
            "cls",
            pl.max_horizontal("start_ns", "w_start").alias("start_ns"),
            pl.min_horizontal("end_ns", "w_end").alias("end_ns"),
        )
    )
    member = {
        SET_C: pl.col("cls") == COMPUTE,
        SET_M: pl.col("cls") == COMM,
        SET_CM: pl.col("cls").is_in([COMPUTE, COMM]),
        SET_ALL: pl.col("cls") >= 0,
        SET_HOST: pl.col("cls") < 0,
    }
    stacked = pl.concat(
        clipped.filter(test).select(
            (pl.col("window").cast(pl.Int64) * SETS + which).alias("key"), "start_ns", "end_ns"
        )
        for which, test in member.items()
    )
    lengths = (
        union_length(stacked, "key")
        if not stacked.is_empty()
        else pl.DataFrame(schema={"key": pl.Int64, "gpu_busy_us": pl.Float64})
    )
    ns = lengths.select(
        (pl.col("key") // SETS).cast(pl.UInt32).alias("window"),
        (pl.col("key") % SETS).alias("set"),
        (pl.col("gpu_busy_us") * US).round().cast(pl.Int64).alias("ns"),
    )
    per_set = [
        ns.filter(pl.col("set") == which).select("window", pl.col("ns").alias(f"s{which}"))
        for which in member
    ]
    table = wins
    for part in per_set:
        table = table.join(part, on="window", how="left")
    table = table.with_columns(pl.col(f"s{w}").fill_null(0) for w in member)
    c, m, cm, every, hosts = (pl.col(f"s{w}") for w in member)
    window_ns = pl.col("w_end") - pl.col("w_start")
    breakdown = table.select(
        "window",
        "step_id",
        pl.col("w_start").alias("window_start_ns"),
        pl.col("w_end").alias("window_end_ns"),
        (window_ns / US).alias("window_us"),
        (c / US).alias("compute_us"),
        ((cm - c) / US).alias("comm_us"),
        ((every - cm) / US).alias("memory_us"),
        ((window_ns - every) / US).alias("idle_us"),
        ((c + m - cm) / US).alias("overlap_us"),
        (m / US).alias("comm_all_us"),
        (hosts / US).alias("host_comm_us"),
    )
    steps = trace.steps.select(
        pl.col("id").alias("step_id"),
        "name",
        "step",
        "start_ns",
        "end_ns",
        pl.col("dur").alias("cpu_us"),
        "gpu_busy_us",
        "kernels",
        "memcpys",
        "memsets",
    )
    return breakdown.join(steps, on="step_id", how="left", maintain_order="left").select(
        "window",
        "step",
        "name",
        "start_ns",
        "end_ns",
        "cpu_us",
        "gpu_busy_us",
        "kernels",
        "memcpys",
        "memsets",
        "window_start_ns",
        "window_end_ns",
        *BREAKDOWN,
        "comm_all_us",
    )
