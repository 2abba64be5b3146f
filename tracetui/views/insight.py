"""The insight readings the explorer shows: roofline per kernel and per kernel name, verdict per step
and annotation, duration distributions."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui.insight.distributions import gpu_distributions, step_distribution
from tracetui.insight.gpu_work import is_gpu_work
from tracetui.insight.kernels import kernel_insight, kernel_rooflines
from tracetui.insight.spans import verdicts

if TYPE_CHECKING:
    from tracetui.trace import Trace


@dataclass(frozen=True)
class Insight:
    """Per-event readings and the frames the tables join.

    The steps' and annotations' verdicts are one frame, sorted by event id (few rows). A GPU
    event's roofline is read when asked for (``kernel_reading``, the last few kept): every kernel's
    reading at once is ~600 bytes of text per kernel, ~150 MB held (and ~450 MB to make) for a
    1 GB trace, of which the details pane shows one at a time. Rows stay in polars and become dicts
    only when asked for.
    """

    events: pl.DataFrame | None = None
    kernel_names: pl.DataFrame | None = None
    steps: pl.DataFrame | None = None
    distributions: pl.DataFrame | None = None  # per GPU work name (insight.distributions)
    step_times: pl.DataFrame | None = None  # the steps' distribution (one row, or none)
    kernel_reading: Callable[[int], dict[str, Any] | None] | None = None  # a GPU event's roofline

    def distribution(self, name: str) -> dict[str, Any] | None:
        """The duration distribution of the GPU work named ``name``, if known."""
        if self.distributions is None:
            return None
        rows = self.distributions.filter(pl.col("name") == name)
        return rows.row(0, named=True) if rows.height else None

    def step_distribution(self) -> dict[str, Any] | None:
        """The distribution of the steps' CPU spans, if the trace has steps."""
        if self.step_times is None or self.step_times.is_empty():
            return None
        return self.step_times.row(0, named=True)

    def get(self, event_id: int) -> dict[str, Any] | None:
        """The reading for one event (a GPU event's roofline, a step's or annotation's verdict)."""
        if self.events is not None:
            ids = self._ids
            row = bisect_left(ids, event_id)
            if row < len(ids) and ids[row] == event_id:
                return self.events.row(row, named=True)
        return self.kernel_reading(event_id) if self.kernel_reading is not None else None

    @property
    def _ids(self) -> list[int]:
        cached = self.__dict__.get("_id_list")
        if cached is None:
            cached = [] if self.events is None else self.events["id"].to_list()
            object.__setattr__(self, "_id_list", cached)
        return cached


def load_insight(trace: Trace) -> Insight:
    """The kernel roofline per name (per event: when asked for), step/annotation verdicts and the
    duration distributions."""
    distributions, step_times = gpu_distributions(trace), step_distribution(trace.steps)
    steps, annotations = verdicts(trace)
    events = pl.concat([steps, annotations], how="diagonal_relaxed")
    events = events.unique("id", keep="first", maintain_order=True).sort("id")
    # One row per name: the device with the most time (rows come sorted by time).
    names = kernel_rooflines(trace).group_by("name", maintain_order=True).first()
    reading = lru_cache(maxsize=KEPT_READINGS)(partial(_kernel_reading, trace))
    insight = Insight(events, names, steps, distributions, step_times, reading)
    insight.get(-1)  # build the id index here, in the worker
    return insight


KEPT_READINGS = 16  # GPU events' readings kept (the details pane goes back and forth)


def _kernel_reading(trace: Trace, event_id: int) -> dict[str, Any] | None:
    """One GPU event's roofline reading (:func:`~tracetui.insight.kernels.kernel_insight` of it
    alone), None for any other event (found without reading)."""
    if event_id < 0 or not is_gpu_work(trace, event_id):
        return None
    rows = kernel_insight(trace, pl.Series("id", [event_id], dtype=pl.UInt32))
    return rows.row(0, named=True) if rows.height else None
