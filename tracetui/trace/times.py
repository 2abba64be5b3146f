"""Exact integer nanoseconds from the µs floats a trace writes (one conversion for every table:
complete events, flows and instants compare on the same integers)."""

from __future__ import annotations

import polars as pl

MAX_US = 4e15  # µs; ~127 years after the Unix epoch. Larger values are unusable (null / 0), so
# that start + duration in ns stays inside 64 bits.


def exact_times(ts: str, dur: str) -> list[pl.Expr]:
    """Exact integer ns from µs floats: the integer part and the 3-decimal fraction apart.
    A timestamp that is not finite or beyond :data:`MAX_US` is null; a duration that is not
    :func:`usable_duration` counts 0."""
    whole = pl.col(ts).floor()
    usable = pl.col(ts).is_finite() & (pl.col(ts).abs() < MAX_US)
    # not strict: a query may compute a branch for every row, the unusable ones too (then dropped)
    start = pl.when(usable).then(
        whole.cast(pl.Int64, strict=False) * 1000
        + ((pl.col(ts) - whole) * 1000).round().cast(pl.Int64, strict=False)
    )
    length = pl.when(usable_duration(dur)).then((pl.col(dur) * 1000).round().cast(pl.Int64, strict=False))
    return [start.alias("start_ns"), (start + length.otherwise(0)).alias("end_ns")]


def usable_duration(dur: str) -> pl.Expr:
    """Whether a duration (µs) is one: a number, not negative, below :data:`MAX_US`. Any other
    (missing, NaN, ``-5``, ``-1e300``, ``2**70``) counts 0, and the event is a ``bad_duration``
    anomaly (:mod:`tracetui.trace.loader`): never a silent zero."""
    return pl.col(dur).is_finite() & (pl.col(dur) >= 0) & (pl.col(dur) < MAX_US)


def exact_ns(ts: str) -> pl.Expr:
    """One timestamp column (µs) as exact integer ns, as :func:`exact_times` converts starts."""
    return exact_times(ts, ts)[0]
