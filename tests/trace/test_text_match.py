"""Text patterns over a column, tested once per distinct value (``trace.text``): the same rows as
testing every row, on plain and on dictionary-encoded text."""

from __future__ import annotations

import random
import re

import polars as pl
import pytest

from tracetui.trace.text import matches, starts_with

WORDS = [f"w{i}" for i in range(3000)] + [f"Torch-Compiled Region: {i}/0" for i in range(40)] + [None]


@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
def test_a_pattern_picks_the_rows_each_row_would(dtype: pl.DataType) -> None:
    """Found in review: the distinct values were taken twice in hash order, once to test and once
    to pick, so on plain text the two orders differed and the wrong rows came out."""
    rows = random.Random(7).choices(WORDS, k=100_000)
    frame = pl.DataFrame({"name": pl.Series(rows, dtype=pl.String).cast(dtype)})
    pattern = r"^w1[0-9]$"
    for _ in range(3):  # each evaluation may hash in another order
        picked = frame.filter(matches("name", pattern))["name"].cast(pl.String).to_list()
        assert picked == [r for r in rows if r is not None and re.search(pattern, r)]
        prefixed = (
            frame.filter(starts_with("name", "Torch-Compiled Region"))["name"].cast(pl.String).to_list()
        )
        assert prefixed == [r for r in rows if r is not None and r.startswith("Torch-Compiled Region")]
        flags = frame.select(matches("name", pattern).fill_null(False))["name"].to_list()
        assert flags == [r is not None and re.search(pattern, r) is not None for r in rows]
