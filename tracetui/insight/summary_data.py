"""The data behind ``tracetui summary``: one JSON-ready dict with a stable, documented schema.

Schema ``tracetui.summary/1`` (see docs/reference.md, "summary --json"). Numbers are µs unless a key says
otherwise; lists are sorted as the report shows them; every list is complete (no top-N cut)
except ``orphans`` and ``anomalies``, which keep ``ORPHAN_LIMIT`` rows beside full counts.
"""

from __future__ import annotations

import contextlib
import json
import math
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui.insight.distributions import distribution_record, gpu_distributions, step_distribution
from tracetui.insight.kernel_names import kernel_name_columns
from tracetui.insight.memory import memory_of
from tracetui.insight.memory_data import memory_data
from tracetui.insight.report import (
    annotation_thread_splits,
    annotation_threads,
    annotation_verdicts,
    compile_overheads,
    gpu_work_union_us,
    kernel_rooflines,
    span_us,
    step_verdicts,
    thread_splits,
)
from tracetui.trace.nesting import PROFILER_OVERLAP
from tracetui.trace.stats import most_common

if TYPE_CHECKING:
    from tracetui.trace import Trace

SCHEMA = "tracetui.summary/1"
KIND, PART = "summary", "summary.json"  # how the summary is kept with a trace's cache entry
ORPHAN_LIMIT = 200
DEVICE_KEYS = ("id", "name", "computeMajor", "computeMinor", "totalGlobalMem", "numSms")


def summary_data(trace: Trace) -> dict[str, Any]:
    """Everything the summary shows, as plain JSON values: computed once per trace file and code
    version, then kept with the trace's cache entry (:attr:`Trace.parts`), so that a summary of a
    trace from the cache reads none of its tables."""
    kept = trace.parts.get(KIND)
    if kept is not None:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            data = json.loads(kept[PART])
            data["trace"] |= _naming(trace)
            return data  # type: ignore[no-any-return]
    data = _computed(trace)
    trace.parts.put(KIND, {PART: json.dumps(data).encode()})
    return data


def _naming(trace: Trace) -> dict[str, Any]:
    """What the summary says of how the trace was named (not of what its file holds)."""
    return {"path": str(trace.path), "name": trace.path.name, "other_files": [str(p) for p in trace.siblings]}


def _computed(trace: Trace) -> dict[str, Any]:
    # the readings that need the most memory while they are made come first, while the trace keeps
    # the least beside its tables (each keeps some of what it made for the readings after it): the
    # memory reading (keeps nothing), the annotations and steps, the rooflines
    memory = memory_data(memory_of(trace), trace.t0_ns)
    annotations = (
        trace.annotations.join(_mean_verdicts(annotation_verdicts(trace)), on="name", how="left")
        .join(annotation_thread_splits(trace).rename({"split": "kernels_split"}), on="name", how="left")
        .join(_annotation_threads(trace), on="name", how="left")
    )
    steps = (
        trace.steps.join(
            step_verdicts(trace).select("id", "gpu_busy_pct", "cpu_launch_us", "bound", "verdict"),
            on="id",
            how="left",
        )
        .join(thread_splits(trace).rename({"span": "id", "split": "kernels_split"}), on="id", how="left")
        .join(_step_threads(trace), on="id", how="left")
    )
    rooflines = kernel_rooflines(trace)
    naming = _naming(trace)
    return {
        "schema": SCHEMA,
        "trace": {
            "path": naming["path"],
            "name": naming["name"],
            "events": trace.event_count,
            "format": trace.format,
            "devices": [{k: d.get(k) for k in DEVICE_KEYS if k in d} for d in trace.devices],
            "gzipped": trace.gzipped,
            "truncated": trace.truncated,
            "repairs": trace.repairs,
            "reader": trace.reader,
            "other_files": naming["other_files"],
            "span_us": span_us(trace),
            "gpu_busy_us": gpu_work_union_us(trace),
            "tracetui_metadata": trace.metadata.get("tracetui"),
        },
        "counts": _counts(trace),
        "steps": records(
            steps,
            [
                "name",
                "step",
                "dur",
                "gpu_us",
                "gpu_busy_us",
                "gpu_busy_pct",
                "cpu_launch_us",
                "gpu_events",
                "kernels",
                "memcpys",
                "memsets",
                "idle_gaps",
                "largest_gap_us",
                "kernels_here",
                "kernels_split",
                "threads",
                "bound",
                "verdict",
            ],
            rename={"dur": "cpu_us"},
        ),
        "annotations": records(
            annotations,
            [
                "name",
                "calls",
                "kernels_per_call",
                "kernels_here_per_call",
                "kernels_split",
                "threads",
                "memcpys_per_call",
                "memsets_per_call",
                "gpu_events_per_call",
                "kernels_min",
                "kernels_max",
                "gpu_us",
                "gpu_us_per_call",
                "gpu_busy_us_per_call",
                "cpu_us_per_call",
                "bound",
                "verdict",
            ],
        ),
        "ops": records(
            trace.ops,
            [
                "name",
                "calls",
                "cpu_total_us",
                "cpu_self_us",
                "gpu_us",
                "gpu_events",
                "kernels",
                "memcpys",
                "memsets",
                "launches_kernels",
            ],
        ),
        "kernels": records(
            _decoded_kernels(trace),
            [
                "name",
                "short",
                "family",
                "kind",
                "category",
                "calls",
                "total_us",
                "avg_us",
                "min_us",
                "max_us",
                "p50_us",
                "p90_us",
                "p99_us",
                "orphans",
                "launched_by",
                "launched_via",
            ],
        ),
        "step_times": distribution_record(step_distribution(trace.steps), trace),
        "runtime": records(trace.runtime, ["name", "calls", "cpu_us", "gpu_events", "kernels", "gpu_us"]),
        "rooflines": records(
            rooflines,
            [
                "name",
                "short",
                "device",
                "calls",
                "time_us",
                "flops",
                "bytes",
                "tflops",
                "gbs",
                "intensity",
                "bound",
                "roof_fraction",
                "verdict",
            ],
        ),
        "compile_overheads": records(compile_overheads(trace), ["name", "calls", "avg_us", "total_us"]),
        "orphans": {
            "count": len(trace.orphans),
            "items": records(
                trace.orphans.head(ORPHAN_LIMIT),
                ["id", "name", "cat", "ts", "dur", "device", "stream", "correlation"],
                rename={"cat": "category"},
            ),
        },
        "anomalies": {
            "count": len(_real_anomalies(trace)),
            "benign": len(trace.anomalies) - len(_real_anomalies(trace)),
            "by_kind": _value_counts(trace.anomalies, "kind"),
            "items": _anomaly_records(trace),
        },
        "memory": memory,
    }


def _step_threads(trace: Trace) -> pl.DataFrame:
    """``(id, threads)``: per step, the work each thread launched during it."""
    return (
        trace.span_threads.join(trace.steps.select(pl.col("id").alias("span")), on="span")
        .group_by("span", maintain_order=True)
        .agg(pl.struct(THREAD_FIELDS).alias("threads"))
        .rename({"span": "id"})
    )


def _annotation_threads(trace: Trace) -> pl.DataFrame:
    """``(name, threads)``: per annotation name, the work each thread launched per call."""
    per_call = annotation_threads(trace)
    fields = [c for c in per_call.columns if c != "name"]
    return per_call.group_by("name", maintain_order=True).agg(pl.struct(fields).alias("threads"))


THREAD_FIELDS = ("thread", "here", "kernels", "memcpys", "memsets", "gpu_events", "gpu_us")


def _decoded_kernels(trace: Trace) -> pl.DataFrame:
    """The kernels table with each name's decoded short form, family and kind."""
    kernels = trace.kernels.rename({"cat": "category"})
    if kernels.is_empty():
        return kernels
    decoded = kernel_name_columns(kernels["name"]).select("name", "short", "family", "kind")
    spread = gpu_distributions(trace).select("name", "p50_us", "p90_us", "p99_us")
    return kernels.join(decoded, on="name", how="left", maintain_order="left").join(
        spread, on="name", how="left", maintain_order="left"
    )


def _counts(trace: Trace) -> dict[str, Any]:
    by_category = _value_counts(trace.events, "cat")
    return {
        "by_category": by_category,
        "instants": len(trace.instants),
        "flows": _value_counts(trace.read_once("flows", ("cat",)), "cat"),  # a load keeps them aside
        "metadata_events": len(trace.meta_events),
        "other_phases": trace.other_phases,
        "kernels": by_category.get("kernel", 0),
        "memcpys": by_category.get("gpu_memcpy", 0),
        "memsets": by_category.get("gpu_memset", 0),
        "orphans": len(trace.orphans),
        "anomalies": len(_real_anomalies(trace)),
        "benign_anomalies": len(trace.anomalies) - len(_real_anomalies(trace)),
    }


def _real_anomalies(trace: Trace) -> pl.DataFrame:
    """The anomalies but the known profiler artifacts (``profiler_overlap``: benign)."""
    return trace.anomalies.filter(pl.col("kind") != PROFILER_OVERLAP)


def _mean_verdicts(per_instance: pl.DataFrame) -> pl.DataFrame:
    """Per annotation name: the most common bound (of a tie, the first by name: the same every
    run) and the verdict of its median call."""
    if per_instance.is_empty():
        return pl.DataFrame(schema={"name": pl.String, "bound": pl.String, "verdict": pl.String})
    return (
        per_instance.sort("cpu_launch_us")
        .group_by("name", maintain_order=True)
        .agg(most_common(pl.col("bound")), pl.col("verdict").get(pl.len() // 2))
    )


def _value_counts(frame: pl.DataFrame, column: str) -> dict[str, int]:
    if frame.is_empty():
        return {}
    counts = frame.group_by(column).len().sort(["len", column], descending=[True, False])
    return {str(k): int(v) for k, v in counts.iter_rows()}


def records(
    frame: pl.DataFrame, columns: list[str], rename: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Rows of ``frame`` as JSON-ready dicts with ``columns`` (those present), renamed."""
    present = [c for c in columns if c in frame.columns]
    rows = frame.select(present).rename(rename or {}, strict=False)
    return [_finite(row) for row in rows.iter_rows(named=True)]


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    """JSON has no inf/nan: write them as null."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def _anomaly_records(trace: Trace) -> list[dict[str, Any]]:
    benign = pl.col("kind") == PROFILER_OVERLAP
    head = trace.anomalies.sort(benign, maintain_order=True).head(ORPHAN_LIMIT)  # the real ones first
    rows = head.with_columns(
        trace.lookup(head["event_id"], "name")["name"].alias("event"),
        trace.lookup(head["other_id"], "name")["name"].alias("other"),
    )
    return records(rows, ["kind", "event_id", "event", "other_id", "other"])
