"""Where an instant happened: the innermost CPU event on its thread whose span holds it, and from
that event the op (innermost ``cpu_op``), the annotation and the python frame (the innermost
frame of a source line, with ``with_stack``).

One ``join_asof`` finds, per instant, the last event of its thread (in preorder) that started at
or before it; the events holding the instant are that event's ancestors-or-self that have not
ended yet, so the innermost is found by climbing parent links, all instants at once, while the
candidate ended before its instant (one round per level of the deepest climb; each round is a
gather by position over the instants still climbing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.trace.align import rows_of
from tracetui.trace.nesting import ancestor_ids
from tracetui.trace.text import matches

if TYPE_CHECKING:
    from tracetui.trace import Trace

SOURCE_FRAME = r"\(\d+\): "  # a python frame of a source line, ``torch/nn/modules/linear.py(125): forward``
# (not ``<built-in method …>`` nor ``nn.Module: Linear_0``)
ENCLOSING_SCHEMA = {
    "id": pl.UInt32,
    "track": pl.Int32,
    "enclosing_id": pl.UInt32,
    "enclosing_pos": pl.Int64,
    "op_id": pl.UInt32,
    "annotation_id": pl.UInt32,
    "frame_id": pl.UInt32,
}


def enclosing(trace: Trace, points: pl.DataFrame) -> pl.DataFrame:
    """For ``points`` (``id``, ``pid``, ``tid``, ``ts_ns``), one row each, in their order: the
    CPU ``track`` of their thread and the ids of the innermost enclosing event, op, annotation
    and python frame (null when nothing holds the instant, e.g. on an allocator thread with no
    events). Bounds are inclusive: an instant at an event's start or end is inside it."""
    tracks = trace.tracks.filter(pl.col("kind") == "cpu").select("pid", "tid", "track")
    located = points.select("id", "pid", "tid", "ts_ns").join(
        tracks, on=["pid", "tid"], how="left", maintain_order="left"
    )
    tree = _tree(trace)
    row = _innermost(located, tree)
    found = pl.lit(row)
    inside = row.is_not_null()
    picked = tree.select(
        pl.when(inside).then(pl.col(name).gather(found.fill_null(0)))
        for name in ("id", "pos", "op_here", "annotation_id", "frame_id")
    )
    result = pl.DataFrame(
        {
            "id": located["id"],
            "track": located["track"],
            "enclosing_id": picked["id"],
            "enclosing_pos": picked["pos"],
            "op_id": picked["op_here"],
            "annotation_id": picked["annotation_id"],
            "frame_id": picked["frame_id"],
        }
    )
    return result.select(pl.col(name).cast(dtype) for name, dtype in ENCLOSING_SCHEMA.items())


def _tree(trace: Trace) -> pl.DataFrame:
    """The CPU events in preorder (row = position), with each one's parent row, innermost op
    (itself if it is one) and nearest python source frame (ancestor or self)."""
    events = trace.events.select(
        "id", "cat", "name", "track", "pos", "start_ns", "end_ns", "parent", "op_id", "annotation_id"
    )
    tree = (
        events.filter(pl.col("pos").is_not_null())
        .sort("pos")
        .with_columns(
            op_here=pl.when(pl.col("cat") == "cpu_op").then(pl.col("id")).otherwise(pl.col("op_id"))
        )
    )
    if tree.is_empty():
        return tree.with_columns(parent_pos=pl.lit(-1, pl.Int64), frame_id=pl.lit(None, pl.UInt32))
    tree = tree.with_columns(parent_pos=_parent_rows(events, tree))
    source = (pl.col("cat") == "python_function") & matches("name", SOURCE_FRAME)
    if not tree.select(source.any()).item():
        return tree.with_columns(frame_id=pl.lit(None, pl.UInt32))
    return tree.with_columns(frame_id=ancestor_ids(tree, source))


def _parent_rows(events: pl.DataFrame, tree: pl.DataFrame) -> pl.Series:
    """Row in ``tree`` of each row's parent (-1 for roots). Positions are the rows when they run
    0..n-1 (as the nesting numbers them); otherwise a join finds them."""
    parents = tree["parent"]
    if tree["pos"][0] == 0 and tree["pos"][-1] == tree.height - 1:
        known = parents.fill_null(tree["id"][0])
        rows = events["pos"].gather(rows_of(events, known))
        return rows.zip_with(parents.is_not_null(), pl.Series([-1], dtype=pl.Int64)).cast(pl.Int64)
    index = tree.select(pl.col("id").alias("parent"), pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    joined = tree.select("parent").join(index, on="parent", how="left", maintain_order="left")
    return joined["row"].fill_null(-1)


def _innermost(located: pl.DataFrame, tree: pl.DataFrame) -> pl.Series:
    """Row in ``tree`` of the innermost event holding each located point (null: none)."""
    starts = tree.select("track", "start_ns", pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    starts = starts.filter(pl.col("start_ns").is_not_null()).sort("start_ns", "row")
    order = located.with_row_index("at").filter(pl.col("track").is_not_null() & pl.col("ts_ns").is_not_null())
    current = order.sort("ts_ns").join_asof(
        starts, left_on="ts_ns", right_on="start_ns", by="track", strategy="backward", check_sortedness=False
    )
    current = current.select("at", "ts_ns", "row").filter(pl.col("row").is_not_null())
    ends, parents = tree["end_ns"], tree["parent_pos"]
    found: list[pl.DataFrame] = []
    while not current.is_empty():
        rows = current["row"]
        current = current.with_columns(end=ends.gather(rows), up=parents.gather(rows))
        holds = pl.col("end") >= pl.col("ts_ns")
        found.append(current.filter(holds).select("at", "row"))
        current = current.filter(~holds & (pl.col("up") >= 0)).select(
            "at", "ts_ns", pl.col("up").alias("row")
        )
    result = pl.repeat(None, located.height, dtype=pl.Int64, eager=True)
    if found:
        hits = pl.concat(found)
        result = result.scatter(hits["at"], hits["row"])
    return result
