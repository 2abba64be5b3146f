"""Vectorised tree primitives over polars Series (no Python loops over events).

Trees are stored as parent *positions* (Int64, -1 for a root) over rows sorted in
depth-first preorder. The loops below run doubling rounds — O(log n) passes of
whole-column operations — never over events.
"""

from __future__ import annotations

import polars as pl

MAX_ROUNDS = 80  # doubling rounds needed are log2(n) < 64; more means a malformed tree


class TreeError(RuntimeError):
    """Parent pointers that do not form a forest (a bug, not bad input)."""


def _rounds() -> range:
    return range(MAX_ROUNDS)


def prev_at_least_self(values: pl.Series, first: pl.Series) -> pl.Series:
    """For each row i, the largest j in ``[first[i], i)`` with ``values[j] >= values[i]``, else -1.

    "All nearest larger values" by pointer jumping: a row whose candidate is too small
    adopts the candidate's own candidate. Rows strictly between a row and its candidate
    are all smaller than the row, so the answer is never skipped. ``first`` is the
    first row of the row's group (its track); candidates never leave the group.
    """
    n = len(values)
    frame = pl.DataFrame({"v": values.cast(pl.Int64), "first": first.cast(pl.Int64)})
    frame = frame.with_columns(cand=pl.int_range(-1, n - 1, dtype=pl.Int64))
    frame = frame.with_columns(cand=pl.when(pl.col("cand") >= pl.col("first")).then("cand").otherwise(-1))
    safe = pl.col("cand").clip(0)
    pending = (pl.col("cand") >= 0) & (pl.col("v").gather(safe) < pl.col("v"))
    for _ in _rounds():
        frame = frame.with_columns(pending=pending)
        if not frame["pending"].any():
            return frame["cand"]
        frame = frame.with_columns(
            cand=pl.when("pending").then(pl.col("cand").gather(safe)).otherwise("cand")
        )
    raise TreeError("nearest-larger search did not converge")


def nearest_marked_ancestor(parent: pl.Series, marked: pl.Series) -> pl.Series:
    """For each row, the position of its nearest proper ancestor with ``marked`` true, or -1.

    Pointer jumping: every pointer skips over unmarked ancestors, doubling its reach
    each round (invariant: rows strictly between i and ``jump[i]`` are unmarked).
    """
    jump = parent.cast(pl.Int64)
    marked = marked.fill_null(False)
    for _ in _rounds():
        safe = jump.clip(0)
        pending = (jump >= 0) & ~marked.gather(safe)
        if not pending.any():
            return jump
        jump = jump.gather(safe).zip_with(pending, jump)
    raise TreeError("ancestor search did not converge: parent pointers have a cycle")


def depths(parent: pl.Series) -> pl.Series:
    """Number of ancestors of each row (list ranking by pointer doubling)."""
    jump = parent.cast(pl.Int64)
    dist = (jump >= 0).cast(pl.Int64)
    for _ in _rounds():
        live = jump >= 0
        if not live.any():
            return dist
        safe = jump.clip(0)
        dist = dist + dist.gather(safe) * live.cast(pl.Int64)
        jump = jump.gather(safe).zip_with(live, jump)
    raise TreeError("depth search did not converge: parent pointers have a cycle")
