"""The straggler verdict: which rank, if any, held the others up, and the sentence that says so.

Per rank, from the aligned collectives (those of two or more ranks; arrivals on corrected clocks):

* ``last_count`` / ``collectives``: at how many of the *significant* collectives it took part in it
  arrived last — significant: an arrival skew of at least
  :data:`~tracetui.ranks.thresholds.SIGNIFICANT_SKEW_SHARE` of the median step;
* ``wait_us_per_step``: the time each other rank waited for it, per step — for each collective it
  was last at, the others' wait divided by how many they were, summed, over the steps;
* ``share_of_waiting``: that waiting's share of all the waiting at all collectives;
* ``share_of_step``: ``wait_us_per_step`` over the median step (``ProfilerStep``, every rank's).

The rank that cost the others most time is the candidate; it is *the straggler* only when it
passes every threshold of :mod:`tracetui.ranks.thresholds` (last at most significant collectives,
≥ 10 % of the step and ≥ 0.5 ms per step). Otherwise the verdict says "no clear straggler" and gives
that largest lag with the threshold it missed. :class:`Straggler` is a plain record, for the
summary's ``distributed.straggler`` and for what is built on it (why the rank is late).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import polars as pl

from tracetui import formatting as fmt
from tracetui.ranks.collectives import pretty
from tracetui.ranks.thresholds import (
    SIGNIFICANT_SKEW_SHARE,
    STRAGGLER_LAST_SHARE,
    STRAGGLER_MIN_WAIT_US,
    STRAGGLER_STEP_SHARE,
)

JSON_FIELDS = ("rank", "last_count", "collectives", "wait_us_per_step", "share_of_waiting", "share_of_step")


@dataclass(frozen=True)
class Straggler:
    """A rank that held the others up, and by how much (see the module doc)."""

    rank: int
    last_count: int  # significant collectives it arrived last at …
    collectives: int  # … of the significant collectives it took part in
    wait_us_per_step: float  # what each other rank waited for it, per step
    share_of_waiting: float  # of all the waiting, 0..1
    share_of_step: float | None  # wait_us_per_step / median step, 0..1 (None: no step time)
    wait_us: float  # the others' waiting for it, in all (rank time)
    all_last: int  # collectives of two or more ranks it arrived last at …
    all_collectives: int  # … of all it took part in
    step_us: float | None  # the median step the share is of
    what: str  # "all-reduces", "collectives": what it was last at

    def as_json(self) -> dict[str, object]:
        """The fields of ``distributed.straggler`` (docs/ranks.md)."""
        values = asdict(self)
        return {name: values[name] for name in JSON_FIELDS}

    @property
    def misses(self) -> list[str]:
        """The thresholds it does not reach, as the verdict says them (none: it is the straggler)."""
        missed = []
        if not self.last_count > STRAGGLER_LAST_SHARE * self.collectives:
            missed.append("it is not last at most of those")
        if self.share_of_step is None or self.share_of_step < STRAGGLER_STEP_SHARE:
            missed.append(
                f"under the {fmt.percent(100 * STRAGGLER_STEP_SHARE)} of the step a straggler costs"
            )
        if self.wait_us_per_step < STRAGGLER_MIN_WAIT_US:
            missed.append(f"under the {fmt.duration(STRAGGLER_MIN_WAIT_US)} per step a straggler costs")
        return missed


def median_step_us(rank_steps: pl.DataFrame) -> float | None:
    """The median step over every rank's steps (``ProfilerStep`` spans; the window without steps)."""
    if rank_steps.is_empty():
        return None
    value = rank_steps.select(pl.coalesce("cpu_us", "window_us").median()).item()
    return float(value) if value else None


def largest_lag(
    aligned: pl.DataFrame, arrivals: pl.DataFrame, step_us: float | None, n_steps: int
) -> Straggler | None:
    """The rank whose late arrivals cost the others most time (None: nobody waited)."""
    shared = aligned.filter(pl.col("ranks") >= 2)
    total = float(shared["wait_us"].sum() or 0.0)
    if shared.is_empty() or total <= 0:
        return None
    per_other = pl.col("wait_us") / (pl.col("ranks").cast(pl.Float64) - 1)
    top = (
        shared.group_by(pl.col("last_rank").alias("rank"))
        .agg(pl.col("wait_us").sum(), per_other.sum().alias("per_other"), pl.len().alias("all_last"))
        .sort(["wait_us", "all_last", "rank"], descending=[True, True, False])
        .row(0, named=True)
    )
    rank = int(top["rank"])
    floor = SIGNIFICANT_SKEW_SHARE * step_us if step_us else 0.0
    significant = shared.filter(pl.col("arrival_skew_us") >= floor)
    mine = arrivals.filter(pl.col("rank") == rank).select("key")
    taken = shared.join(mine, on="key", how="semi")
    counted = significant.join(mine, on="key", how="semi")
    names = sorted(set(counted["name"].to_list() or taken["name"].to_list()))
    per_step = float(top["per_other"]) / max(1, n_steps)
    return Straggler(
        rank=rank,
        last_count=int((counted["last_rank"] == rank).sum()),
        collectives=counted.height,
        wait_us_per_step=per_step,
        share_of_waiting=float(top["wait_us"]) / total,
        share_of_step=per_step / step_us if step_us else None,
        wait_us=float(top["wait_us"]),
        all_last=int(top["all_last"]),
        all_collectives=taken.height,
        step_us=step_us,
        what=f"{pretty(names[0])}s" if len(names) == 1 else "collectives",
    )


def verdict(aligned: pl.DataFrame, lag: Straggler | None) -> str:
    """One line: the straggler and what it costs the others, or why there is none."""
    shared = aligned.filter(pl.col("ranks") >= 2)
    if shared.is_empty():
        return "no collective was found on two or more ranks: nothing to align"
    if lag is None:
        return f"no clear straggler: no rank waited for another at the {shared.height} collectives"
    at = f"{lag.all_last} of {lag.all_collectives} {lag.what}"
    if lag.collectives < lag.all_collectives:
        skew = fmt.duration(SIGNIFICANT_SKEW_SHARE * lag.step_us) if lag.step_us else ""
        at += f" ({lag.last_count} of the {lag.collectives} with a skew of {skew} or more, 1% of the step)"
    cost = f"{fmt.duration(lag.wait_us_per_step)} per step for it"
    if lag.share_of_step is not None and lag.step_us:
        cost += f" ({fmt.percent(100 * lag.share_of_step)} of the {fmt.duration(lag.step_us)} step)"
    if not lag.misses:
        return (
            f"rank {lag.rank} arrives last at {at}; the other ranks wait {cost}; "
            f"{fmt.duration(lag.wait_us)} of rank time in all, "
            f"{fmt.percent(100 * lag.share_of_waiting)} of all the waiting"
        )
    return (
        f"no clear straggler: the largest lag is rank {lag.rank}'s, last at {at}; the others wait "
        f"{cost}: {' and '.join(lag.misses)}"
    )
