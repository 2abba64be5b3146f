"""The data behind ``tracetui summary`` of a distributed run: one JSON-ready dict, schema
``tracetui.ranks/1`` (docs/ranks.md, "summary --json of a run").

``ranks``, ``collectives`` and ``stragglers`` carry exactly the fields the schema names; the facts
about the run, the verdict, the slowest rank per step and the kernel breakdown across ranks are in
``distributed``; the single-trace sections (``trace``, ``counts``, ``steps``, …, schema
``tracetui.summary/1``) are those of the rank in ``distributed.rank``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracetui.insight.distributions import rank_step_times
from tracetui.insight.summary_data import records

if TYPE_CHECKING:
    from tracetui.ranks.run import RunReport

SCHEMA = "tracetui.ranks/1"
RANK_FIELDS = [
    "rank",
    "file",
    "device",
    "steps",
    "step_us_median",
    "gpu_busy_us",
    "compute_us",
    "comm_us",
    "memory_us",
    "idle_us",
    "overlap_pct",
    "host_comm_us",
]
COLLECTIVE_FIELDS = ["group", "seq", "name", "bytes", "ranks", "arrival_skew_us", "last_rank", "wait_us"]
STRAGGLER_FIELDS = ["rank", "last_count", "others_wait_us"]
STEP_FIELDS = ["step", "ranks", "slowest_rank", "slowest_us", "fastest_rank", "fastest_us", "median_us"]
CLOCK_FIELDS = ["rank", "offset_us", "spread_us", "collectives", "applied"]
KERNEL_FIELDS = [
    "name",
    "short",
    "category",
    "ranks",
    "calls_min",
    "calls_median",
    "calls_max",
    "time_min_us",
    "time_median_us",
    "time_max_us",
    "min_rank",
    "max_rank",
]


def damaged_ranks(report: RunReport) -> list[dict[str, Any]]:
    """Ranks whose trace file is damaged (truncated, repaired): [{rank, problem}]."""
    ranks = report.analysis.ranks
    if "damaged" not in ranks.columns:
        return []
    hurt = ranks.filter(ranks["damaged"].is_not_null())
    return [{"rank": r, "problem": p} for r, p in zip(hurt["rank"], hurt["damaged"], strict=True)]


def damage_notes(damaged: list[dict[str, Any]]) -> list[str]:
    """One sentence per damaged rank: what is wrong, and that the verdict may be affected."""
    return [
        f"rank {d['rank']}'s trace is damaged ({d['problem']}): its figures, and so the verdict, "
        "may be affected"
        for d in damaged
    ]


def ranks_data(report: RunReport) -> dict[str, Any]:
    """Everything the summary of a run shows, as plain JSON values."""
    facts, analysis = report.facts, report.analysis
    single = {k: v for k, v in report.summary.items() if k != "schema"}
    damaged = damaged_ranks(report)
    return {
        "schema": SCHEMA,
        "distributed": {
            "label": facts["label"],
            "rank": report.rank,
            "world_size": facts["world_size"],
            "backend": facts["backend"],
            "rank_sources": sorted({r["source"] for r in facts["ranks"]}),
            "files": [{k: f[k] for k in ("rank", "file", "source")} for f in facts["ranks"]],
            "missing": facts["missing"],
            "duplicates": facts["duplicates"],
            "skipped": facts["skipped"],
            "failed": facts["failed"],
            "damaged": damaged,
            "notes": [*facts["notes"], *analysis.notes, *damage_notes(damaged)],
            "verdict": analysis.verdict,
            "straggler": None
            if analysis.straggler is None
            else {
                **analysis.straggler.as_json(),
                "cause": None if analysis.cause is None else analysis.cause.as_json(),
            },
            "largest_lag": None if analysis.largest_lag is None else analysis.largest_lag.as_json(),
            "clocks_corrected": analysis.clocks_corrected,
            "clock_reference": analysis.clock_reference,
            "clock_offsets": records(analysis.clock_offsets, CLOCK_FIELDS),
            "steps": records(analysis.steps, STEP_FIELDS),
            "step_times": rank_step_times(analysis.rank_steps),
            "kernels": records(analysis.kernels, KERNEL_FIELDS),
        },
        "ranks": records(analysis.ranks, RANK_FIELDS),
        "collectives": records(analysis.collectives, COLLECTIVE_FIELDS),
        "stragglers": records(analysis.stragglers, STRAGGLER_FIELDS),
        **single,
    }
