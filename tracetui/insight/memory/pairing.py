"""Each allocation paired with its free: the same device, address and size, next in time.

The caching allocator hands an address out again once it is freed, so the events of one
(device, address, size) in time order alternate allocation, free, allocation, … . One sort and
one shift pair them: an allocation's free is the next event of its group when that is a free.
A free with no allocation before it freed memory allocated before the trace; an allocation with
no free after it is still alive at the end.
"""

from __future__ import annotations

import polars as pl

PAIR_SCHEMA = {"id": pl.UInt32, "pair_id": pl.UInt32, "pair_order": pl.UInt32, "pair_ns": pl.Int64}
_GROUP = ("device", "addr", "size")


def pair_events(events: pl.DataFrame) -> pl.DataFrame:
    """``(id, pair_id, pair_order, pair_ns)`` for every paired event of ``events`` (``id``,
    ``device``, ``addr``, ``bytes`` signed, ``kind`` alloc/free, ``order`` in time, ``ts_ns``):
    an allocation's free, a free's allocation."""
    rows = (
        events.filter(pl.col("kind").is_in(["alloc", "free"]) & pl.col("addr").is_not_null())
        .select("id", "device", "addr", pl.col("bytes").abs().alias("size"), "kind", "order", "ts_ns")
        .sort(*_GROUP, "order")
    )
    same_next = pl.all_horizontal(pl.col(c) == pl.col(c).shift(-1) for c in _GROUP)
    same_prev = pl.all_horizontal(pl.col(c) == pl.col(c).shift(1) for c in _GROUP)
    freed = same_next & (pl.col("kind") == "alloc") & (pl.col("kind").shift(-1) == "free")
    allocated = same_prev & (pl.col("kind") == "free") & (pl.col("kind").shift(1) == "alloc")
    paired = rows.select(
        "id",
        pl.when(freed)
        .then(pl.col("id").shift(-1))
        .when(allocated)
        .then(pl.col("id").shift(1))
        .alias("pair_id"),
        pl.when(freed)
        .then(pl.col("order").shift(-1))
        .when(allocated)
        .then(pl.col("order").shift(1))
        .alias("pair_order"),
        pl.when(freed)
        .then(pl.col("ts_ns").shift(-1))
        .when(allocated)
        .then(pl.col("ts_ns").shift(1))
        .alias("pair_ns"),
    )
    return paired.filter(pl.col("pair_id").is_not_null()).cast(PAIR_SCHEMA)  # type: ignore[arg-type]
