"""Nest CPU-side events into per-thread trees by time containment.

Per (pid, tid) track, events are sorted by (start, end descending, category rank, file
order). The parent of an event is the latest-starting earlier event on its track that
contains it; that order is then a depth-first preorder of the tree, so every subtree
is a contiguous range of positions and inclusive sums are prefix-sum differences.

A partial overlap (an event starting inside another and ending after it, e.g. a python
frame straddling a ``record_function`` span) cannot nest: the event that does not fit
becomes a sibling, and the pair is recorded as an anomaly with both event ids.

The structure comes from one stack pass in C (:func:`tracetui.trace.native.nest`, ~0.06 s
for 174k events) or, without the extension, from whole-column pointer doubling in polars
(~0.17 s); tests check that both build the same tree.
"""

from __future__ import annotations

import polars as pl

from tracetui.trace import native
from tracetui.trace.align import lookup
from tracetui.trace.categories import CALL_RANK, GPU_LANE, LAUNCH_CALLS, NEST_RANK, OTHER_RANK
from tracetui.trace.vector import depths, nearest_marked_ancestor, prev_at_least_self


def rank_expr() -> pl.Expr:
    """Tie-break rank of identical intervals: the outer kind first."""
    by_kind = pl.col("cat").replace_strict(NEST_RANK, default=OTHER_RANK, return_dtype=pl.Int8)
    return pl.when(pl.col("cat").is_in(LAUNCH_CALLS)).then(pl.lit(CALL_RANK, pl.Int8)).otherwise(by_kind)


def nest(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Tree columns for the CPU-side events, and the partial-overlap anomalies.

    ``events`` needs id, cat, track (of its (pid, tid)), start_ns, end_ns. Returns a frame
    sorted by ``pos`` with columns id, track, pos, end_pos (one past the subtree), parent
    (event id), depth, parent_pos, start_ns, end_ns.
    """
    cpu = preorder(
        events.lazy()
        .select("id", "track", "start_ns", "end_ns", rank_expr().alias("rank"), pl.col("cat").is_in(GPU_LANE))
        .filter(~pl.col("cat") & pl.col("start_ns").is_not_null())
        .drop("cat")
        .collect()
    )
    found = native.nest(cpu["track"], cpu["end_ns"])
    if found is None:
        cpu = _structure(cpu.with_columns(pos=pl.int_range(len(cpu), dtype=pl.Int64)))
        # Sibling ends strictly increase (a later sibling ending no later would be contained), so an
        # event overlaps an earlier sibling exactly when it starts before the previous one ends.
        overlaps = cpu.filter(pl.col("prev_sibling_end") > pl.col("start_ns")).select("id", "prev_sibling")
    else:
        cpu, overlaps = _structure_of(cpu, *found)
    anomalies = overlaps.select(
        pl.lit("partial_overlap").alias("kind"),
        pl.col("id").alias("event_id"),
        pl.col("prev_sibling").alias("other_id"),
    )
    tree = cpu.select(
        "id",
        "track",
        pl.col("pos", "end_pos").cast(pl.Int32),
        "parent",
        "depth",
        "parent_pos",
        "start_ns",
        "end_ns",
    )
    return tree, anomalies


ORDER = ["track", "start_ns", "end_ns", "rank", "id"]
ORDER_DESCENDING = [False, False, True, False, False]
KEY_BITS = 62  # packed keys are non-negative Int64 (and 1 << KEY_BITS fits one)
RANK_BITS = max(CALL_RANK, OTHER_RANK, *NEST_RANK.values()).bit_length()


def preorder(cpu: pl.DataFrame) -> pl.DataFrame:
    """``cpu`` (id, track, start_ns, end_ns, rank; no null start) sorted by (track, start, end
    descending, rank, id): the preorder of the trees.

    A sort on five columns row-encodes them all; when the values fit, (track, start - min) is packed
    into one Int64 key and (max end - end, rank) into a second, and a stable sort on the two keys
    leaves the remaining ties in ``id`` order (~4x faster, and lighter). Otherwise, or if the rows
    are not in id order, the five columns are sorted as they are.
    """
    keys = _packed_keys(cpu)
    if keys is None:
        return cpu.sort(ORDER, descending=ORDER_DESCENDING)
    return cpu.sort(keys, maintain_order=True)  # the keys are made for the sort, not kept


def _packed_keys(cpu: pl.DataFrame) -> list[pl.Expr] | None:
    """The two packed sort keys of :func:`preorder`, or None where they would not fit (or the rows
    are not in id order, or a value is null)."""
    if cpu.is_empty() or not cpu["id"].is_sorted() or cpu["id"].null_count():
        return None
    bounds = cpu.select(
        pl.col("track").min().alias("track_min"),
        pl.col("track").max().alias("track_max"),
        pl.col("start_ns").min().alias("start_min"),
        pl.col("start_ns").max().alias("start_max"),
        pl.col("end_ns").min().alias("end_min"),
        pl.col("end_ns").max().alias("end_max"),
        pl.col("rank").min().alias("rank_min"),
        pl.col("rank").max().alias("rank_max"),
        pl.sum_horizontal(pl.col("track", "end_ns", "rank").null_count()).alias("nulls"),
    ).row(0, named=True)
    if bounds["nulls"] or bounds["track_min"] < 0 or bounds["rank_min"] < 0:
        return None
    start_bits = (bounds["start_max"] - bounds["start_min"]).bit_length()
    end_bits = (bounds["end_max"] - bounds["end_min"]).bit_length()
    if bounds["track_max"].bit_length() + start_bits > KEY_BITS or end_bits + RANK_BITS > KEY_BITS:
        return None
    if bounds["rank_max"] >= 1 << RANK_BITS:
        return None
    start, end_max = bounds["start_min"], bounds["end_max"]
    return [
        (pl.col("track").cast(pl.Int64) * (1 << start_bits) + (pl.col("start_ns") - start)).alias("_at"),
        ((end_max - pl.col("end_ns")) * (1 << RANK_BITS) + pl.col("rank").cast(pl.Int64)).alias("_end"),
    ]


PROFILER_OVERLAP = "profiler_overlap"
# torch's profiler's own python frames: record_function's __enter__/__exit__, profiler.step()
PROFILER_FRAME = (
    r"(?:^|/)torch/(?:autograd/profiler|profiler/profiler)\.py\(\d+\): (?:__enter__|__exit__|step)$"
)


def classify_overlaps(overlaps: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """``overlaps`` with the known profiler artifacts as ``profiler_overlap``: with ``with_stack``,
    ``record_function``'s ``__enter__``/``__exit__`` frames (and ``profiler.step()``) straddle the
    annotation they open or close (the span starts inside ``__enter__``, ends inside ``__exit__``).
    Benign, and kept out of the headline count of anomalies; every other overlap stays
    ``partial_overlap``."""
    if overlaps.is_empty():
        return overlaps
    frame = (pl.col("cat") == "python_function") & pl.col("name").cast(pl.String).str.contains(PROFILER_FRAME)
    span = pl.col("cat") == "user_annotation"
    # the rows of the overlapping events only (a binary search each), never the whole table
    one, other = (
        lookup(events, overlaps[side], "cat", "name").select(frame.alias("frame"), span.alias("span"))
        for side in ("event_id", "other_id")
    )
    benign = (one["frame"] & other["span"]) | (one["span"] & other["frame"])
    return overlaps.select(
        pl.when(pl.lit(benign.fill_null(False)))
        .then(pl.lit(PROFILER_OVERLAP))
        .otherwise(pl.col("kind"))
        .alias("kind"),
        "event_id",
        "other_id",
    )


def _structure_of(
    cpu: pl.DataFrame, parent_pos: pl.Series, depth: pl.Series, end_pos: pl.Series, previous: pl.Series
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The tree columns from the native stack pass's positions (-1: none), and the events that
    start before their previous sibling ends (``id``, ``prev_sibling``), as :func:`nest` reads them."""
    earlier_end = cpu["end_ns"].gather(previous.clip(0))
    overlapping = ((previous >= 0) & (earlier_end > cpu["start_ns"])).arg_true()
    del earlier_end
    ids = cpu["id"]
    overlaps = pl.DataFrame(
        {"id": ids.gather(overlapping), "prev_sibling": ids.gather(previous.gather(overlapping))}
    )
    tree = cpu.with_columns(
        pos=pl.int_range(len(cpu), dtype=pl.Int32),
        parent_pos=parent_pos,
        depth=depth.cast(pl.Int32),
        end_pos=end_pos.cast(pl.Int32),
        parent=pl.when(parent_pos >= 0).then(ids.gather(parent_pos.clip(0))),
    )
    return tree, overlaps


def _structure(cpu: pl.DataFrame) -> pl.DataFrame:
    """The tree columns by whole-column pointer doubling (no extension, or nulls): parent_pos,
    depth, parent, end_pos, prev_sibling, prev_sibling_end."""
    cpu = cpu.with_columns(first=pl.col("pos").min().over("track"), last=pl.col("pos").max().over("track"))
    parent_pos = prev_at_least_self(cpu["end_ns"], cpu["first"]).alias("parent_pos")
    cpu = cpu.with_columns(parent_pos, depth=depths(parent_pos).cast(pl.Int32))
    cpu = cpu.with_columns(
        parent=pl.when(pl.col("parent_pos") >= 0).then(pl.col("id").gather(pl.col("parent_pos").clip(0)))
    )
    cpu = _with_siblings(cpu)
    # A subtree ends where the next sibling of its nearest ancestor-or-self with one begins.
    has_next = cpu["next_sibling"].is_not_null()
    holder = cpu["pos"].zip_with(has_next, nearest_marked_ancestor(cpu["parent_pos"], has_next))
    return cpu.with_columns(holder=holder).with_columns(
        end_pos=pl.when(pl.col("holder") >= 0)
        .then(pl.col("next_sibling").gather(pl.col("holder").clip(0)))
        .otherwise(pl.col("last") + 1)
    )


def _with_siblings(cpu: pl.DataFrame) -> pl.DataFrame:
    """Add next_sibling (position), prev_sibling (id) and prev_sibling_end, keeping ``pos`` order."""
    key = ("track", "parent_pos")
    by_parent = cpu.select("pos", "id", "end_ns", *key).sort(*key, "pos")
    same_prev = pl.all_horizontal(pl.col(k) == pl.col(k).shift(1) for k in key)
    same_next = pl.all_horizontal(pl.col(k) == pl.col(k).shift(-1) for k in key)
    siblings = by_parent.select(
        "pos",
        next_sibling=pl.when(same_next).then(pl.col("pos").shift(-1)),
        prev_sibling=pl.when(same_prev).then(pl.col("id").shift(1)),
        prev_sibling_end=pl.when(same_prev).then(pl.col("end_ns").shift(1)),
    ).sort("pos")
    return cpu.with_columns(siblings.drop("pos"))


def rows_in_preorder(pos: pl.Series) -> pl.Series:
    """The frame row at each tree position, from the frame's ``pos`` column (null: not in a tree).
    Positions are 0..n-1 over the tree rows, the tracks one after another (:func:`nest`), so
    placing each row at its position orders them by track, then start: one scatter, no sort."""
    placed = pos.is_not_null()
    return pl.zeros(int(placed.sum()), pl.UInt32, eager=True).scatter(pos.filter(placed), placed.arg_true())


def ancestor_ids(tree: pl.DataFrame, marked: pl.Expr, include_self: bool = True) -> pl.Series:
    """Event id of each row's nearest ancestor (or self) for which ``marked`` holds."""
    mark = tree.select(marked.fill_null(False)).to_series()
    pos = native.marked_ancestor(tree["parent_pos"], mark)
    if pos is None:
        pos = nearest_marked_ancestor(tree["parent_pos"], mark)
    if include_self:
        pos = tree["pos"].zip_with(mark, pos)
    found = pl.lit(pos)
    return tree.select(pl.when(found >= 0).then(pl.col("id").gather(found.clip(0)))).to_series()
