"""An independent reading of a trace's memory: a plain-Python replay of its ``[memory]`` events,
straight from the JSON (no tracetui code), for the memory tests to compare against."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any


def ns(us: float) -> int:
    """µs as written → exact integer ns (the shortest repr of a float is the text of the file)."""
    return int(Decimal(repr(us)) * 1000)


def read(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


@dataclass
class Replayed:
    """Per device (``(type, id)``): the peak, the event reaching it, the live blocks then."""

    peak: dict[tuple[int, int], int] = field(default_factory=dict)
    peak_index: dict[tuple[int, int], int] = field(default_factory=dict)
    alive: dict[tuple[int, int], dict[int, tuple[int, str | None]]] = field(default_factory=dict)
    ops: dict[int, str | None] = field(default_factory=dict)  # instant index -> innermost op

    def alive_by_op(self, device: tuple[int, int]) -> dict[str | None, tuple[int, int]]:
        """``op -> (bytes, count)`` of the blocks alive at the device's peak."""
        grouped: dict[str | None, list[int]] = defaultdict(lambda: [0, 0])
        for size, op in self.alive[device].values():
            grouped[op][0] += size
            grouped[op][1] += 1
        return {op: (b, c) for op, (b, c) in grouped.items()}


def innermost_ops(events: list[dict[str, Any]], instants: list[int]) -> dict[int, str | None]:
    """For each instant (index in ``events``), the innermost ``cpu_op`` of its thread holding it."""
    return innermost(events, instants, lambda e: e.get("cat") == "cpu_op")


def innermost(
    events: list[dict[str, Any]], instants: list[int], kept: Callable[[dict[str, Any]], bool]
) -> dict[int, str | None]:
    """For each instant (index in ``events``), the name of the innermost complete event of its
    thread for which ``kept`` holds that holds the instant (bounds inclusive): a sweep per thread
    with a stack of the open events."""
    spans_by_thread: dict[tuple[str, str], list[tuple[int, int, int, str]]] = defaultdict(list)
    for index, e in enumerate(events):
        if e.get("ph") == "X" and kept(e):
            start = ns(e["ts"])
            spans_by_thread[(str(e["pid"]), str(e["tid"]))].append(
                (start, -(start + ns(e["dur"])), index, e["name"])
            )
    points_by_thread: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for index in instants:
        e = events[index]
        points_by_thread[(str(e["pid"]), str(e["tid"]))].append((ns(e["ts"]), index))
    found: dict[int, str | None] = {}
    for thread, points in points_by_thread.items():
        spans = sorted(spans_by_thread.get(thread, []))
        stack: list[tuple[int, str]] = []  # (end, name), outermost first
        next_span = 0
        for t, index in sorted(points):
            while next_span < len(spans) and spans[next_span][0] <= t:
                start, neg_end, _, name = spans[next_span]
                while stack and stack[-1][0] < start:
                    stack.pop()
                stack.append((-neg_end, name))
                next_span += 1
            while stack and stack[-1][0] < t:
                stack.pop()
            found[index] = stack[-1][1] if stack else None
    return found


def replay(path: Path) -> Replayed:
    """Walk the memory events in time order, keeping the live blocks per device."""
    events = read(path)
    instants = [i for i, e in enumerate(events) if e.get("ph") in ("i", "I") and e.get("name") == "[memory]"]
    result = Replayed(ops=innermost_ops(events, instants))
    live: dict[tuple[int, int], dict[int, tuple[int, str | None]]] = defaultdict(dict)
    for index in sorted(instants, key=lambda i: (ns(events[i]["ts"]), i)):
        args = events[index]["args"]
        device = (args["Device Type"], args["Device Id"])
        size, addr = args["Bytes"], args["Addr"]
        if size > 0:
            live[device][addr] = (size, result.ops[index])
        elif size < 0:
            live[device].pop(addr, None)
        total = args["Total Allocated"]
        if device not in result.peak or total > result.peak[device]:
            result.peak[device] = total
            result.peak_index[device] = index
            result.alive[device] = dict(live[device])
    return result
