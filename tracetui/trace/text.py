"""Vectorised cleaning of trace text columns (see :mod:`tracetui.safetext`)."""

from __future__ import annotations

import polars as pl

from tracetui.safetext import REPLACEMENT, UNSAFE_CLASS


def clean_series(series: pl.Series) -> pl.Series:
    """Clean a string series (no copy when nothing needs replacing)."""
    if series.str.contains(UNSAFE_CLASS).any():
        return series.str.replace_all(UNSAFE_CLASS, REPLACEMENT)
    return series


def raw_json_series(name: str, values: list[bytes]) -> pl.Series:
    """Raw JSON values as text (``b""`` = absent → null). Invalid UTF-8 (a damaged file) becomes
    U+FFFD, and control characters are cleaned, as everywhere else."""
    binary = pl.Series(name, values, dtype=pl.Binary)
    try:
        text = binary.cast(pl.String)
    except pl.exceptions.ComputeError:  # invalid UTF-8 somewhere: decode leniently
        text = pl.Series(name, [v.decode("utf-8", "replace") for v in values], dtype=pl.String)
    return clean_series(text.replace("", None))
