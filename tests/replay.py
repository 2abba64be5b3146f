"""A plain-Python replay of a Kineto trace's raw JSON: the figures the tests expect, computed
without tracetui (no polars, no model), from the events as written.

What it replays, by the definitions of docs/model.md:
* a runtime/driver call launches the GPU work with its ``args.correlation`` (kernel, memcpy, memset);
* a ``ProfilerStep#N`` holds the calls of its process that start inside it (the later step wins
  where two touch);
* an annotation (a ``user_annotation`` that is neither a step nor an Inductor ``## … ##`` marker)
  holds the calls of its process, on any thread, that start in ``[start, end]``.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

LAUNCH_CATS = {
    "cuda_runtime",
    "cuda_driver",
    "privateuse1_runtime",
    "privateuse1_driver",
    "xpu_runtime",
    "xpu_driver",
    "mtia_runtime",
}
WORK_CATS = {
    "kernel": "kernels",
    "mtia_ccp_events": "kernels",  # MTIA's device kernels (Kineto aliases the type to kernels)
    "gpu_memcpy": "memcpys",
    "gpu_memset": "memsets",
}
STEP = re.compile(r"^ProfilerStep#[0-9]+$")
MARKER = re.compile(r"^## .* ##$")


def raw_events(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    loaded = json.loads(data)
    return loaded if isinstance(loaded, dict) else {"traceEvents": loaded}


def ns(us: float) -> int:
    """µs as written → integer ns (the integer part and the 3-decimal fraction apart)."""
    whole = math.floor(us)
    return int(whole) * 1000 + round((us - whole) * 1000)


@dataclass
class Span:
    """One step or annotation instance and what it holds."""

    id: int
    name: str
    pid: str
    tid: str
    start: int
    end: int
    counts: Counter[str] = field(default_factory=Counter)  # kernels, memcpys, memsets, gpu_events
    gpu_ns: int = 0
    by_thread: Counter[str] = field(default_factory=Counter)  # kernels per launching tid
    intervals: list[tuple[int, int]] = field(default_factory=list)

    @property
    def kernels_here(self) -> int:
        return self.by_thread[self.tid]

    @property
    def gpu_us(self) -> float:
        return self.gpu_ns / 1000

    def busy_and_gaps(self, min_gap_ns: int = 1000) -> tuple[float, int, float]:
        """Union of the work's intervals (µs), idle gaps ≥ 1 µs between them, largest gap (µs)."""
        merged: list[list[int]] = []
        for start, end in sorted(self.intervals):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        gaps = [b[0] - a[1] for a, b in pairwise(merged)]
        busy = sum(e - s for s, e in merged) / 1000
        return busy, sum(g >= min_gap_ns for g in gaps), max(gaps, default=0) / 1000


@dataclass
class Replay:
    """Steps and annotation instances (by event index), and the short names of threads."""

    steps: dict[int, Span]
    annotations: dict[int, Span]
    threads: dict[tuple[str, str], str]

    def split(self, span: Span) -> str | None:
        """``358 here + 666 on pt_autograd_0`` when kernels came from other threads, else None."""
        others = sorted(
            (
                (n, self.threads.get((span.pid, tid), tid))
                for tid, n in span.by_thread.items()
                if tid != span.tid
            ),
            key=lambda item: (-item[0], item[1]),
        )
        others = [(n, name) for n, name in others if n]
        if not others:
            return None
        return f"{span.kernels_here:,} here + " + " + ".join(f"{n:,} on {name}" for n, name in others)


def replay(path: Path) -> Replay:
    events = raw_events(path)["traceEvents"]
    complete = [(i, e) for i, e in enumerate(events) if e.get("ph") == "X" and "ts" in e]
    process_names = {
        str(e.get("pid")): (e.get("args") or {}).get("name")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    names: dict[tuple[str, str], list[str]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(str(e.get("pid")), str(e.get("tid")))].append(str((e.get("args") or {}).get("name")))
    threads = {}
    for (pid, tid), candidates in names.items():
        specific = [c for c in candidates if not c.strip().endswith(f"({process_names.get(pid)})")]
        chosen = (specific or candidates)[-1].strip()
        found = re.search(r"\(([^)]*)\)\s*$", chosen)
        threads[(pid, tid)] = found.group(1) if found else chosen

    def span(i: int, e: dict[str, Any]) -> Span:
        start = ns(e["ts"])
        return Span(i, e["name"], str(e["pid"]), str(e["tid"]), start, start + round(e.get("dur", 0) * 1000))

    spans = [(i, e) for i, e in complete if e.get("cat") == "user_annotation"]
    steps = {i: span(i, e) for i, e in spans if STEP.match(e["name"])}
    annotations = {
        i: span(i, e) for i, e in spans if not STEP.match(e["name"]) and not MARKER.match(e["name"])
    }
    calls: dict[int, tuple[str, str, int]] = {}
    for _, e in complete:
        correlation = (e.get("args") or {}).get("correlation")
        if e.get("cat") in LAUNCH_CATS and correlation is not None:
            calls.setdefault(correlation, (str(e["pid"]), str(e["tid"]), ns(e["ts"])))
    for _, e in complete:
        kind = WORK_CATS.get(e.get("cat", ""))
        call = calls.get((e.get("args") or {}).get("correlation"))
        if kind is None or call is None:
            continue
        pid, tid, at = call
        start = ns(e["ts"])
        work = (kind, tid, start, start + round(e.get("dur", 0) * 1000))
        holders = [s for s in annotations.values() if s.pid == pid and s.start <= at <= s.end]
        in_steps = [s for s in steps.values() if s.pid == pid and s.start <= at]
        if in_steps:
            latest = max(in_steps, key=lambda s: s.start)
            if at <= latest.end:
                holders.append(latest)
        for holder in holders:
            holder.counts[kind] += 1
            holder.counts["gpu_events"] += 1
            holder.gpu_ns += work[3] - work[2]
            holder.intervals.append((work[2], work[3]))
            if kind == "kernels":
                holder.by_thread[tid] += 1
    return Replay(steps, annotations, threads)
