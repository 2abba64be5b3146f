"""Vectorised cleaning of trace text columns (see :mod:`tracetui.safetext`)."""

from __future__ import annotations

import polars as pl

from tracetui.safetext import REPLACEMENT, UNSAFE_CLASS


def clean_expr(column: str) -> pl.Expr:
    """A polars expression cleaning one string column."""
    return pl.col(column).str.replace_all(UNSAFE_CLASS, REPLACEMENT)


def clean_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Clean every string column of ``frame``."""
    names = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return frame.with_columns(clean_expr(name) for name in names) if names else frame


def clean_series(series: pl.Series) -> pl.Series:
    """Clean a string series (no copy when nothing needs replacing)."""
    if series.str.contains(UNSAFE_CLASS).any():
        return series.str.replace_all(UNSAFE_CLASS, REPLACEMENT)
    return series
