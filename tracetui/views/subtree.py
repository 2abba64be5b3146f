"""A tree node and the subtree under it as plain records: the explorer's subtree export, and the
node records of ``diff --json``'s ``tree`` (:mod:`tracetui.compare.pair_tree`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from tracetui.views.tree import Node, NodeKey, TreeModel

MAX_NODES = 1_000_000  # a subtree export stops here (and says so): memory stays bounded

SCHEMA: dict[str, Any] = {
    "index": pl.Int64,
    "parent": pl.Int64,
    "depth": pl.Int64,
    "event_id": pl.Int64,
    "kind": pl.String,
    "name": pl.String,
    "label": pl.String,
    "cpu_us": pl.Float64,
    "gpu_us": pl.Float64,
    "kernels": pl.Int64,
    "gpu_events": pl.Int64,
    "start_us": pl.Float64,
    "device": pl.Int64,
    "stream": pl.Int64,
}


def node_record(node: Node) -> dict[str, Any]:
    """What a tree row says, JSON-ready: its event, kind, full name and shown label, and numbers."""
    return {
        "event_id": node.event_id,
        "kind": node.kind,
        "name": node.full_name,
        "label": node.name,
        "cpu_us": _finite(node.cpu_us),
        "gpu_us": _finite(node.gpu_us),
        "kernels": node.kernels,
        "gpu_events": node.gpu_events,
    }


def subtree_frame(
    model: TreeModel, root: NodeKey, t0_ns: int, limit: int = MAX_NODES
) -> tuple[pl.DataFrame, bool]:
    """The node ``root`` and everything under it as the tree shows it (its filters apply), one row
    per node in preorder: ``index`` and ``parent`` are preorder positions, ``depth`` counts from the
    root (0), ``start_us`` from the trace's first event. Returns ``(frame, truncated)``; no recursion,
    so a stack thousands of levels deep exports like a flat one."""
    rows: list[dict[str, Any]] = []
    stack: list[tuple[NodeKey, int | None, int]] = [(root, None, 0)]
    while stack and len(rows) < limit:
        key, parent, depth = stack.pop()
        node = model.node(key)
        start = None if node.start_ns is None else (node.start_ns - t0_ns) / 1000
        rows.append(
            {
                "index": len(rows),
                "parent": parent,
                "depth": depth,
                **node_record(node),
                "start_us": start,
                "device": node.device,
                "stream": node.stream,
            }
        )
        here = len(rows) - 1
        stack.extend((child, here, depth + 1) for child in reversed(model.children(key)))
    return pl.DataFrame(rows, schema=SCHEMA), bool(stack)


def _finite(value: float | None) -> float | None:
    """JSON has no inf/nan: null."""
    return None if value is None or not math.isfinite(value) else value
