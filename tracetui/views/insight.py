"""The insight report's readings (roofline per kernel and per kernel name, verdict per step and
annotation), when present.

``tracetui.insight.report`` is optional for the explorer: without it the details pane shows the
decoded kernel names only.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from tracetui.trace import Trace


@dataclass(frozen=True)
class Insight:
    """Per-event readings (one frame, sorted by event id) and the frames the tables join.

    Rows stay in polars and become dicts only when asked for: 20k dicts of Python objects would
    make every full garbage collection of a big trace's session ~0.1 s slower.
    """

    events: pl.DataFrame | None = None
    kernel_names: pl.DataFrame | None = None
    steps: pl.DataFrame | None = None

    def get(self, event_id: int) -> dict[str, Any] | None:
        """The reading for one event (a GPU event's roofline, a step's or annotation's verdict)."""
        if self.events is None:
            return None
        ids = self._ids
        row = bisect_left(ids, event_id)
        if row < len(ids) and ids[row] == event_id:
            return self.events.row(row, named=True)
        return None

    @property
    def _ids(self) -> list[int]:
        cached = self.__dict__.get("_id_list")
        if cached is None:
            cached = [] if self.events is None else self.events["id"].to_list()
            object.__setattr__(self, "_id_list", cached)
        return cached


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
    events = pl.concat([kernel_insight(trace), steps, annotation_verdicts(trace)], how="diagonal_relaxed")
    events = events.unique("id", keep="first", maintain_order=True).sort("id")
    # One row per name: the device with the most time (rows come sorted by time).
    names = kernel_rooflines(trace).group_by("name", maintain_order=True).first()
    insight = Insight(events, names, steps)
    insight.get(0)  # build the id index here, in the worker
    return insight
