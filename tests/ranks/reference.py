"""Independent computations for the many-ranks tests: read the raw JSON with the standard library
and compute each figure with plain Python (no tracetui code), in integer nanoseconds."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any

COMPUTE, COMM, MEMORY = "compute", "comm", "memory"


def raw_events(path: Path) -> list[dict[str, Any]]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def ns(value: float) -> int:
    return round(value * 1000)


def span(event: dict[str, Any]) -> tuple[int, int]:
    return ns(event["ts"]), ns(event["ts"]) + ns(event["dur"])


def union(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def steps(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    return sorted(found, key=lambda e: e["ts"])


def windows(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Each step from its start to the next step's start; the last to the later of its own end and
    the end of the GPU work launched (by a runtime call starting) inside it."""
    spans = [span(s) for s in steps(events)]
    last_start, last_end = spans[-1]
    pid = steps(events)[-1]["pid"]
    calls = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and e.get("pid") == pid
        and last_start <= ns(e["ts"]) <= last_end
    }
    gpu_end = max(
        (
            span(e)[1]
            for e in events
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
            and e.get("args", {}).get("correlation") in calls
        ),
        default=last_end,
    )
    starts = [s for s, _ in spans]
    return [(s, n) for s, n in itertools.pairwise(starts)] + [(last_start, max(last_end, gpu_end))]


def painted(intervals: dict[str, list[tuple[int, int]]], window: tuple[int, int]) -> dict[str, int]:
    """Paint the window's elementary segments with the highest class covering them (compute over
    communication over memory) and measure each class, the idle rest, and compute ∧ communication."""
    lo, hi = window
    clipped = {
        c: [(max(s, lo), min(e, hi)) for s, e in spans if s < hi and e > lo] for c, spans in intervals.items()
    }
    cuts = sorted({lo, hi, *(p for spans in clipped.values() for s, e in spans for p in (s, e))})
    result = {COMPUTE: 0, COMM: 0, MEMORY: 0, "idle": 0, "both": 0}
    for a, b in itertools.pairwise(cuts):
        covering = {c for c, spans in clipped.items() if any(s <= a and e >= b for s, e in spans)}
        top = next((c for c in (COMPUTE, COMM, MEMORY) if c in covering), "idle")
        result[top] += b - a
        result["both"] += (b - a) if {COMPUTE, COMM} <= covering else 0
    return result
