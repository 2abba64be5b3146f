"""Evaluate expectations against a loaded trace: one :class:`Result` per check.

Units (see :mod:`tracetui.compare.scopes`): an annotation's checks are counted in each of its
calls, a step's in each selected step; an op or kernel is counted in each call of its ``per``
annotation, in each step (``per = "step"``) or in the whole trace. Counts must hold in *every*
unit; times are the mean per unit; ``launches_kernels = true`` means every matching op call
launched GPU work, ``false`` that none did. Every figure beside its limit is written by
:func:`tracetui.formatting.beside_limit` (never equal to the limit unless it is). Memory sizes are
the peaks of :func:`tracetui.insight.memory.memory_of` (the numbers the summary shows): a device's peak, or in
each step the highest level a device reached in it; they must hold on every device chosen.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import polars as pl

from tracetui import formatting as fmt
from tracetui.compare import scopes
from tracetui.compare.expectations import ALL_DEVICES, ALL_STEPS, PER_STEP, Check, Expectation
from tracetui.compare.globs import matching
from tracetui.insight.critical_path import annotation_paths, step_paths
from tracetui.insight.idle import step_idle
from tracetui.insight.memory import Memory, memory_of
from tracetui.trace.nesting import ancestor_ids

if TYPE_CHECKING:
    from tracetui.trace import Trace

SPAN_COLUMNS = {
    "kernels_per_call": "kernels",
    "memcpys_per_call": "memcpys",
    "memsets_per_call": "memsets",
    "gpu_events_per_call": "gpu_events",
    "gpu_us": "gpu_us",
    "cpu_us": "cpu_us",
}


@dataclass(frozen=True)
class Result:
    """One check of one expectation, measured."""

    expectation: Expectation
    check: Check
    passed: bool
    actual: str
    """What the trace showed, in words: ``5 in each of 3 calls``, ``4–6 over 3 calls``."""
    value: float | int | bool | None
    """The number compared: the worst unit for a count, the mean for a time; ``None`` when the
    subject is missing."""
    event_id: int | None
    """Where to look: the first unit (or op call) that broke the check, else the first unit."""


def check_trace(trace: Trace, expectations: list[Expectation]) -> list[Result]:
    """Every check of every expectation, in file order."""
    context = _Context(trace)
    return [result for e in expectations for result in _evaluate(context, e)]


@dataclass(frozen=True)
class _Units:
    """The units an expectation is counted in."""

    key: tuple[str, str]
    frame: pl.DataFrame
    kind: scopes.Kind
    missing: str | None = None
    """Why there are no units, when there are none."""

    @property
    def noun(self) -> str:
        return "step" if self.kind == scopes.STEPS else "call"


class _Context:
    """One trace's units and their members, computed once for all expectations."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self._units: dict[tuple[str, str], _Units] = {}
        self._members: dict[tuple[str, tuple[str, str]], pl.DataFrame] = {}

    @cached_property
    def tree(self) -> pl.DataFrame:
        return scopes.cpu_tree(self.trace)

    @cached_property
    def memory(self) -> Memory:
        return memory_of(self.trace)

    @cached_property
    def ops(self) -> pl.DataFrame:
        return self.trace.events.filter(pl.col("cat") == "cpu_op").select("id", "name", "dur", "gpu_events")

    def units(self, kind: scopes.Kind, name: str = "") -> _Units:
        key = (kind, name)
        if key not in self._units:
            frame = scopes.units(self.trace, kind, [name] if kind == "annotation" else None)
            missing = None
            if frame.is_empty():
                missing = f"no annotation {name!r} in the trace" if name else "no profiler steps in the trace"
            self._units[key] = _Units(key, frame, kind, missing)
        return self._units[key]

    def step(self, number: int) -> _Units:
        """One ``ProfilerStep#N``."""
        steps = self.units(scopes.STEPS)
        numbers = self.trace.steps.select(pl.col("id").alias("event_id"), "step")
        frame = steps.frame.join(numbers, on="event_id").filter(pl.col("step") == number).drop("step")
        missing = None
        if frame.is_empty():
            present = ", ".join(str(n) for n in numbers["step"].to_list()) or "none"
            missing = f"no ProfilerStep#{number} in the trace (steps: {present})"
        return _Units((scopes.STEPS, str(number)), frame, scopes.STEPS, missing)

    def cpu(self, units: _Units) -> pl.DataFrame:
        key = ("cpu", units.key)
        if key not in self._members:
            self._members[key] = scopes.cpu_members(self.trace, units.kind, units.frame)
        return self._members[key]

    def gpu(self, units: _Units) -> pl.DataFrame:
        key = ("gpu", units.key)
        if key not in self._members:
            cpu = self.cpu(units)
            self._members[key] = scopes.gpu_members(self.trace, units.kind, units.frame, cpu)
        return self._members[key]


def _evaluate(context: _Context, expectation: Expectation) -> list[Result]:
    if expectation.subject == "memory":
        return [_memory_check(context.memory, expectation, check) for check in expectation.checks]
    if expectation.subject == "step" and any(c.quantity == "peak_allocated" for c in expectation.checks):
        units = _span_units(context, expectation)
        return [
            _step_peak_check(context.memory, units, expectation, check)
            if check.quantity == "peak_allocated"
            else _span_check(context.trace, units, expectation, check)
            for check in expectation.checks
        ]
    if expectation.subject in ("annotation", "step"):
        units = _span_units(context, expectation)
        return [_span_check(context.trace, units, expectation, check) for check in expectation.checks]
    units = _per_units(context, expectation.per)
    if units.missing:
        return [_missing(expectation, check, str(units.missing)) for check in expectation.checks]
    if expectation.subject == "kernel":
        return [_kernel_check(context, units, expectation, check) for check in expectation.checks]
    return [_op_check(context, units, expectation, check) for check in expectation.checks]


def _span_units(context: _Context, expectation: Expectation) -> _Units:
    if expectation.subject == "annotation":
        return context.units("annotation", str(expectation.target))
    if expectation.target == ALL_STEPS:
        return context.units(scopes.STEPS)
    return context.step(int(expectation.target))


def _memory_check(memory: Memory, expectation: Expectation, check: Check) -> Result:
    """A device's peak (allocated or reserved); with ``"*"`` the highest of every device's."""
    if not memory.present:
        return _missing(
            expectation, check, "no memory events in the trace (profile_memory=True records them)"
        )
    target = str(expectation.target)
    devices = [d for d in memory.devices if target in (ALL_DEVICES, d.device)]
    if not devices:
        present = ", ".join(d.device for d in memory.devices)
        return _missing(expectation, check, f"no memory events on {target} (devices: {present})")
    if check.quantity == "peak_reserved":
        device = max(devices, key=lambda d: d.peak_reserved)
        value = device.peak_reserved
        actual = f"peak {fmt.beside_limit(value, check.value, 'size')} reserved on {device.device}"
    else:
        device = max(devices, key=lambda d: d.peak["allocated"])
        value = device.peak["allocated"]
        where = ", ".join(str(v) for v in (device.peak["step"], device.peak["op"]) if v is not None)
        shown = fmt.beside_limit(value, check.value, "size")
        actual = f"peak {shown} allocated on {device.device}" + (f" ({where})" if where else "")
    event = device.peak["op_id"] if device.peak["op_id"] is not None else device.peak["step_id"]
    return Result(expectation, check, check.holds(value), actual, value, event)


def _step_peak_check(memory: Memory, units: _Units, expectation: Expectation, check: Check) -> Result:
    """In each step, the highest level any device reached; it must hold in every step."""
    if units.missing:
        return _missing(expectation, check, units.missing)
    if not memory.present:
        return _missing(
            expectation, check, "no memory events in the trace (profile_memory=True records them)"
        )
    peaks = pl.concat([d.steps.select("step_id", "peak") for d in memory.devices])
    per_step = peaks.group_by("step_id").agg(pl.col("peak").max().alias("value"))
    values = units.frame.select("event_id").join(
        per_step.rename({"step_id": "event_id"}), on="event_id", how="left", maintain_order="left"
    )
    values = values.with_columns(pl.col("value").fill_null(0))
    failing = values.filter(~_holds(check))
    worst = int(values["value"].max() or 0)  # type: ignore[arg-type]
    n = values.height
    actual = f"peak {fmt.beside_limit(worst, check.value, 'size')}" + (
        f" (the highest of {fmt.count(n)} steps)" if n > 1 else " in the one step"
    )
    event = failing["event_id"][0] if failing.height else values["event_id"][0]
    return Result(expectation, check, failing.is_empty(), actual, worst, event)


def _per_units(context: _Context, per: str | None) -> _Units:
    if per is None:
        return context.units(scopes.TRACE)
    if per == PER_STEP:
        return context.units(scopes.STEPS)
    units = context.units("annotation", per)
    if units.missing:
        return _Units(units.key, units.frame, units.kind, f"per: {units.missing}")
    return units


def _missing(expectation: Expectation, check: Check, why: str) -> Result:
    # An upper bound on calls holds trivially when there are none.
    value = 0 if check.quantity == "calls" else None
    passed = value is not None and check.holds(value)
    return Result(expectation, check, passed, why, value, None)


WHY_QUANTITIES = ("critical_path_gpu_pct", "gpu_idle_pct")


def _why_values(trace: Trace, units: _Units, quantity: str) -> pl.DataFrame:
    """``(event_id, value)`` per unit: its critical path's GPU share or its GPU idle share (%), the
    figures of :mod:`tracetui.insight.why_data` (a unit without one: 0)."""
    if quantity == "critical_path_gpu_pct":
        if units.kind == scopes.STEPS:
            paths = step_paths(trace)
        else:  # the units' calls only
            paths = annotation_paths(trace, units.frame["event_id"].drop_nulls().to_list())
        figures = paths.spans.select(
            pl.col("span").alias("event_id"),
            pl.when(pl.col("length_us") > 0)
            .then(100.0 * pl.col("gpu_us") / pl.col("length_us"))
            .alias("value"),
        )
    else:
        idle = step_idle(trace).group_by("span").agg(pl.col("window_us").first(), pl.col("idle_us").sum())
        figures = idle.select(
            pl.col("span").alias("event_id"),
            pl.when(pl.col("window_us") > 0)
            .then(100.0 * pl.col("idle_us") / pl.col("window_us"))
            .alias("value"),
        )
    return (
        units.frame.select("event_id")
        .join(figures, on="event_id", how="left", maintain_order="left")
        .with_columns(pl.col("value").fill_null(0.0))
    )


def _span_check(trace: Trace, units: _Units, expectation: Expectation, check: Check) -> Result:
    frame = units.frame
    if check.quantity == "calls":
        n = len(frame)
        event = frame["event_id"][0] if n else None
        shown = fmt.beside_limit(n, check.value, "count")
        return Result(expectation, check, check.holds(n), f"{shown} {units.noun}s", n, event)
    if units.missing:
        return _missing(expectation, check, units.missing)
    if check.quantity in WHY_QUANTITIES:
        return _count_result(
            _why_values(trace, units, check.quantity), units, expectation, check, percent=True
        )
    values = frame.select("event_id", pl.col(SPAN_COLUMNS[check.quantity]).alias("value"))
    if check.quantity in ("gpu_us", "cpu_us"):
        return _mean_result(values, units, expectation, check)
    return _count_result(values, units, expectation, check)


def _count_result(
    values: pl.DataFrame, units: _Units, expectation: Expectation, check: Check, percent: bool = False
) -> Result:
    """Counts (and percentages) hold in every unit; the value reported is the worst unit's."""
    low, high = values.select(pl.col("value").min().alias("low"), pl.col("value").max().alias("high")).row(0)
    failing = values.filter(~_holds(check))
    if check.comparison == ">=":
        worst = low
    elif check.comparison == "<=":
        worst = high
    else:
        worst = failing["value"][0] if len(failing) else low
    n = len(values)
    kind: fmt.Figure = "percent" if percent else "count"
    shown_low, shown_high = (fmt.beside_limit(v, check.value, kind) for v in (low, high))
    if units.kind == scopes.TRACE:
        actual = f"{shown_low} in the trace"
    elif low == high:
        actual = (
            f"{shown_low} in each of {fmt.count(n)} {units.noun}s"
            if n > 1
            else f"{shown_low} in the one {units.noun}"
        )
    else:
        actual = f"{shown_low}–{shown_high} over {fmt.count(n)} {units.noun}s"
    event = failing["event_id"][0] if len(failing) else values["event_id"][0]
    return Result(expectation, check, failing.is_empty(), actual, worst if percent else int(worst), event)


def _holds(check: Check) -> pl.Expr:
    """``check`` as an expression over a ``value`` column."""
    value = pl.col("value")
    if check.comparison == ">=":
        return value >= check.value
    if check.comparison == "<=":
        return value <= check.value
    return value == check.value


def _mean_result(values: pl.DataFrame, units: _Units, expectation: Expectation, check: Check) -> Result:
    """Times are the mean per unit."""
    mean = float(values.select(pl.col("value").mean().fill_null(0.0)).item())
    n = len(values)
    shown = fmt.beside_limit(mean, check.value, "duration")
    if units.kind == scopes.TRACE:
        actual = f"{shown} in the trace"
    elif n > 1:
        actual = f"{shown} per {units.noun} (mean of {fmt.count(n)})"
    else:
        actual = f"{shown} in the one {units.noun}"
    event = values["event_id"][0]
    return Result(expectation, check, check.holds(mean), actual, mean, event)


def _per_unit(units: _Units, rows: pl.DataFrame, value: pl.Expr) -> pl.DataFrame:
    """``(event_id, value)`` for every unit: ``value`` aggregated over its ``rows`` (0 when none)."""
    sums = rows.group_by("unit").agg(value.alias("value"))
    return (
        units.frame.select("unit", "event_id")
        .join(sums, on="unit", how="left")
        .with_columns(pl.col("value").fill_null(0))
        .select("event_id", "value")
    )


def _kernel_check(context: _Context, units: _Units, expectation: Expectation, check: Check) -> Result:
    work = context.gpu(units)
    names = matching(work["name"].unique().to_list(), str(expectation.target))
    rows = work.filter(pl.col("name").is_in(names))
    if check.quantity == "count":
        return _count_result(_per_unit(units, rows, pl.len()), units, expectation, check)
    return _mean_result(_per_unit(units, rows, pl.col("dur").sum()), units, expectation, check)


def _op_check(context: _Context, units: _Units, expectation: Expectation, check: Check) -> Result:
    ops = context.cpu(units).join(context.ops, on="id")
    names = matching(ops["name"].unique().to_list(), str(expectation.target))
    calls = ops.filter(pl.col("name").is_in(names))
    if check.quantity == "count":
        return _count_result(_per_unit(units, calls, pl.len()), units, expectation, check)
    if check.quantity == "launches_kernels":
        return _launch_result(calls, units, expectation, check)
    if check.quantity == "cpu_us":
        outer = calls.join(_outermost(context, names), on="id")
        return _mean_result(_per_unit(units, outer, pl.col("dur").sum()), units, expectation, check)
    work = context.gpu(units).join(_launched_inside(context, names), on="launch_id")
    return _mean_result(_per_unit(units, work, pl.col("dur").sum()), units, expectation, check)


def _launch_result(calls: pl.DataFrame, units: _Units, expectation: Expectation, check: Check) -> Result:
    """``true``: every matching call launched GPU work; ``false``: none did."""
    n = len(calls)
    if n == 0:
        where = "the trace" if units.kind == scopes.TRACE else f"its {len(units.frame)} {units.noun}s"
        return _missing(expectation, check, f"no op matches {expectation.target!r} in {where}")
    launched = calls.filter(pl.col("gpu_events") > 0)
    k = len(launched)
    if k == n:
        actual = f"all {n} op calls launched GPU work"
    elif k == 0:
        actual = f"none of {n} op calls launched GPU work"
    else:
        actual = f"{k} of {n} op calls launched GPU work"
    expected = bool(check.value)
    value = k == n if expected else k > 0  # the claim, measured: "all launched" / "any launched"
    offenders = calls.filter((pl.col("gpu_events") > 0) != expected)
    event = offenders["id"][0] if len(offenders) else calls["id"][0]
    return Result(expectation, check, value == expected, actual, value, event)


def _outermost(context: _Context, names: list[str]) -> pl.DataFrame:
    """``id`` of matching op calls with no matching op above them (so nested time counts once)."""
    tree = context.tree
    marked = (pl.col("cat") == "cpu_op") & pl.col("name").is_in(names)
    above = ancestor_ids(tree, marked, include_self=False)
    return tree.with_columns(above=above).filter(marked & pl.col("above").is_null()).select("id")


def _launched_inside(context: _Context, names: list[str]) -> pl.DataFrame:
    """``launch_id`` of runtime calls below a matching op."""
    tree = context.tree
    marked = (pl.col("cat") == "cpu_op") & pl.col("name").is_in(names)
    above = ancestor_ids(tree, marked, include_self=False)
    return (
        tree.with_columns(above=above)
        .filter(pl.col("above").is_not_null())
        .select(pl.col("id").alias("launch_id"))
    )
