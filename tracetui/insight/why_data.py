"""Why a step is slow, as plain JSON values: each step's critical path, its GPU idle time explained
and its launch statistics, and the advice; the one place every surface (summary, ``--json``,
export, check, the explorer's Why view) reads these figures from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui.insight.advice import Advice, advice
from tracetui.insight.critical_path import PARTS, CriticalPaths, annotation_paths, step_paths
from tracetui.insight.idle import IDLE_PARTS, step_idle, step_launches, stream_idle
from tracetui.insight.spans import span_windows

if TYPE_CHECKING:
    from tracetui.trace import Trace

TOP = 8  # the names listed in a path's ``top``
PATH_PARTS = (
    ("cpu_us", "CPU ops"),
    ("launch_us", "launches"),
    ("sync_wait_us", "sync waits"),
    ("gap_us", "gaps"),
    ("gpu_us", "GPU"),
)
"""The parts of a path's length (:data:`~tracetui.insight.critical_path.PARTS`) and their words."""


def path_parts(path: dict[str, Any]) -> list[tuple[str, float, float | None]]:
    """A critical path's parts (``steps[].critical_path``): ``(words, µs, share of its length)``,
    the largest first (ties by their words); the share is None for a path of no length. The one
    ranking the summary and the explorer's Why view write."""
    length = path["length_us"]
    ranked = sorted(((label, path[key]) for key, label in PATH_PARTS), key=lambda part: (-part[1], part[0]))
    return [(label, us, us / length if length else None) for label, us in ranked]


LAUNCH_KEYS = (
    "launch_delay_p50_us",
    "launch_delay_p90_us",
    "launch_delay_p99_us",
    "launch_delay_max_us",
    "queue_max",
    "queue_mean",
)


def path_record(paths: CriticalPaths, span: int, top: int = TOP) -> dict[str, Any] | None:
    """``{length_us, cpu_us, gpu_us, launch_us, sync_wait_us, gap_us, top}`` of one span's path."""
    row = paths.record(span)
    if row is None:
        return None
    return {"length_us": row["length_us"], **{k: row[k] for k in PARTS}, "top": paths.top(span, top)}


def step_why(trace: Trace) -> dict[int, dict[str, Any]]:
    """Per step id: ``critical_path`` (:func:`path_record`), ``idle`` (``idle_us``, the three
    parts, ``idle_pct`` of the window, ``streams``: the same per device and stream) and ``launch``
    (the launch delay percentiles and queue length)."""
    paths = step_paths(trace)
    idle = _summed(step_idle(trace))
    streams = stream_idle(trace)
    launches = step_launches(trace).rows_by_key("span", named=True, unique=True)
    by_stream: dict[int, list[dict[str, Any]]] = {}
    for row in streams.iter_rows(named=True):
        by_stream.setdefault(row["span"], []).append(
            {k: row[k] for k in ("device", "stream", "idle_us", *IDLE_PARTS)}
        )
    found: dict[int, dict[str, Any]] = {}
    for span in paths.spans["span"].to_list():
        reading = idle.get(span)
        idle_record = None
        if reading is not None:
            window = reading["window_us"]
            idle_record = {
                "idle_us": reading["idle_us"],
                **{k: reading[k] for k in IDLE_PARTS},
                "idle_pct": 100.0 * reading["idle_us"] / window if window else None,
                "streams": by_stream.get(span, []),
            }
        launch = launches.get(span)
        found[span] = {
            "critical_path": path_record(paths, span),
            "idle": idle_record,
            "launch": {k: launch[k] for k in LAUNCH_KEYS} if launch is not None else None,
        }
    return found


def _summed(per_device: pl.DataFrame) -> dict[int, dict[str, Any]]:
    """Per step: the idle figures summed over its devices (one device: its own)."""
    summed = per_device.group_by("span").agg(
        pl.col("window_us").first(), pl.col("idle_us").sum(), *(pl.col(k).sum() for k in IDLE_PARTS)
    )
    return summed.rows_by_key("span", named=True, unique=True)  # type: ignore[return-value]


def annotation_why(trace: Trace) -> dict[str, dict[str, Any]]:
    """Per annotation name: the critical path of its median call (by length: its window's), with
    ``call`` (its id). Only those calls' paths are walked (unless every call's is kept)."""
    windows = span_windows(trace, "annotations").with_columns(
        length_us=(pl.col("end_ns") - pl.col("start_ns")) / 1000.0
    )
    ordered = windows.sort("name", "length_us", "span")
    middles = {
        str(name): int(calls["span"][len(calls) // 2])
        for (name,), calls in ordered.group_by("name", maintain_order=True)
    }
    paths = annotation_paths(trace, middles.values())
    found: dict[str, dict[str, Any]] = {}
    for name, middle in middles.items():
        record = path_record(paths, middle)
        if record is not None:
            found[name] = {"call": middle, **record}
    return found


def advice_records(trace: Trace) -> list[dict[str, Any]]:
    """The advice, ranked: ``{rule, action, evidence, saving_us, confidence}``."""
    return [a.record() for a in advice(trace)]


def advice_frame(items: list[Advice] | list[dict[str, Any]]) -> pl.DataFrame:
    """The advice as a table (``export --table advice``), in rank order."""
    rows = [a.record() if isinstance(a, Advice) else a for a in items]
    schema = {
        "rank": pl.UInt32,
        "rule": pl.String,
        "action": pl.String,
        "evidence": pl.String,
        "saving_us": pl.Float64,
        "confidence": pl.String,
    }
    return pl.DataFrame([{"rank": i + 1, **r} for i, r in enumerate(rows)], schema=schema)
