"""Where an instant happened: the innermost CPU event on its thread whose span holds it, and from
that event the op (innermost ``cpu_op``), the annotation and the python frame (the innermost
frame of a source line, with ``with_stack``).

One ``join_asof`` finds, per instant, the last event of its thread (in preorder) that started at
or before it; the events holding the instant are that event's ancestors-or-self that have not
ended yet, so the innermost is found by climbing parent links, all instants at once, while the
candidate ended before its instant (one round per level of the deepest climb; each round looks
up only the instants still climbing). The python frame is found the same way, from the event
found. Only the instants' own rows are gathered: nothing the size of the events table is made
beyond the start times the ``join_asof`` needs (a 1 GB trace with python stacks has ~3M CPU
events; its ~440k memory instants each climb a few levels).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.trace.align import rows_of
from tracetui.trace.nesting import rows_in_preorder
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
_COLUMNS = ("id", "cat", "name", "track", "pos", "start_ns", "end_ns", "parent", "op_id", "annotation_id")


def enclosing(trace: Trace, points: pl.DataFrame) -> pl.DataFrame:
    """For ``points`` (``id``, ``pid``, ``tid``, ``ts_ns``), one row each, in their order: the
    CPU ``track`` of their thread and the ids of the innermost enclosing event, op, annotation
    and python frame (null when nothing holds the instant, e.g. on an allocator thread with no
    events). Bounds are inclusive: an instant at an event's start or end is inside it."""
    tracks = trace.tracks.filter(pl.col("kind") == "cpu").select("pid", "tid", "track")
    located = points.select("id", "pid", "tid", "ts_ns").join(
        tracks, on=["pid", "tid"], how="left", maintain_order="left"
    )
    events = trace.columns_of("events", *_COLUMNS)
    row = _innermost(located, events)  # the events row of each point's innermost event
    held = events.select(pl.col("id", "pos", "cat", "op_id", "annotation_id").gather(row))  # null row: nulls
    op_here = pl.when(pl.col("cat") == "cpu_op").then(pl.col("id")).otherwise(pl.col("op_id"))
    picked = held.select("id", "pos", op_here.alias("op_here"), "annotation_id")
    frame = _source_frames(events, row)
    result = pl.DataFrame(
        {
            "id": located["id"],
            "track": located["track"],
            "enclosing_id": picked["id"],
            "enclosing_pos": picked["pos"],
            "op_id": picked["op_here"],
            "annotation_id": picked["annotation_id"],
            "frame_id": frame,
        }
    )
    return result.select(pl.col(name).cast(dtype) for name, dtype in ENCLOSING_SCHEMA.items())


def _innermost(located: pl.DataFrame, events: pl.DataFrame) -> pl.Series:
    """Row in ``events`` of the innermost CPU event holding each located point (null: none)."""
    starts = _in_preorder(events)  # sorted by start within each track: what the join needs
    order = located.with_row_index("at").filter(pl.col("track").is_not_null() & pl.col("ts_ns").is_not_null())
    current = order.sort("ts_ns").join_asof(  # equal starts: the last row, the later in preorder (inner)
        starts, left_on="ts_ns", right_on="start_ns", by="track", strategy="backward", check_sortedness=False
    )
    del starts
    current = current.select("at", "ts_ns", "row").filter(pl.col("row").is_not_null())
    ends, parents = events["end_ns"], events["parent"]
    found: list[pl.DataFrame] = []
    while not current.is_empty():
        rows = current["row"]
        current = current.with_columns(end=ends.gather(rows), up=parents.gather(rows))
        holds = pl.col("end") >= pl.col("ts_ns")
        found.append(current.filter(holds).select("at", "row"))
        current = current.filter(~holds & pl.col("up").is_not_null())
        current = current.select("at", "ts_ns", rows_of(events, current["up"]).alias("row"))
    return _scattered(located.height, found)


def _in_preorder(events: pl.DataFrame) -> pl.DataFrame:
    """``track``, ``start_ns`` and the events ``row`` of the events in the CPU trees, in preorder:
    by track, then start (no sort of the events)."""
    row = rows_in_preorder(events["pos"])
    return events.select("track", "start_ns")[row].with_columns(row.alias("row"))


def _source_frames(events: pl.DataFrame, row: pl.Series) -> pl.Series:
    """The id of the nearest python source frame holding each events row of ``row`` (itself, or
    an ancestor; null: none, or a null row)."""
    source = (pl.col("cat") == "python_function") & matches("name", SOURCE_FRAME)
    marked = events.select(source.fill_null(False)).to_series()
    if not marked.any():
        return pl.repeat(None, len(row), dtype=pl.UInt32, eager=True)
    ids, parents = events["id"], events["parent"]
    current = pl.DataFrame({"at": pl.int_range(len(row), dtype=pl.UInt32, eager=True), "row": row})
    current = current.filter(pl.col("row").is_not_null())
    found: list[pl.DataFrame] = []
    while not current.is_empty():
        rows = current["row"]
        current = current.with_columns(
            here=marked.gather(rows), up=parents.gather(rows), frame=ids.gather(rows)
        )
        found.append(current.filter(pl.col("here")).select("at", "frame"))
        current = current.filter(~pl.col("here") & pl.col("up").is_not_null())
        current = current.select("at", rows_of(events, current["up"]).alias("row"))
    return _scattered(len(row), found).cast(pl.UInt32)


def _scattered(size: int, found: list[pl.DataFrame]) -> pl.Series:
    """``size`` nulls, with the found frames' values (second column) placed at their ``at`` rows."""
    result = pl.repeat(None, size, dtype=pl.Int64, eager=True)
    if found:
        hits = pl.concat(found)
        result = result.scatter(hits["at"], hits.to_series(1).cast(pl.Int64))
    return result
