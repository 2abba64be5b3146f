"""The insight report's readings (roofline per kernel and per kernel name, verdict per step and
annotation), when present.

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
    kernel_names: pl.DataFrame | None = None
    steps: pl.DataFrame | None = None


def load_insight(trace: Trace) -> Insight:
    """Kernel roofline rows (per event and per name) and step/annotation verdicts; empty when the
    report is unavailable."""
    try:
        from tracetui.insight.report import (
            annotation_verdicts,
            kernel_insight,
            kernel_rooflines,
            step_verdicts,
        )
    except ImportError:
        return Insight()
    steps = step_verdicts(trace)
    rows: dict[int, dict[str, Any]] = {}
    for frame in (kernel_insight(trace), steps, annotation_verdicts(trace)):
        for row in frame.iter_rows(named=True):
            rows[row["id"]] = row
    # One row per name: the device with the most time (rows come sorted by time).
    names = kernel_rooflines(trace).group_by("name", maintain_order=True).first()
    return Insight(rows, names, steps)
