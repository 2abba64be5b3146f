"""Nesting: the C stack pass and the polars pointer-doubling path build the same tree."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
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
@settings(max_examples=examples(300), deadline=None)
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


def cpu_rows(rows: list[tuple[int, int, int, int]], ids: list[int] | None = None) -> pl.DataFrame:
    """The input of :func:`nesting.preorder`: (track, start, duration, rank) per row."""
    return pl.DataFrame(
        {
            "id": pl.Series(range(len(rows)) if ids is None else ids, dtype=pl.UInt32),
            "track": pl.Series([r[0] for r in rows], dtype=pl.Int32),
            "start_ns": pl.Series([r[1] for r in rows], dtype=pl.Int64),
            "end_ns": pl.Series([r[1] + r[2] for r in rows], dtype=pl.Int64),
            "rank": pl.Series([r[3] for r in rows], dtype=pl.Int8),
        }
    )


def five_key_sort(cpu: pl.DataFrame) -> pl.DataFrame:
    return cpu.sort(nesting.ORDER, descending=nesting.ORDER_DESCENDING)


# small ranges: many equal starts, equal ends and equal ranks; negative timestamps
tied = st.lists(
    st.tuples(st.integers(0, 3), st.integers(-5, 5), st.integers(0, 4), st.integers(0, 4)), max_size=60
)


@settings(max_examples=examples(300), deadline=None)
@given(tied)
def test_packed_key_sort_is_the_five_key_sort(rows: list[tuple[int, int, int, int]]) -> None:
    cpu = cpu_rows(rows)
    if rows:
        assert nesting._packed_keys(cpu) is not None  # the packed path ran
    assert nesting.preorder(cpu).equals(five_key_sort(cpu))


@given(tied, st.randoms())
def test_rows_out_of_id_order_take_the_five_key_sort(rows: list[tuple[int, int, int, int]], rnd) -> None:  # type: ignore[no-untyped-def]
    ids = list(range(len(rows)))
    rnd.shuffle(ids)
    cpu = cpu_rows(rows, ids)
    if ids != sorted(ids):
        assert nesting._packed_keys(cpu) is None
    assert nesting.preorder(cpu).equals(five_key_sort(cpu))


@pytest.mark.parametrize(
    "rows",
    [
        [(0, -(2**62), 5, 0), (0, 2**62, 5, 1), (0, 0, 0, 2)],  # starts span more than 62 bits
        [(0, 0, 2**61, 0), (0, 0, 0, 1), (1, 3, 0, 0)],  # ends (with the rank's bits) too
        [(2**30, 2**40, 1, 0), (0, 0, 1, 0)],  # track and start together
        [(0, 4_000_000_000_000_000_000, 4_000_000_000_000_000_000, 0), (0, -(4 * 10**18), 0, 4)],
    ],
)
def test_values_too_wide_to_pack_take_the_five_key_sort(rows: list[tuple[int, int, int, int]]) -> None:
    cpu = cpu_rows(rows)
    assert nesting._packed_keys(cpu) is None
    assert nesting.preorder(cpu).equals(five_key_sort(cpu))


def test_packed_keys_at_the_widest_that_fits() -> None:
    top = 2**61 - 1  # starts span 61 bits (with 1 of track: 62), ends 59 (with 3 of rank: 62)
    rows = [(1, 0, top, 4), (1, top, 0, 0), (0, top, 0, 3), (1, 0, top - 2**59 + 1, 2), (1, 0, top, 1)]
    cpu = cpu_rows(rows)
    assert nesting._packed_keys(cpu) is not None
    assert nesting.preorder(cpu).equals(five_key_sort(cpu))


def test_nulls_take_the_five_key_sort() -> None:
    cpu = cpu_rows([(0, 0, 5, 0), (0, 1, 1, 0)]).with_columns(pl.lit(None, pl.Int32).alias("track"))
    assert nesting._packed_keys(cpu) is None
    assert nesting.preorder(cpu).equals(five_key_sort(cpu))
