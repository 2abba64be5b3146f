"""Trace text columns: raw JSON values as text. Cleaning is :mod:`tracetui.safetext`'s (the one
neutraliser); ``clean_series`` is re-exported here for the modules that import it from here."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from tracetui.safetext import clean_series

__all__ = ["as_text", "clean_series", "matches", "raw_json_series", "starts_with"]


def raw_json_series(name: str, values: list[bytes]) -> pl.Series:
    """Raw JSON values as text (``b""`` = absent → null). Invalid UTF-8 (a damaged file) becomes
    U+FFFD, and control characters are cleaned, as everywhere else."""
    binary = pl.Series(name, values, dtype=pl.Binary)
    try:
        text = binary.cast(pl.String)
    except pl.exceptions.ComputeError:  # invalid UTF-8 somewhere: decode leniently
        text = pl.Series(name, [v.decode("utf-8", "replace") for v in values], dtype=pl.String)
    return clean_series(text.replace("", None))


def as_text(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with its dictionary-encoded text (Categorical, and lists of it) as plain text: the
    events' ``cat``, ``name``, ``pid`` and ``tid`` are Categorical in the model, and so are the
    columns taken from them; what is written for other tools (exports, datasets) has text."""
    coded = pl.col(pl.Categorical).cast(pl.String)
    lists = [n for n, t in frame.schema.items() if isinstance(t, pl.List) and t.inner == pl.Categorical]
    return frame.with_columns(coded, pl.col(lists).cast(pl.List(pl.String)))


def matches(column: str, pattern: str) -> pl.Expr:
    """Whether ``column`` (text, or the events' dictionary-encoded text) matches the regex
    ``pattern``: tested once per distinct value and looked up by code, not cast to text row by row."""
    return _per_value(column, lambda text: text.str.contains(pattern))


def starts_with(column: str, prefix: str) -> pl.Expr:
    """Whether ``column`` starts with ``prefix`` (as written, no pattern), tested as :func:`matches`."""
    return _per_value(column, lambda text: text.str.starts_with(prefix))


def _per_value(column: str, test: Callable[[pl.Expr], pl.Expr]) -> pl.Expr:
    # in order: the values and the test of their text are two evaluations that must line up
    values = pl.col(column).unique(maintain_order=True)
    return pl.col(column).is_in(values.filter(test(values.cast(pl.String))).implode())
