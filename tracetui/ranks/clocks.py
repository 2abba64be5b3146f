"""Clock alignment from the collectives themselves: each rank's offset, its spread, and which are applied.

A synchronising collective ends together on every rank (a gloo span when the algorithm's last
message is in, an NCCL kernel when its last step is done), whatever the order the ranks arrived
in; so the ends of the collectives a rank shares with the others say how far its clock is off,
at any size — a millisecond as well as an hour.

**Estimate.** The table of end times, one row per collective and one column per rank, is split
into a time per collective plus an offset per rank by *median polish* (Tukey): starting from each
rank's median end difference to a pivot rank (the one in the most collectives; lowest on a tie),
the collective's time is the median over ranks of the ends less their offsets, and a rank's offset
the median over collectives of its ends less the collectives' times — three rounds. Medians
throughout: a collective that ended late on one rank (descheduled, a slow last message) moves
nothing. The estimate moves with a shifted clock exactly: shift a rank by any amount and its offset
moves by that amount, everything else stays.

**Spread.** What is left (end − collective time − offset) is how far simultaneous ends disagree.
``sigma`` = 1.4826 × the median absolute deviation of the difference between two ranks' remainders
at one collective (each rank paired with the next one at that collective), the robust σ of "two
ranks' ends of one collective". A rank's spread = the larger of :data:`CLOCK_SPREAD_SIGMAS` × σ and
:data:`CLOCK_SE_SIGMAS` standard errors of its median (1.2533 × σ / √n for n collectives), never
under :data:`CLOCK_FLOOR_NS` (:mod:`tracetui.ranks.thresholds`); unknown (infinite: nothing is
applied) from fewer than :data:`CLOCK_MIN_PAIRS` end differences.

**Reference and correction.** Ranks whose offsets lie within the spread of each other (sorted by
offset, no gap wider than the larger spread of the two neighbours) agree. The largest such group
(the one with the lowest rank, on a tie) is the reference: offsets are given against the median of
its offsets, and a rank whose offset exceeds its spread is corrected (its collectives' start and
end moved back by it). A smaller offset is reported, not applied: it cannot be told from the
collectives' own disagreement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl

from tracetui import formatting as fmt
from tracetui.ranks.thresholds import (
    CLOCK_FLOOR_NS,
    CLOCK_MIN_PAIRS,
    CLOCK_SE_SIGMAS,
    CLOCK_SPREAD_SIGMAS,
    MAD_SIGMA,
    MEDIAN_SE,
)

US = 1000.0
POLISH_ROUNDS = 3
NOT_SYNCHRONOUS = ("op",)  # c10d ops of the fallback: they return before the collective is done
SCHEMA = {
    "rank": pl.Int64,
    "offset_us": pl.Float64,  # against the reference ranks: + its clock runs ahead
    "spread_us": pl.Float64,
    "collectives": pl.UInt32,  # the collectives it shares with another rank: what the estimate rests on
    "applied": pl.Boolean,
}


@dataclass
class Clocks:
    """Per rank its estimated offset, the estimate's spread and whether it was applied."""

    offsets: pl.DataFrame  # SCHEMA, in rank order; every rank with collectives
    reference: list[int] = field(default_factory=list)  # the ranks the offsets are measured against
    sigma_us: float = 0.0  # robust σ of two ranks' end difference at one collective

    @property
    def corrected(self) -> bool:
        """Whether any rank's arrivals were corrected."""
        return bool(self.offsets["applied"].any())

    def note(self) -> str | None:
        """The sentence the report gives about the clocks, when any was corrected."""
        shifted = self.offsets.filter("applied")
        if shifted.is_empty():
            return None
        listed = ", ".join(
            f"rank {r['rank']} {fmt.signed_duration(r['offset_us'])} (± {fmt.duration(r['spread_us'])})"
            for r in shifted.iter_rows(named=True)
        )
        whose = "its" if shifted.height == 1 else "their"
        return (
            f"clocks disagree: {listed} against {rank_list(self.reference)}, from the ends of the "
            f"collectives (they end together on every rank); {whose} arrivals are corrected"
        )


def rank_list(ranks: list[int]) -> str:
    """``rank 3``, ``ranks 0, 2``, ``ranks 1–7, 9`` (runs of three or more as a range)."""
    runs: list[list[int]] = []
    for rank in sorted(ranks):
        if runs and runs[-1][-1] == rank - 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    parts = [f"{run[0]}–{run[-1]}" if len(run) >= 3 else ", ".join(map(str, run)) for run in runs]
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(parts)


def applied_ns(offsets: pl.DataFrame) -> pl.DataFrame:
    """``rank, offset_ns`` (Int64) of the ranks corrected in ``offsets`` (:data:`SCHEMA`); a rank
    not listed keeps its clock. Its corrected times are its own less ``offset_ns``."""
    return offsets.filter("applied").select(
        "rank", (pl.col("offset_us") * US).round().cast(pl.Int64).alias("offset_ns")
    )


def align(keyed: pl.DataFrame) -> Clocks:
    """The clocks of the ranks of ``keyed`` (aligned collective instances: ``key, rank, kind,
    end_ns``), as the module doc says."""
    ends = (
        keyed.filter(~pl.col("kind").is_in(NOT_SYNCHRONOUS))
        .group_by("key", "rank")
        .agg(pl.col("end_ns").min())
        .filter(pl.col("rank").n_unique().over("key") >= 2)
    )
    if ends.is_empty():
        return Clocks(pl.DataFrame(schema=SCHEMA))
    # small numbers (a shift of an hour is 3.6e12 ns: exact in a float), then medians in ns
    ends = ends.select("key", "rank", (pl.col("end_ns") - pl.col("end_ns").min()).cast(pl.Float64).alias("x"))
    theta = _polish(ends, _pivot_offsets(ends))
    rest = ends.join(theta, on="rank").join(_times(ends, theta), on="key")
    rest = rest.with_columns(r=pl.col("x") - pl.col("t") - pl.col("theta"))
    sigma = _pair_sigma(rest)
    counts = rest.group_by("rank").agg(pl.len().cast(pl.UInt32).alias("collectives"))
    per_rank = theta.join(counts, on="rank").with_columns(
        spread=pl.max_horizontal(
            pl.lit(float(CLOCK_FLOOR_NS)),
            sigma * CLOCK_SPREAD_SIGMAS,
            sigma * CLOCK_SE_SIGMAS * MEDIAN_SE / pl.col("collectives").cast(pl.Float64).sqrt(),
        )
    )
    grouped = _agreeing_groups(per_rank)
    sizes = grouped.group_by("group").agg(pl.len().alias("size"), pl.col("rank").min().alias("first"))
    chosen = sizes.sort(["size", "first"], descending=[True, False])["group"][0]
    base = float(grouped.filter(pl.col("group") == chosen)["theta"].median())  # type: ignore[arg-type]
    offsets = (
        grouped.with_columns(offset=pl.col("theta") - base)
        .select(
            "rank",
            (pl.col("offset") / US).alias("offset_us"),
            (pl.col("spread") / US).alias("spread_us"),
            "collectives",
            (pl.col("offset").abs() > pl.col("spread")).alias("applied"),
            (pl.col("group") == chosen).alias("reference"),
        )
        .sort("rank")
    )
    reference = offsets.filter(pl.col("reference") & ~pl.col("applied"))["rank"].to_list()
    return Clocks(offsets.drop("reference").cast(SCHEMA), reference, sigma / US)  # type: ignore[arg-type]


def _pivot_offsets(ends: pl.DataFrame) -> pl.DataFrame:
    """Each rank's median end difference to the pivot rank (the one in the most collectives, the
    lowest on a tie), at the collectives they share: ``rank, theta`` (ranks sharing none: absent)."""
    counts = ends.group_by("rank").agg(pl.len()).sort(["len", "rank"], descending=[True, False])
    pivot = ends.filter(pl.col("rank") == counts["rank"][0]).select("key", pl.col("x").alias("px"))
    return (
        ends.join(pivot, on="key").group_by("rank").agg((pl.col("x") - pl.col("px")).median().alias("theta"))
    )


def _times(ends: pl.DataFrame, theta: pl.DataFrame) -> pl.DataFrame:
    """Each collective's time: the median over ranks of their ends less their offsets (``key, t``)."""
    return (
        ends.join(theta, on="rank").group_by("key").agg((pl.col("x") - pl.col("theta")).median().alias("t"))
    )


def _polish(ends: pl.DataFrame, theta: pl.DataFrame) -> pl.DataFrame:
    """Median polish from ``theta``: alternately the collectives' times and the ranks' offsets."""
    for _ in range(POLISH_ROUNDS):
        times = _times(ends, theta)
        theta = (
            ends.join(times, on="key")
            .group_by("rank")
            .agg((pl.col("x") - pl.col("t")).median().alias("theta"))
        )
    return theta


def _pair_sigma(rest: pl.DataFrame) -> float:
    """1.4826 × MAD of the difference between two ranks' remainders at one collective (each rank
    and the next one at that collective), in ns; infinite (unknown) from fewer than
    :data:`CLOCK_MIN_PAIRS` differences."""
    pairs = (
        rest.sort("key", "rank")
        .select((pl.col("r") - pl.col("r").shift(-1).over("key")).alias("d"))
        .drop_nulls()["d"]
    )
    if pairs.len() < CLOCK_MIN_PAIRS:
        return math.inf
    centre = pairs.median()
    return MAD_SIGMA * float((pairs - centre).abs().median())  # type: ignore[operator, arg-type]


def _agreeing_groups(per_rank: pl.DataFrame) -> pl.DataFrame:
    """``per_rank`` with ``group``: ranks sorted by offset, a new group where the gap to the previous
    rank is wider than the larger spread of the two."""
    ordered = per_rank.sort("theta", "rank")
    gap = pl.col("theta").diff().fill_null(0.0)
    wider = gap > pl.max_horizontal("spread", pl.col("spread").shift(1).fill_null(0.0))
    return ordered.with_columns(group=wider.cum_sum())
