"""The data behind ``tracetui summary``: one JSON-ready dict with a stable, documented schema.

Schema ``tracetui.summary/1`` (see docs/reference.md, "summary --json"). Numbers are µs unless a key says
otherwise; lists are sorted as the report shows them; every list is complete (no top-N cut)
except ``orphans`` and ``anomalies``, which keep ``ORPHAN_LIMIT`` rows beside full counts.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui.insight.compile_names import compile_overheads
from tracetui.insight.devices import device_arch, device_vendor
from tracetui.insight.distributions import distribution_record, step_distribution
from tracetui.insight.gpu_work import gpu_work_union_us, span_us
from tracetui.insight.kernels import decoded_kernels, kernel_rooflines
from tracetui.insight.memory import memory_of
from tracetui.insight.memory_data import memory_data
from tracetui.insight.spans import span_readings
from tracetui.insight.why_data import advice_records, step_why
from tracetui.trace.nesting import PROFILER_OVERLAP

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


def _device(props: dict[str, Any]) -> dict[str, Any]:
    """A ``deviceProperties`` entry's keys of :data:`DEVICE_KEYS`, with its ``vendor`` and ``arch``
    (``sm90``, ``gfx942``: :func:`~tracetui.insight.devices.device_arch`)."""
    return {k: props.get(k) for k in DEVICE_KEYS if k in props} | {
        "vendor": device_vendor(props),
        "arch": device_arch(props),
    }


def _naming(trace: Trace) -> dict[str, Any]:
    """What the summary says of how the trace was named (not of what its file holds)."""
    return {"path": str(trace.path), "name": trace.path.name, "other_files": [str(p) for p in trace.siblings]}


def _computed(trace: Trace) -> dict[str, Any]:
    # every reading first, each module's together, then the dict. The readings that need the most
    # memory while they are made come first, while the trace keeps the least beside its tables (each
    # keeps some of what it made for the readings after it): the memory reading (keeps nothing), the
    # annotations and steps, the rooflines
    memory = memory_data(memory_of(trace), trace.t0_ns)
    steps, annotations = span_readings(trace)
    rooflines = kernel_rooflines(trace)
    kernels = decoded_kernels(trace)
    step_times = distribution_record(step_distribution(trace.steps), trace)
    span, busy = span_us(trace), gpu_work_union_us(trace)
    compiled = compile_overheads(trace)
    why, what_to_try = step_why(trace), advice_records(trace)
    counts = _counts(trace)
    real = len(_real_anomalies(trace))
    naming = _naming(trace)
    return {
        "schema": SCHEMA,
        "trace": {
            "path": naming["path"],
            "name": naming["name"],
            "events": trace.event_count,
            "format": trace.format,
            "devices": [_device(d) for d in trace.devices],
            "gzipped": trace.gzipped,
            "truncated": trace.truncated,
            "repairs": trace.repairs,
            "reader": trace.reader,
            "other_files": naming["other_files"],
            "span_us": span,
            "gpu_busy_us": busy,
            "tracetui_metadata": trace.metadata.get("tracetui"),
        },
        "counts": counts,
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
                "id",
            ],
            rename={"dur": "cpu_us"},
            extra=lambda row: why.get(row.pop("id"), {}),
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
            kernels,
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
        "step_times": step_times,
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
        "compile_overheads": records(compiled, ["name", "calls", "avg_us", "total_us"]),
        "orphans": {
            "count": len(trace.orphans),
            "items": records(
                trace.orphans.head(ORPHAN_LIMIT),
                ["id", "name", "cat", "ts", "dur", "device", "stream", "correlation"],
                rename={"cat": "category"},
            ),
        },
        "anomalies": {
            "count": real,
            "benign": len(trace.anomalies) - real,
            "by_kind": _value_counts(trace.anomalies, "kind"),
            "items": _anomaly_records(trace),
        },
        "memory": memory,
        "advice": what_to_try,
    }


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


def _value_counts(frame: pl.DataFrame, column: str) -> dict[str, int]:
    if frame.is_empty():
        return {}
    counts = frame.group_by(column).len().sort(["len", column], descending=[True, False])
    return {str(k): int(v) for k, v in counts.iter_rows()}


def records(
    frame: pl.DataFrame,
    columns: list[str],
    rename: dict[str, str] | None = None,
    extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Rows of ``frame`` as JSON-ready dicts with ``columns`` (those present), renamed; ``extra``
    adds keys to each (it may take some away)."""
    present = [c for c in columns if c in frame.columns]
    rows = frame.select(present).rename(rename or {}, strict=False)
    found = []
    for row in rows.iter_rows(named=True):
        more = extra(row) if extra is not None else {}
        found.append(_finite(row | more))
    return found


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
