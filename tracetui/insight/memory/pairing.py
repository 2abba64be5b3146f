"""Each allocation paired with its free: the same device, address and size, next in time.

The caching allocator hands an address out again once it is freed, so the events of one
(device, address, size) in time order alternate allocation, free, allocation, … . One window
shift over that group, on the events in time order, pairs them (no sort of the groups, no
loop): an allocation's free is the next event of its group when that is a free, and that free's
allocation is then known too. A free with no allocation before it freed memory allocated before
the trace; an allocation with no free after it is still alive at the end.
"""

from __future__ import annotations

import polars as pl

PAIR_SCHEMA = {"id": pl.UInt32, "pair_id": pl.UInt32, "pair_order": pl.UInt32, "pair_ns": pl.Int64}
_GROUP = ("device_type", "device_id", "addr", "size")


def pair_events(events: pl.DataFrame) -> pl.DataFrame:
    """``(id, pair_id, pair_order, pair_ns)`` for every paired event of ``events`` (``id``,
    ``device_type``, ``device_id``, ``addr``, ``bytes`` signed, ``kind`` alloc/free, ``order``
    in time, ``ts_ns``): an allocation's free, a free's allocation."""
    rows = (
        events.filter(pl.col("kind").is_in(["alloc", "free"]) & pl.col("addr").is_not_null())
        .select(
            "id",
            pl.col("device_type", "device_id").fill_null(-2),
            "addr",
            pl.col("bytes").abs().alias("size"),
            "kind",
            "order",
            "ts_ns",
        )
        .sort("order")
    )
    after = pl.struct("kind", "id", "order", "ts_ns").shift(-1).over(_GROUP).alias("after")
    forward = (
        rows.with_columns(after)
        .filter((pl.col("kind") == "alloc") & (pl.col("after").struct.field("kind") == "free"))
        .select(
            "id",
            "order",
            "ts_ns",
            pl.col("after").struct.field("id").alias("pair_id"),
            pl.col("after").struct.field("order").alias("pair_order"),
            pl.col("after").struct.field("ts_ns").alias("pair_ns"),
        )
    )
    backward = forward.select(
        pl.col("pair_id").alias("id"),
        pl.col("id").alias("pair_id"),
        pl.col("order").alias("pair_order"),
        pl.col("ts_ns").alias("pair_ns"),
    )
    return pl.concat([forward.drop("order", "ts_ns"), backward]).cast(PAIR_SCHEMA)  # type: ignore[arg-type]
