"""What the explorer shows of a duration distribution (:mod:`tracetui.insight.distributions`): the
histogram as a sparkline, its axis, the percentiles and the slowest calls, as plain data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracetui import formatting as fmt

if TYPE_CHECKING:
    from tracetui.trace import Trace

BARS = "▁▂▃▄▅▆▇█"
EMPTY_BIN = "·"


def sparkline(counts: Sequence[int] | None) -> str:
    """One character per bin: ``·`` for an empty bin, else ``▁``…``█`` by its share of the fullest
    (any non-empty bin shows at least ``▁``)."""
    if not counts:
        return ""
    top = max(counts)
    if top <= 0:
        return EMPTY_BIN * len(counts)
    last = len(BARS) - 1
    return "".join(EMPTY_BIN if c <= 0 else BARS[c * last // top] for c in counts)


def percentiles_text(row: Mapping[str, Any]) -> str:
    """``p50 56.6 µs · p90 57.1 µs · p99 60.3 µs``."""
    keys = (("p50", "p50_us"), ("p90", "p90_us"), ("p99", "p99_us"))
    return " · ".join(f"{label} {fmt.duration(row[key])}" for label, key in keys if row.get(key) is not None)


def steps_across_ranks(times: Mapping[str, Any] | None) -> str | None:
    """The steps' distribution over every rank (:func:`~tracetui.insight.distributions.rank_step_times`)
    on one line: ``step times of 4 ranks (12): 26.60 ms ▄·▂…█ 33.72 ms (ProfilerStep#2, rank 0) ·
    p50 33.21 ms · p90 33.66 ms · p99 33.72 ms``; ``None`` without steps."""
    if not times:
        return None
    worst = times["slowest"][0]
    ranks = len(times["ranks"])
    return (
        f"step times of {ranks} rank{'s' if ranks != 1 else ''} ({fmt.count(times['count'])}): "
        f"{fmt.duration(times['min_us'])} {sparkline(times['histogram']['bins'])} "
        f"{fmt.duration(times['max_us'])} ({worst['name']}, rank {worst['rank']}) · "
        f"{percentiles_text(times)}"
    )


@dataclass(frozen=True)
class SlowCall:
    """One of the slowest calls: its event, duration, where it ran (its step), and whether it is the
    node under the cursor."""

    event_id: int
    duration: str
    where: str
    current: bool


@dataclass(frozen=True)
class DistributionView:
    """The details pane's distribution: a heading, the sparkline between the fastest (``low``) and
    the slowest (``high``) call, the percentiles and the slowest calls."""

    title: str
    bars: str
    low: str
    high: str
    stats: str
    slowest: list[SlowCall]


def distribution_view(
    row: Mapping[str, Any], trace: Trace, what: str, current: int | None = None
) -> DistributionView:
    """The view of one row of :func:`~tracetui.insight.distributions.gpu_distributions` (or of
    ``step_distribution``); ``what`` names the calls ("calls of this kernel", "steps")."""
    slowest = []
    for event_id, us in zip(row["slowest_ids"], row["slowest_us"], strict=True):
        event = trace.event(event_id)
        step = event.get("step_id")
        if what == "steps" or step == event_id:
            where = event["name"]
        else:
            where = "outside steps" if step is None else trace.event(step)["name"]
        slowest.append(SlowCall(event_id, fmt.duration(us), where, event_id == current))
    return DistributionView(
        title=f"Distribution of {fmt.count(row['calls'])} {what}",
        bars=sparkline(row["histogram"]),
        low=f"min {fmt.duration(row['min_us'])}",
        high=f"max {fmt.duration(row['max_us'])}",
        stats=percentiles_text(row),
        slowest=slowest,
    )
