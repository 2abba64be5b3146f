"""Why the straggler is late: what it did before the collectives it arrives late to, against the others.

A collective ends together on every rank (:mod:`tracetui.ranks.clocks`), so from the end of one
every rank sets off together, and how late a rank arrives at the next one is what it did in
between. For each collective the straggler arrives last at, its **stretch** runs from the latest end
of a collective on the straggler before its arrival (the *origin*) to that arrival; every rank's
stretch is from the origin's end on that rank to its own arrival (on its own clock: no offset
enters). Stretches sharing an origin nest (in-flight collectives), so of those only the longest
counts (the collective the straggler arrives at last, on its own clock): the stretches compared are
disjoint, nothing is counted twice.

The **lag** of a stretch is the straggler's arrival less the median of the others' (corrected
clocks). In every stretch, from each rank's ``lead`` table (:mod:`tracetui.ranks.lead`): its host
gaps (untraced time on every CPU thread, by the op that ends them), its outermost CPU ops, its GPU
work (by name) and its GPU idle time. A *difference* is the straggler's time less the others'
median (a rank without it counts 0), summed over the stretches and divided by the steps they are
in; its share of the lag is the same sum over the lag's. The largest difference is **the cause**
when it explains at least :data:`~tracetui.ranks.thresholds.CAUSE_MIN_SHARE` of the lag; otherwise
"no single cause", with the differences of at least
:data:`~tracetui.ranks.thresholds.CAUSE_LIST_SHARE` listed. GPU idle time is shown, never a cause:
the GPU idles because nothing was launched, which the host side says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from tracetui import formatting as fmt
from tracetui.ranks.thresholds import CAUSE_LIST_SHARE, CAUSE_MIN_SHARE

US = 1000
CAUSE_KINDS = ("host_gap", "host_op", "gpu_work")  # what can be a cause (gpu_idle follows from them)
TOTAL_KINDS = ("span", "host_gap", "host_op", "gpu_work", "gpu_idle")
MAX_LISTED = 5
WHAT = {
    "host_gap": "untraced time on its CPU threads (no op, no runtime call) before",
    "host_op": "CPU op",
    "gpu_work": "GPU work",
}


@dataclass(frozen=True)
class Difference:
    """One kind and name of time, the straggler's against the others' median, per step."""

    kind: str  # host_gap, host_op, gpu_work (totals: also span, gpu_idle)
    name: str
    us_per_step: float
    vs_others_us_per_step: float
    calls_per_step: float
    vs_others_calls_per_step: float
    share_of_lag: float  # (us_per_step - vs_others_us_per_step) / the lag per step

    @property
    def extra_us_per_step(self) -> float:
        return self.us_per_step - self.vs_others_us_per_step

    def as_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "name": self.name,
            "us_per_step": self.us_per_step,
            "vs_others_us_per_step": self.vs_others_us_per_step,
            "extra_us_per_step": self.extra_us_per_step,
            "share_of_lag": self.share_of_lag,
            "calls_per_step": self.calls_per_step,
            "vs_others_calls_per_step": self.vs_others_calls_per_step,
        }

    def phrase(self) -> str:
        """``host gap before aten::ones_like +8.20 ms (94%)``."""
        label = {"host_gap": "host gap before", "host_op": "CPU op", "gpu_work": "GPU work"}[self.kind]
        return (
            f"{label} {self.name} {'+' if self.extra_us_per_step >= 0 else '−'}"
            f"{fmt.duration(abs(self.extra_us_per_step))} ({fmt.percent(100 * self.share_of_lag)})"
        )


@dataclass(frozen=True)
class Cause:
    """Why the straggler is late (see the module doc); ``cause`` None: no single cause."""

    rank: int
    lag_us_per_step: float  # its arrival less the others' median, per step, over the stretches compared
    stretches: int  # stretches compared (one per origin)
    steps: int  # the steps they are in
    cause: Difference | None
    differences: tuple[Difference, ...]  # the largest positive differences, largest first
    totals: tuple[Difference, ...]  # per kind (name ""), in TOTAL_KINDS order

    def as_json(self) -> dict[str, object]:
        """``distributed.straggler.cause`` (docs/ranks.md)."""
        return {
            "rank": self.rank,
            "kind": self.cause.kind if self.cause else None,
            "name": self.cause.name if self.cause else None,
            "us_per_step": self.cause.us_per_step if self.cause else None,
            "vs_others_us_per_step": self.cause.vs_others_us_per_step if self.cause else None,
            "share_of_lag": self.cause.share_of_lag if self.cause else None,
            "lag_us_per_step": self.lag_us_per_step,
            "stretches": self.stretches,
            "steps": self.steps,
            "min_share": CAUSE_MIN_SHARE,
            "sentence": self.sentence,
            "differences": [d.as_json() for d in self.differences],
            "totals": {d.kind: d.as_json() for d in self.totals},
        }

    @property
    def sentence(self) -> str:
        """One sentence: the cause with its figures, or the largest differences."""
        lag = f"its {fmt.duration(self.lag_us_per_step)} lag per step"
        c = self.cause
        if c is not None:
            mine, theirs = fmt.duration(c.us_per_step), fmt.duration(c.vs_others_us_per_step)
            share = f"{fmt.percent(100 * c.share_of_lag)} of {lag}"
            if c.kind == "host_gap":
                what = f"spends {mine} per step in {WHAT['host_gap']} {c.name}"
            elif c.kind == "host_op":
                what = f"spends {mine} per step in {c.name}"
            else:
                what = f"runs {mine} per step of {c.name} on the GPU ({_calls(c.calls_per_step)})"
                theirs += f" ({_calls(c.vs_others_calls_per_step)})"
            return f"rank {self.rank} {what}, the others {theirs}: {share}"
        listed = [d.phrase() for d in self.differences if d.share_of_lag >= CAUSE_LIST_SHARE][:3]
        head = (
            f"no single cause explains {fmt.percent(100 * CAUSE_MIN_SHARE)} of rank {self.rank}'s "
            f"{fmt.duration(self.lag_us_per_step)} lag per step"
        )
        return head + (f"; the largest differences: {', '.join(listed)}" if listed else "")


TOTAL_LABELS = {
    "span": "collective end to arrival",
    "host_gap": "host gaps",
    "host_op": "CPU ops",
    "gpu_work": "GPU work",
    "gpu_idle": "GPU idle",
}


def breakdown_line(rank: int, totals: dict[str, dict[str, Any]]) -> str:
    """Per step, the straggler's time of each kind against the others' median (``totals`` as in
    ``distributed.straggler.cause.totals``)."""
    parts = [
        f"{label} {fmt.duration(totals[kind]['us_per_step'])} vs "
        f"{fmt.duration(totals[kind]['vs_others_us_per_step'])}"
        for kind, label in TOTAL_LABELS.items()
        if kind in totals
    ]
    return f"per step, rank {rank} against the others' median: " + " · ".join(parts)


def _calls(n: float) -> str:
    return f"{fmt.count(round(n)) if abs(n - round(n)) < 0.05 else f'{n:.1f}'} calls"


def straggler_cause(
    rank: int, keyed: pl.DataFrame, arrivals: pl.DataFrame, aligned: pl.DataFrame, lead: pl.DataFrame
) -> Cause | None:
    """Why ``rank`` (the straggler) is late (module doc); None: no stretch to compare.

    ``keyed``: the aligned instances with their ``key`` (own clocks); ``arrivals``: their
    ``arrival_ns`` on the reference clock; ``aligned``: one row per collective; ``lead``: every
    rank's lead table (none of the straggler's, as in a dataset written before it: None)."""
    stretches = _stretches(rank, keyed, arrivals, aligned)
    if stretches.is_empty() or lead.filter(pl.col("rank") == rank).is_empty():  # no lead: nothing read
        return None
    spans = _rank_spans(stretches, keyed)
    others = spans.group_by("key").agg((pl.len() - 1).alias("others")).filter(pl.col("others") >= 1)
    spans = spans.join(others, on="key", how="semi")
    stretches = stretches.join(others, on="key", how="semi")
    if stretches.is_empty():
        return None
    steps = max(1, stretches["step"].n_unique())
    lag_ns = float(stretches["lag_ns"].sum())
    per = _per_stretch(spans, lead)
    by_name = _against_others(per, rank, others, ["kind", "name"])
    totals_per = per.group_by("key", "rank", "kind").agg(pl.col("ns", "calls").sum())
    by_kind = _against_others(totals_per.with_columns(name=pl.lit("")), rank, others, ["kind", "name"])

    def differences(frame: pl.DataFrame) -> list[Difference]:
        return [
            Difference(
                kind=row["kind"],
                name=row["name"],
                us_per_step=row["mine_ns"] / US / steps,
                vs_others_us_per_step=row["others_ns"] / US / steps,
                calls_per_step=row["mine_calls"] / steps,
                vs_others_calls_per_step=row["others_calls"] / steps,
                share_of_lag=(row["mine_ns"] - row["others_ns"]) / lag_ns,
            )
            for row in frame.iter_rows(named=True)
        ]

    ranked = differences(
        by_name.filter(pl.col("kind").is_in(CAUSE_KINDS) & (pl.col("mine_ns") > pl.col("others_ns")))
        .sort(pl.col("mine_ns") - pl.col("others_ns"), "kind", "name", descending=[True, False, False])
        .head(MAX_LISTED)
    )
    found = {d.kind: d for d in differences(by_kind)}
    totals = tuple(found.get(kind, Difference(kind, "", 0.0, 0.0, 0.0, 0.0, 0.0)) for kind in TOTAL_KINDS)
    top = ranked[0] if ranked and ranked[0].share_of_lag >= CAUSE_MIN_SHARE else None
    return Cause(
        rank=rank,
        lag_us_per_step=lag_ns / US / steps,
        stretches=stretches.height,
        steps=steps,
        cause=top,
        differences=tuple(ranked),
        totals=totals,
    )


def _stretches(rank: int, keyed: pl.DataFrame, arrivals: pl.DataFrame, aligned: pl.DataFrame) -> pl.DataFrame:
    """The straggler's stretches: per origin, the late collective it arrives at last (key, origin,
    step, lag_ns)."""
    late = aligned.filter((pl.col("ranks") >= 2) & (pl.col("last_rank") == rank)).select("key")
    mine = keyed.filter(pl.col("rank") == rank)
    ends = mine.select(pl.col("key").alias("origin"), pl.col("end_ns").alias("origin_end")).drop_nulls()
    theirs = (
        arrivals.filter(pl.col("rank") != rank)
        .group_by("key")
        .agg(pl.col("arrival_ns").median().alias("others_ns"))
    )
    own = arrivals.filter(pl.col("rank") == rank).select("key", "arrival_ns")
    return (
        mine.join(late, on="key", how="semi")
        .select("key", "step", "start_ns")
        .sort("start_ns")
        .join_asof(ends.sort("origin_end"), left_on="start_ns", right_on="origin_end", strategy="backward")
        .filter(pl.col("origin").is_not_null())
        .join(own, on="key")
        .join(theirs, on="key")
        .with_columns(lag_ns=pl.col("arrival_ns") - pl.col("others_ns"))
        .filter(pl.col("lag_ns") > 0)
        .sort("start_ns", "key", descending=[True, False])
        .unique("origin", keep="first", maintain_order=True)
        .select("key", "origin", "step", "lag_ns")
        .sort("key")
    )


def _rank_spans(stretches: pl.DataFrame, keyed: pl.DataFrame) -> pl.DataFrame:
    """Every rank's part of each stretch: from the origin's end on it to its own arrival (lo, hi)."""
    starts = keyed.select("key", "rank", pl.col("start_ns").alias("hi"))
    ends = keyed.select(pl.col("key").alias("origin"), "rank", pl.col("end_ns").alias("lo")).drop_nulls()
    return (
        stretches.select("key", "origin")
        .join(starts, on="key")
        .join(ends, on=["origin", "rank"])
        .with_columns(hi=pl.max_horizontal("hi", "lo"))  # arrived before the origin ended: empty
        .select("key", "rank", "lo", "hi")
    )


def _per_stretch(spans: pl.DataFrame, lead: pl.DataFrame) -> pl.DataFrame:
    """Per stretch, rank, kind and name: the time and calls of the lead segments inside its span."""
    placed = (
        lead.sort("start_ns")
        .join_asof(
            spans.sort("lo"),
            left_on="start_ns",
            right_on="lo",
            by="rank",
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("key").is_not_null() & (pl.col("end_ns") <= pl.col("hi")))
    )
    return placed.group_by("key", "rank", "kind", "name").agg(pl.col("ns", "calls").sum())


def _against_others(per: pl.DataFrame, rank: int, others: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per ``by``: the straggler's ns and calls summed over the stretches, and the others' medians
    (per stretch, a rank without the item counting 0) summed likewise."""
    mine = pl.col("rank") == rank
    per_key = (
        per.join(others, on="key")
        .group_by("key", *by)
        .agg(
            pl.col("ns").filter(mine).sum().alias("mine_ns"),
            pl.col("calls").filter(mine).sum().alias("mine_calls"),
            pl.col("ns").filter(~mine).cast(pl.Float64).alias("theirs_ns"),
            pl.col("calls").filter(~mine).cast(pl.Float64).alias("theirs_calls"),
            pl.col("others").first(),
        )
    )
    pad = pl.lit(0.0).repeat_by(pl.col("others") - pl.col("theirs_ns").list.len())
    per_key = per_key.with_columns(
        others_ns=pl.concat_list("theirs_ns", pad).list.median(),
        others_calls=pl.concat_list("theirs_calls", pad).list.median(),
    )
    return per_key.group_by(*by).agg(pl.col("mine_ns", "others_ns", "mine_calls", "others_calls").sum())
