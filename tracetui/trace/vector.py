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


def _live(mask: pl.Series) -> pl.Series:
    """Positions where ``mask`` holds: the rows a doubling round still has to move."""
    return mask.arg_true().cast(pl.Int64)


def prev_at_least_self(values: pl.Series, first: pl.Series) -> pl.Series:
    """For each row i, the largest j in ``[first[i], i)`` with ``values[j] >= values[i]``, else -1.

    "All nearest larger values" by pointer jumping: a row whose candidate is too small
    adopts the candidate's own candidate. Rows strictly between a row and its candidate
    are all smaller than the row, so the answer is never skipped. ``first`` is the
    first row of the row's group (its track); candidates never leave the group. Each round
    works only on the rows still pending.
    """
    n = len(values)
    v = values.cast(pl.Int64)
    cand = pl.int_range(-1, n - 1, dtype=pl.Int64, eager=True)
    cand = cand.zip_with(cand >= first.cast(pl.Int64), pl.repeat(-1, n, dtype=pl.Int64, eager=True))
    live = _live((cand >= 0) & (v.gather(cand.clip(0)) < v))
    for _ in _rounds():
        if live.is_empty():
            return cand
        step = cand.gather(cand.gather(live))
        cand = cand.scatter(live, step)
        keep = (step >= 0) & (v.gather(step.clip(0)) < v.gather(live))
        live = live.filter(keep)
    raise TreeError("nearest-larger search did not converge")


def nearest_marked_ancestor(parent: pl.Series, marked: pl.Series) -> pl.Series:
    """For each row, the position of its nearest proper ancestor with ``marked`` true, or -1.

    Pointer jumping: every pointer skips over unmarked ancestors, doubling its reach
    each round (invariant: rows strictly between i and ``jump[i]`` are unmarked). Each round
    works only on the rows still pending.
    """
    jump = parent.cast(pl.Int64)
    marked = marked.fill_null(False)
    live = _live((jump >= 0) & ~marked.gather(jump.clip(0)))
    for _ in _rounds():
        if live.is_empty():
            return jump
        step = jump.gather(jump.gather(live))
        jump = jump.scatter(live, step)
        live = live.filter((step >= 0) & ~marked.gather(step.clip(0)))
    raise TreeError("ancestor search did not converge: parent pointers have a cycle")


def depths(parent: pl.Series) -> pl.Series:
    """Number of ancestors of each row (list ranking by pointer doubling; each round reads the
    previous round's pointers and distances, and works only on rows whose pointer is live)."""
    jump = parent.cast(pl.Int64)
    dist = (jump >= 0).cast(pl.Int64)
    live = _live(jump >= 0)
    for _ in _rounds():
        if live.is_empty():
            return dist
        target = jump.gather(live)
        step, add = jump.gather(target), dist.gather(target)
        dist = dist.scatter(live, dist.gather(live) + add)
        jump = jump.scatter(live, step)
        live = live.filter(step >= 0)
    raise TreeError("depth search did not converge: parent pointers have a cycle")
