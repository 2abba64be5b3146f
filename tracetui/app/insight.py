"""The insight report's readings (roofline per kernel, verdict per step and annotation), when present.

``tracetui.insight.report`` is optional for the explorer: without it the details pane shows the
decoded kernel names only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from tracetui.trace import Trace


@dataclass(frozen=True)
class Insight:
    """Per-event readings keyed by event id, and the frames the tables join."""

    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    kernels: pl.DataFrame | None = None
    steps: pl.DataFrame | None = None


def load_insight(trace: Trace) -> Insight:
    """Kernel roofline rows and step/annotation verdicts (empty when the report is unavailable)."""
    try:
        from tracetui.insight.report import annotation_verdicts, kernel_insight, step_verdicts
    except ImportError:
        return Insight()
    kernels = kernel_insight(trace)
    steps = step_verdicts(trace)
    annotations = annotation_verdicts(trace)
    rows: dict[int, dict[str, Any]] = {}
    for frame in (kernels, steps, annotations):
        for row in frame.iter_rows(named=True):
            rows[row["id"]] = row
    return Insight(rows, kernels, steps)


def kernel_rates(trace: Trace, insight: Insight) -> pl.DataFrame | None:
    """Per GPU work name: median achieved TFLOP/s and GB/s, and the most common bound."""
    if insight.kernels is None or insight.kernels.is_empty():
        return None
    names = trace.events.select("id", "name")
    return (
        insight.kernels.join(names, on="id", how="left")
        .group_by("name")
        .agg(
            pl.col("tflops").median().alias("tflops"),
            pl.col("gbs").median().alias("gbs"),
            pl.col("bound").drop_nulls().mode().first().alias("bound"),
        )
    )
