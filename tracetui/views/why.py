"""The explorer's Why view as plain data: for one step, what bounds it (the step verdict's
classification), its critical path (length, parts, what took most of it), its GPU idle time
explained, its launch figures, and the advice; and the path's events in time order, for the tree's
walk keys (the tree's marks: :mod:`tracetui.views.path_marks`).

Every figure is one of ``summary --json``'s: the step's ``critical_path``, ``idle`` and ``launch``
are :func:`~tracetui.insight.why_data.step_why`'s, its ``bound`` and ``verdict`` the step verdicts'
(:func:`~tracetui.insight.spans.verdicts`), the advice :func:`~tracetui.insight.why_data.advice_records`';
the events on the path are :func:`~tracetui.insight.critical_path.pieces`' (the ``export --table
critical_path`` rows).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui import formatting as fmt
from tracetui.insight.critical_path import pieces, step_paths
from tracetui.insight.kernel_names import kernel_name_columns
from tracetui.insight.spans import verdicts
from tracetui.insight.why_data import advice_records, path_parts, step_why
from tracetui.trace.memo import kept
from tracetui.views.timeline.critical import LEGEND

if TYPE_CHECKING:
    from tracetui.trace import Trace

HEADLINES = {
    "launch-bound": "CPU-bound: the host launches work slower than the GPU runs it",
    "gpu-bound": "GPU-bound: the GPU is busy for most of the step",
    "gpu-waits": "GPU waits: the GPU idles outside launches (syncs, data, Python)",
    "idle": "No GPU work: the step ran on the CPU only",
}
"""The verdict line per step ``bound`` (the classification of :func:`~tracetui.insight.spans.verdicts`,
put in words; the thresholds are its own)."""
GPU_PIECES = ("kernel", "memcpy", "memset")
"""The kinds of path pieces that are GPU work (:data:`~tracetui.insight.critical_path.KINDS`)."""
NO_STEPS = "No ProfilerStep in this trace: no step to explain (profile with a schedule, or call prof.step())"


@dataclass(frozen=True)
class PathItem:
    """One name on a step's critical path (a ``critical_path.top`` entry of ``summary --json``),
    with ``event_id``: the event of that name with the most time on the path (None: a gap, a launch
    delay, no event to go to), ``events``: how many of its events the path crossed, and ``label``:
    what the view shows (GPU work: its decoded short name, as ``summary`` and the tree show it)."""

    name: str
    kind: str
    us: float
    share: float | None
    event_id: int | None
    events: int
    label: str


@dataclass(frozen=True)
class PathEvents:
    """The events on one step's critical path, in the order the path reaches them (their first
    instant on it): ``ids``, ``starts`` (that instant, ns) and ``ns`` (their time on the path);
    ``name`` and ``length_us``: the step's name and its path's length (``summary --json``'s)."""

    step_id: int
    ids: tuple[int, ...]
    starts: tuple[int, ...]
    ns: tuple[int, ...]
    name: str = ""
    length_us: float = 0.0

    def legend(self) -> str:
        """The timeline's legend for this path: ``critical path: ProfilerStep#4, 350.4 µs``."""
        return f"{LEGEND}: {self.name}, {fmt.duration(self.length_us)}"

    def after(self, key: int | None, start_ns: int | None) -> int | None:
        """Index of the path's event after ``key`` (on the path), else the first reached after
        ``start_ns``, else the first; None: an empty path."""
        if not self.ids:
            return None
        if key in self.ids:
            return (self.ids.index(key) + 1) % len(self.ids)  # type: ignore[arg-type]
        if start_ns is not None:
            for index, start in enumerate(self.starts):
                if start > start_ns:
                    return index
        return 0

    def before(self, key: int | None, start_ns: int | None) -> int | None:
        """Index of the path's event before ``key`` (on the path), else the last reached before
        ``start_ns``, else the last; None: an empty path."""
        if not self.ids:
            return None
        if key in self.ids:
            return (self.ids.index(key) - 1) % len(self.ids)  # type: ignore[arg-type]
        if start_ns is not None:
            for index in range(len(self.starts) - 1, -1, -1):
                if self.starts[index] < start_ns:
                    return index
        return len(self.ids) - 1


@dataclass(frozen=True)
class WhyView:
    """What the Why view shows for one step (``step_id`` None: the trace has no steps; then only
    the advice). ``path``, ``idle``, ``launch``: the step's ``summary --json`` records; ``parts``:
    ``(label, µs, share of the length)``, largest first; ``advice``: ``summary --json``'s."""

    step_id: int | None
    step_name: str
    chosen: str
    bound: str | None
    headline: str
    verdict: str | None
    path: dict[str, Any] | None
    parts: tuple[tuple[str, float, float | None], ...]
    top: tuple[PathItem, ...]
    idle: dict[str, Any] | None
    launch: dict[str, Any] | None
    advice: tuple[dict[str, Any], ...]
    events: PathEvents | None

    def title(self) -> str:
        if self.step_id is None:
            return "Why: no steps"
        return f"Why {self.step_name} is slow ({self.chosen})"

    def split_line(self) -> str:
        """``critical path 364.0 µs: CPU ops 47% · gaps 31% · …`` (the parts on the path)."""
        if self.path is None:
            return "critical path: none (the step has no window)"
        shares = " · ".join(f"{label} {fmt.percent(100 * share)}" for label, _, share in self.parts if share)
        return f"critical path {fmt.duration(self.path['length_us'])}: {shares or 'nothing on it'}"

    def idle_lines(self) -> list[str]:
        """The GPU idle time explained, and the launch figures (as ``summary`` writes them)."""
        lines = []
        idle = self.idle
        if idle is not None:
            lines.append(
                f"GPU idle {fmt.duration(idle['idle_us'])} ({fmt.percent(idle['idle_pct']) or '—'} of the "
                f"window): waiting for the host {fmt.duration(idle['host_wait_us'])} · between kernels "
                f"{fmt.duration(idle['kernel_wait_us'])} · other {fmt.duration(idle['other_us'])}"
            )
        launch = self.launch
        if launch is not None and launch.get("launch_delay_p50_us") is not None:
            lines.append(
                f"launch delay p50 {fmt.duration(launch['launch_delay_p50_us'])} · p90 "
                f"{fmt.duration(launch['launch_delay_p90_us'])} · p99 "
                f"{fmt.duration(launch['launch_delay_p99_us'])} · max "
                f"{fmt.duration(launch['launch_delay_max_us'])}; queue up to "
                f"{fmt.count(launch['queue_max'])} launched and not started (mean "
                f"{fmt.number(launch['queue_mean'])})"
            )
        return lines

    def advice_lines(self) -> list[tuple[str, str]]:
        """``(action with its saving, evidence)`` per advice item, in rank order."""
        return [
            (
                f"{rank}. {item['action']} — saves ~{fmt.duration(item['saving_us'])} per step "
                f"({item['confidence']})",
                item["evidence"],
            )
            for rank, item in enumerate(self.advice, 1)
        ]

    def rows(self) -> list[dict[str, Any]]:
        """The path's top items as table rows (``name``, ``kind``, ``us``, ``share``, ``events``,
        ``event_id``)."""
        return [
            {
                "name": t.label,
                "kind": t.kind,
                "us": t.us,
                "share": t.share,
                "events": t.events,
                "event_id": t.event_id,
            }
            for t in self.top
        ]


ROW_SCHEMA = {
    "name": pl.String,
    "kind": pl.String,
    "us": pl.Float64,
    "share": pl.Float64,
    "events": pl.UInt32,
    "event_id": pl.Int64,
}


def row_frame(view: WhyView) -> pl.DataFrame:
    """:meth:`WhyView.rows` as a frame (the table widget's input)."""
    return pl.DataFrame(view.rows(), schema=ROW_SCHEMA)


def paths_overlay(paths: Iterable[PathEvents]) -> tuple[list[int], str]:
    """The timeline's overlay of the paths found: their events' ids, sorted, and the legend (one
    path: :meth:`PathEvents.legend`; more: ``critical path: 2 steps, 714.4 µs``, as ``r`` writes)."""
    found = list(paths)
    ids = sorted({i for path in found for i in path.ids})
    if len(found) == 1:
        return ids, found[0].legend()
    length = sum(path.length_us for path in found)
    return ids, f"{LEGEND}: {len(found)} steps, {fmt.duration(length)}"


def steps_why(trace: Trace) -> dict[int, dict[str, Any]]:
    """:func:`~tracetui.insight.why_data.step_why`, computed once per trace."""
    return kept(trace, "why_view_steps", lambda: step_why(trace))


def trace_advice(trace: Trace) -> list[dict[str, Any]]:
    """:func:`~tracetui.insight.why_data.advice_records`, computed once per trace."""
    return kept(trace, "why_view_advice", lambda: advice_records(trace))


def chosen_step(trace: Trace, step_id: int | None) -> tuple[int | None, str]:
    """The step to explain: ``step_id`` when it is a step with a path, else the slowest step (the
    longest critical path; ties: the first); None without steps. With what it is, in words."""
    paths = step_paths(trace).spans
    if step_id is not None and (paths["span"] == step_id).any():
        return step_id, "the cursor's step"
    if paths.is_empty():
        return None, ""
    slowest = paths.sort(["length_us", "start_ns"], descending=[True, False])["span"][0]
    return int(slowest), "the slowest step: the cursor is outside the steps"


def path_events(trace: Trace, step_id: int) -> PathEvents:
    """The events on a step's critical path, in the order it reaches them."""
    return _path_events(trace, step_id, pieces(trace, step_paths(trace), [step_id]))


def _path_events(trace: Trace, step_id: int, crossed: pl.DataFrame) -> PathEvents:
    record = step_paths(trace).record(step_id) or {}
    found = (
        crossed.filter(pl.col("id").is_not_null())
        .group_by("id")
        .agg(pl.col("start_ns").min(), pl.col("ns").sum())
        .sort("start_ns", "id")
    )
    return PathEvents(
        step_id,
        tuple(found["id"].to_list()),
        tuple(found["start_ns"].to_list()),
        tuple(found["ns"].to_list()),
        str(record.get("name", step_id)),
        float(record.get("length_us") or 0.0),
    )


def why_view(trace: Trace, step_id: int | None) -> WhyView:
    """The Why view of ``step_id`` (or of :func:`chosen_step`'s choice)."""
    advice = tuple(trace_advice(trace))
    step, chosen = chosen_step(trace, step_id)
    if step is None:
        return WhyView(None, "", "", None, NO_STEPS, None, None, (), (), None, None, advice, None)
    why = steps_why(trace).get(step, {})
    reading = verdicts(trace)[0].filter(pl.col("id") == step)
    bound = reading["bound"][0] if reading.height else None
    verdict = reading["verdict"][0] if reading.height else None
    name = reading["name"][0] if reading.height else str(step)
    path = why.get("critical_path")
    crossed = pieces(trace, step_paths(trace), [step])
    parts: tuple[tuple[str, float, float | None], ...] = ()
    top: tuple[PathItem, ...] = ()
    if path is not None:
        parts = tuple(path_parts(path))
        top = tuple(_items(trace, path["top"], crossed))
    return WhyView(
        step,
        str(name),
        chosen,
        bound,
        HEADLINES.get(bound or "", bound or "no verdict"),
        verdict,
        path,
        parts,
        top,
        why.get("idle"),
        why.get("launch"),
        advice,
        _path_events(trace, step, crossed),
    )


def _items(trace: Trace, top: list[dict[str, Any]], crossed: pl.DataFrame) -> list[PathItem]:
    """The top entries, each with its event with the most time on the path, its event count and
    its label."""
    per = (
        crossed.filter(pl.col("id").is_not_null())
        .group_by("name", "kind", "id")
        .agg(pl.col("ns").sum(), pl.col("start_ns").min())
        .sort(["ns", "start_ns", "id"], descending=[True, False, False])
        .group_by("name", "kind", maintain_order=True)
        .agg(pl.col("id").first(), pl.len().alias("events"))
    )
    found = {(n, k): (i, c) for n, k, i, c in per.iter_rows()}
    gpu = [t["name"] for t in top if t["kind"] in GPU_PIECES]
    shorts = _shorts(trace) if gpu else {}
    items = []
    for entry in top:
        name, kind = entry["name"], entry["kind"]
        event_id, count = found.get((name, kind), (None, 0))
        label = shorts.get(name) or name if kind in GPU_PIECES else name
        items.append(PathItem(name, kind, entry["us"], entry["share"], event_id, count, label))
    return items


def _shorts(trace: Trace) -> dict[str, str]:
    """GPU work names and their decoded short forms (``summary``'s kernels table's ``short``)."""
    names = trace.kernels["name"]
    return dict(kernel_name_columns(names).select("name", "short").iter_rows()) if len(names) else {}
