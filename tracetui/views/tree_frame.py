"""The tree's first frame, kept in the trace's parts: what a reopen draws without reading the events.

The default tree (:class:`~tracetui.views.tree.TreeModel` without filters) is a few vectorised
passes over the whole events table; its result is small: the steps, the thread nodes with their
roots and sums, the GPU work by launch call, the orphans and the steps' and annotations' counts
(:class:`Frame`), and the rows the explorer shows first, the hottest chain expanded (:class:`Rows`).
Both are kept as one part of the trace (:data:`KIND`; the cache entry's: keyed by the trace
file's identity and tracetui's code, checked by its CRC on every read). A part that does not
decode is ignored and the tree is computed again, never served.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import msgspec
import polars as pl

if TYPE_CHECKING:
    from tracetui.trace.model import PartStore

KIND = "tree:first-frame"
MAX_ROWS = 20_000  # the rows whose nodes are kept (a first frame can have more: read on demand)
Key = Any  # a node key (tracetui.views.tree.NodeKey): an event id or a tuple
Stats = tuple[float, float, int, int]
Counts = tuple[float, int, int, int, int]
_SPANS = ("id", "gpu_us", "kernels", "gpu_events", "memcpys", "memsets")


@dataclass(frozen=True)
class Frame:
    """The default tree's structure, as :class:`~tracetui.views.tree.TreeModel` computes it."""

    has_gpu: bool
    step_ids: list[int]
    launched: pl.DataFrame  # (launch_id, id) of the GPU work under a call, in display order
    orphans: list[int]
    track_names: dict[int, str]
    thread_roots: dict[tuple[Any, ...], list[int]]
    thread_stats: dict[tuple[Any, ...], Stats]
    spans: dict[int, Counts]
    visible_steps: frozenset[int]
    profiler_tracks: frozenset[int]


@dataclass(frozen=True)
class Rows:
    """The first frame's rows: the chain expanded (``path``), each row's node, whether it has
    children and its step (``TreeModel.step_of``), and the children of the expanded nodes."""

    path: list[Key]
    nodes: dict[Key, Any]  # tracetui.views.tree.Node
    has_children: dict[Key, bool]
    children: dict[Key, list[Key]]
    steps: dict[Key, int | None]


def write(parts: PartStore, frame: Frame, rows: Rows) -> None:
    """Keep ``frame`` and ``rows`` in ``parts``."""
    spans = pl.DataFrame([(key, *values) for key, values in frame.spans.items()], schema=_SPANS, orient="row")
    node_fields = [field.name for field in fields(next(iter(rows.nodes.values())))] if rows.nodes else []
    plain = {
        "has_gpu": frame.has_gpu,
        "step_ids": frame.step_ids,
        "orphans": frame.orphans,
        "track_names": list(frame.track_names.items()),
        "thread_roots": list(frame.thread_roots.items()),
        "thread_stats": list(frame.thread_stats.items()),
        "visible_steps": sorted(frame.visible_steps),
        "profiler_tracks": sorted(frame.profiler_tracks),
        "path": rows.path,
        "node_fields": node_fields,
        "rows": [
            (key, [getattr(node, name) for name in node_fields], rows.has_children[key], rows.steps[key])
            for key, node in rows.nodes.items()
        ],
        "children": list(rows.children.items()),
    }
    parts.put(
        KIND,
        {
            "frame.msgpack": msgspec.msgpack.encode(plain),
            "launched.arrow": _ipc(frame.launched),
            "spans.arrow": _ipc(spans),
        },
    )


def read(parts: PartStore, node: type) -> tuple[Frame, Rows] | None:
    """The kept first frame (``node``: the class of the rows' nodes), or None: none kept, or one
    that does not decode (the tree is computed again)."""
    kept = parts.get(KIND)
    if kept is None:
        return None
    try:
        return _decoded(kept, node)
    except Exception:  # another shape (never served): computed again
        return None


def _decoded(kept: dict[str, bytes], node: type) -> tuple[Frame, Rows]:
    plain = msgspec.msgpack.decode(kept["frame.msgpack"])
    launched = pl.read_ipc(io.BytesIO(kept["launched.arrow"]))
    spans = pl.read_ipc(io.BytesIO(kept["spans.arrow"]))
    if launched.columns != ["launch_id", "id"] or spans.columns != list(_SPANS):
        raise ValueError("tables of another shape")
    frame = Frame(
        has_gpu=bool(plain["has_gpu"]),
        step_ids=[int(step) for step in plain["step_ids"]],
        launched=launched,
        orphans=[int(orphan) for orphan in plain["orphans"]],
        track_names={int(track): str(name) for track, name in plain["track_names"]},
        thread_roots={_key(key): [int(i) for i in ids] for key, ids in plain["thread_roots"]},
        thread_stats={_key(key): (s[0], s[1], int(s[2]), int(s[3])) for key, s in plain["thread_stats"]},
        spans={row[0]: row[1:] for row in spans.iter_rows()},
        visible_steps=frozenset(int(step) for step in plain["visible_steps"]),
        profiler_tracks=frozenset(int(track) for track in plain["profiler_tracks"]),
    )
    names = plain["node_fields"]
    nodes, has_children, steps = {}, {}, {}
    for key, values, has, step in plain["rows"]:
        key = _key(key)
        nodes[key] = node(**dict(zip(names, values, strict=True)) | {"key": key})
        has_children[key] = bool(has)
        steps[key] = step
    rows = Rows(
        path=[_key(key) for key in plain["path"]],
        nodes=nodes,
        has_children=has_children,
        children={_key(key): [_key(kid) for kid in kids] for key, kids in plain["children"]},
        steps=steps,
    )
    if not set(rows.path) <= set(nodes) or not set(rows.children) <= set(nodes):
        raise ValueError("rows missing")
    return frame, rows


def _key(value: Any) -> Key:
    """A node key as kept (a tuple comes back as a list)."""
    if isinstance(value, int):
        return value
    if isinstance(value, list) and value and isinstance(value[0], str):
        return tuple(value)
    raise ValueError(f"not a node key: {value!r}")


def _ipc(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_ipc(buffer, compression="zstd")
    return buffer.getvalue()
