"""Nesting: the C stack pass and the polars pointer-doubling path build the same tree."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracetui.trace import native, nesting

FIXTURES = Path(__file__).parent.parent / "fixtures"

needs_native = pytest.mark.skipif(not native.AVAILABLE, reason="the C extension is not built")


def both_paths(
    events: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> tuple[tuple[pl.DataFrame, pl.DataFrame], tuple[pl.DataFrame, pl.DataFrame]]:
    fast = nesting.nest(events)
    with monkeypatch.context() as patch:
        patch.setattr(native, "nest", lambda *_: None)
        slow = nesting.nest(events)
    return fast, slow


def assert_same(fast: tuple[pl.DataFrame, pl.DataFrame], slow: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    assert fast[0].equals(slow[0])
    assert fast[1].sort("event_id", "other_id").equals(slow[1].sort("event_id", "other_id"))


@needs_native
@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json*")), ids=lambda p: p.name)
def test_real_traces_nest_alike_on_both_paths(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracetui.trace import loader

    seen: dict[str, pl.DataFrame] = {}

    def spy(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        seen["events"] = events
        return nesting.nest(events)

    with monkeypatch.context() as patch:
        patch.setattr(loader, "nest", spy)
        loader.load_now(path)
    fast, slow = both_paths(seen["events"], monkeypatch)
    assert len(fast[0])
    assert_same(fast, slow)


CATS = st.sampled_from(["cpu_op", "python_function"])
intervals = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 40), st.integers(0, 30), CATS), max_size=80)


@needs_native
@settings(max_examples=300, deadline=None)
@given(intervals)
def test_generated_intervals_nest_alike_on_both_paths(rows: list[tuple[int, int, int, str]]) -> None:
    """Ties, partial overlaps, zero durations and several tracks: the same parents, depths,
    subtree ends and overlap anomalies either way."""
    events = pl.DataFrame(
        {
            "id": pl.Series(range(len(rows)), dtype=pl.UInt32),
            "cat": [r[3] for r in rows],
            "track": pl.Series([r[0] for r in rows], dtype=pl.Int32),
            "start_ns": pl.Series([r[1] for r in rows], dtype=pl.Int64),
            "end_ns": pl.Series([r[1] + r[2] for r in rows], dtype=pl.Int64),
        },
        schema_overrides={"cat": pl.String},
    )
    with pytest.MonkeyPatch.context() as patch:
        fast, slow = both_paths(events, patch)
    assert_same(fast, slow)


@needs_native
def test_nulls_take_the_polars_path() -> None:
    assert native.nest(pl.Series([0, 0], dtype=pl.Int64), pl.Series([5, None], dtype=pl.Int64)) is None


@given(st.lists(st.tuples(st.integers(-2, 12), st.integers(-1000, 1000)), max_size=60), st.integers(0, 10))
def test_sum_at_adds_values_at_positions_on_both_paths(pairs: list[tuple[int, int]], size: int) -> None:
    index = pl.Series([i for i, _ in pairs], dtype=pl.Int64)
    values = pl.Series([v for _, v in pairs], dtype=pl.Int64)
    expected = [sum(v for i, v in pairs if i == at) for at in range(size)]
    assert native.sum_at(index, values, size).to_list() == expected
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "_scan", None)
        assert native.sum_at(index, values, size).to_list() == expected
