"""The straggler verdict: each threshold tested on both sides, runs where the answer must be "none"
(the bundled healthy run, identical ranks, ranks with random jitter), the runs with a deliberate
straggler, and the summary of 128 ranks (the verdict first, the straggler marked)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from tests.ranks import reference as ref
from tests.ranks import synthetic
from tests.ranks.conftest import GLOO4, SAMPLE_RUNS, analyse_tables, rank_files, set_tables
from tracetui.cli import cli
from tracetui.ranks.straggler import largest_lag, verdict
from tracetui.ranks.thresholds import (
    SIGNIFICANT_SKEW_SHARE,
    STRAGGLER_MIN_WAIT_US,
    STRAGGLER_STEP_SHARE,
)

HEALTHY = SAMPLE_RUNS / "ddp_gloo_2ranks"  # tracetui capture ddp --ranks 2, no --straggler


def _two_ranks(lags: list[tuple[int, float]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Collectives of two ranks: (the rank last, by how many µs) each; and who took part."""
    aligned = pl.DataFrame(
        {
            "key": [str(i) for i in range(len(lags))],
            "name": ["allreduce"] * len(lags),
            "ranks": [2] * len(lags),
            "last_rank": [rank for rank, _ in lags],
            "arrival_skew_us": [lag for _, lag in lags],
            "wait_us": [lag for _, lag in lags],  # the one other rank waited that long
        }
    )
    arrivals = pl.DataFrame(
        {"key": [str(i) for i in range(len(lags)) for _ in (0, 1)], "rank": [0, 1] * len(lags)}
    )
    return aligned, arrivals


def _named(lags: list[tuple[int, float]], step_us: float, n_steps: int = 1) -> int | None:
    lag = largest_lag(*_two_ranks(lags), step_us, n_steps)
    return None if lag is None or lag.misses else lag.rank


def test_the_share_of_the_step_on_both_sides() -> None:
    step = 10_000.0  # the others wait 10 % of it, or just under
    enough = STRAGGLER_STEP_SHARE * step
    assert _named([(1, enough / 2)] * 2, step) == 1
    assert _named([(1, (enough - 1) / 2)] * 2, step) is None
    text = verdict(
        _two_ranks([(1, (enough - 1) / 2)] * 2)[0], largest_lag(*_two_ranks([(1, 499.5)] * 2), step, 1)
    )
    assert text == (
        "no clear straggler: the largest lag is rank 1's, last at 2 of 2 all-reduces; the others wait "
        "999.0 µs per step for it (10% of the 10.00 ms step): under the 10% of the step a straggler costs"
    )


def test_the_least_wait_per_step_on_both_sides() -> None:
    step = 4_000.0  # 0.5 ms is 12.5 % of it: only the absolute threshold decides
    assert _named([(1, STRAGGLER_MIN_WAIT_US)], step) == 1
    assert _named([(1, STRAGGLER_MIN_WAIT_US - 1)], step) is None
    lag = largest_lag(*_two_ranks([(1, STRAGGLER_MIN_WAIT_US - 1)]), step, 1)
    assert lag is not None and lag.misses == ["under the 500.0 µs per step a straggler costs"]
    assert lag.wait_us_per_step == STRAGGLER_MIN_WAIT_US - 1 and lag.share_of_step == pytest.approx(0.12475)


def test_last_at_most_collectives_on_both_sides() -> None:
    step = 10_000.0
    # rank 1 costs the others most (2 ms twice), rank 0 is last as often: not "most" of them
    assert _named([(1, 2000.0), (1, 2000.0), (0, 200.0), (0, 200.0)], step) is None
    assert _named([(1, 2000.0), (1, 2000.0), (1, 2000.0), (0, 200.0)], step) == 1
    lag = largest_lag(*_two_ranks([(1, 2000.0), (1, 2000.0), (0, 200.0), (0, 200.0)]), step, 1)
    assert lag is not None and lag.misses == ["it is not last at most of those"]
    assert (lag.last_count, lag.collectives, lag.share_of_waiting) == (2, 4, pytest.approx(4000 / 4400))


def test_only_significant_collectives_are_counted() -> None:
    """FSDP: the prefetched all-gathers' last arrivals fall either way by microseconds; below 1 % of
    the step a collective does not count (HTA's ``min_normalized_duration``)."""
    step = 10_000.0
    floor = SIGNIFICANT_SKEW_SHARE * step  # 100 µs
    below = [(1, 3000.0)] + [(0, floor - 1)] * 2
    lag = largest_lag(*_two_ranks(below), step, 1)
    assert lag is not None and (lag.last_count, lag.collectives, lag.all_last, lag.all_collectives) == (
        1,
        1,
        1,
        3,
    )
    assert not lag.misses
    assert verdict(_two_ranks(below)[0], lag).startswith(
        "rank 1 arrives last at 1 of 3 all-reduces (1 of the 1 with a skew of 100.0 µs or more, "
        "1% of the step); the other ranks wait 3.00 ms per step for it (30% of the 10.00 ms step)"
    )
    assert _named([(1, 3000.0)] + [(0, floor)] * 2, step) is None  # now they count: last at 1 of 3


def test_nobody_waited() -> None:
    aligned, arrivals = _two_ranks([(0, 0.0), (1, 0.0)])
    assert largest_lag(aligned, arrivals, 10_000.0, 1) is None
    assert verdict(aligned, None) == "no clear straggler: no rank waited for another at the 2 collectives"


def test_the_bundled_healthy_run_names_no_straggler() -> None:
    """``capture ddp --ranks 2`` without ``--straggler`` (two processes on one GPU): rank 1 is last at
    every all-reduce, by 0.08-1.1 ms, 5 % of the step: a lag, not a straggler."""
    analysis = analyse_tables(set_tables(HEALTHY))
    assert analysis.straggler is None
    lag = analysis.largest_lag
    assert lag is not None and (lag.rank, lag.all_last, lag.all_collectives) == (1, 6, 6)
    starts = [
        sorted(
            ref.span(e)[0]
            for e in ref.raw_events(path)
            if e.get("cat") == "user_annotation" and e["name"] == "gloo:all_reduce"
        )
        for path in rank_files(HEALTHY)
    ]
    lags = [b - a for a, b in zip(*starts, strict=True)]
    assert min(lags) > 0  # rank 1 last at every one
    steps = sorted(ref.ns(s["dur"]) for path in rank_files(HEALTHY) for s in ref.steps(ref.raw_events(path)))
    step_ns = (steps[2] + steps[3]) / 2  # the median of 6
    assert lag.wait_us_per_step == pytest.approx(sum(lags) / 3 / 1000)
    assert lag.share_of_step == pytest.approx(sum(lags) / 3 / step_ns) and 0.05 < lag.share_of_step < 0.06
    assert analysis.verdict.startswith(
        "no clear straggler: the largest lag is rank 1's, last at 6 of 6 all-reduces"
    )
    assert analysis.verdict.endswith("(5% of the 22.09 ms step): under the 10% of the step a straggler costs")


@pytest.mark.parametrize(
    ("run", "rank"), [("ddp_gloo_4ranks_straggler", 2), ("fsdp_gloo_2ranks_straggler", 1)]
)
def test_the_bundled_stragglers_are_named(run: str, rank: int) -> None:
    straggler = analyse_tables(set_tables(SAMPLE_RUNS / run)).straggler
    assert (
        straggler is not None and straggler.rank == rank and straggler.share_of_step >= STRAGGLER_STEP_SHARE
    )  # type: ignore[operator]


def test_the_gloo_set_names_rank_2() -> None:
    straggler = analyse_tables(set_tables(GLOO4)).straggler
    assert (
        straggler is not None
        and straggler.rank == 2
        and (straggler.last_count, straggler.collectives) == (6, 6)
    )


def _identical(tmp_path: Path, copies: int = 4) -> Path:
    source = synthetic.read(next(GLOO4.glob("rank0*")))
    for rank in range(copies):
        synthetic.write(synthetic.set_rank(source, rank, copies), tmp_path / f"rank{rank}.json.gz")
    return tmp_path


def test_identical_ranks_name_no_straggler(tmp_path: Path) -> None:
    """One rank's trace copied four times: nobody waits for anybody."""
    out = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["summary", str(_identical(tmp_path)), "--json"])
    run = json.loads(out.output)["distributed"]
    assert run["straggler"] is None and run["largest_lag"] is None
    assert run["verdict"] == "no clear straggler: no rank waited for another at the 6 collectives"


@settings(max_examples=examples(100), deadline=None)
@given(data=st.data(), jitter_us=st.sampled_from([50, 200, 1000]))
def test_identical_ranks_with_random_jitter_name_no_straggler(data: st.DataObject, jitter_us: int) -> None:
    """Four copies of one rank, each collective's start moved by up to ``jitter_us`` at random (its
    end kept): who is last is chance, and the wait a fraction of the 33 ms step."""
    tables = set_tables(GLOO4)
    one = {name: frame.filter(pl.col("rank") == 0) for name, frame in tables.items()}
    n = one["collectives"].height
    copies = {
        name: pl.concat([frame.with_columns(rank=pl.lit(r, pl.Int64)) for r in range(4)])
        for name, frame in one.items()
    }
    jitter = data.draw(st.lists(st.integers(0, jitter_us * 1000), min_size=4 * n, max_size=4 * n))
    copies["collectives"] = copies["collectives"].with_columns(pl.col("start_ns") + pl.Series(jitter))
    analysis = analyse_tables(copies)
    assert analysis.straggler is None, analysis.verdict
    assert analysis.verdict.startswith("no clear straggler")


@pytest.mark.slow
def test_128_ranks_the_verdict_first_and_the_straggler_marked(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[1] / "fixtures" / "linear_eager.json.gz"
    synthetic.rank_set(source, tmp_path / "run", 128, straggler=77)
    result = CliRunner(env={"COLUMNS": "120"}).invoke(cli, ["summary", str(tmp_path / "run")])
    lines = result.output.splitlines()
    assert lines[0].startswith("128 ranks from")
    verdict_at = next(i for i, line in enumerate(lines) if line.startswith("Stragglers: "))
    assert lines[verdict_at].startswith("Stragglers: rank 77 arrives last at 3 of 3 all-reduces")
    assert verdict_at < next(i for i, line in enumerate(lines) if line.startswith("Ranks"))
    marked = [line.split()[:2] for line in lines if "◀" in line and line.split()[0].isdigit()]
    assert marked == [["77", "◀"]] * 2  # in the worst 20 (first: it caused the waiting) and among every rank
    data = json.loads(CliRunner().invoke(cli, ["summary", str(tmp_path / "run"), "--json"]).output)
    assert (
        data["distributed"]["straggler"]["rank"] == 77 and data["distributed"]["straggler"]["last_count"] == 3
    )
