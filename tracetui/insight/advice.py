"""What to change, with an estimate: a ranked list of actions, each grounded in the trace's
readings and each from one rule with a stated threshold (docs/why.md, "What to try").

A rule is a function of :class:`Readings` (the figures already computed: the steps' verdicts,
critical paths, idle time, the kernels' rooflines) returning :class:`Advice` items; :data:`RULES`
lists them, and a new rule (the straggler's cause, for a run of ranks) is one more function there.
``saving_us`` is per step (per trace when the trace has no steps): what the step would lose if the
action worked as estimated, never more than the time the evidence names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui import formatting as fmt
from tracetui.insight.critical_path import CriticalPaths, pieces, step_paths
from tracetui.insight.idle import annotation_host_wait
from tracetui.insight.kernels import kernel_rooflines
from tracetui.insight.launch_gaps import launch_gaps

if TYPE_CHECKING:
    from tracetui.trace import Trace

LAUNCH_GPU_SHARE_MAX = 0.5
"""Launch-bound advice: the median step's critical path is at most this share on the GPU (and its
CPU launch time exceeds its GPU busy time: the step verdict's launch-bound)."""
HIGH_CONFIDENCE_GPU_SHARE = 0.25
FUSION_KINDS = ("elementwise", "pointwise")
"""Kernel kinds (decoded names) a fusion merges: memory-bound pointwise work."""
RUN_GAP = 1
"""Fusion advice: pointwise kernels at most this many other kernels apart on a stream are one run."""
FUSION_MIN_SAVING_US = 5.0
FUSION_MIN_SHARE = 0.01
"""Fusion advice: a run of back-to-back memory-bound pointwise kernels whose estimated saving is at
least this many µs and this share of the median step."""
SYNC_MIN_SHARE = 0.02
"""Sync advice: removing the blocking calls on the median step's critical path saves at least this
share of it."""
IDLE_MIN_SHARE = 0.10
IDLE_MIN_US = 50.0
"""Data loader / optimizer advice: the GPU waits for the host inside one of these annotations for at
least this share of the median step and this many µs."""
DATA_LOADER = "enumerate(DataLoader)"
OPTIMIZER = ("Optimizer.step#", "Optimizer.zero_grad#")
CONFIDENCES = ("high", "medium", "low")


@dataclass(frozen=True)
class Advice:
    """One action: what to do, why (the trace's figures), what it should save per step, how sure."""

    rule: str
    action: str
    evidence: str
    saving_us: float
    confidence: str

    def record(self) -> dict[str, Any]:
        return asdict(self)


class Readings:
    """The figures the rules read, each computed once (and only when a rule asks)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    @cached_property
    def steps(self) -> pl.DataFrame:
        from tracetui.insight.spans import verdicts

        return verdicts(self.trace)[0]

    @cached_property
    def paths(self) -> CriticalPaths:
        return step_paths(self.trace)

    @cached_property
    def median_step(self) -> dict[str, Any] | None:
        """The median step by length, with its verdict's and critical path's figures."""
        steps = self.steps
        if steps.is_empty():
            return None
        path = self.paths.spans.drop("name", "start_ns", "end_ns")
        path = path.rename({c: f"path_{c}" for c in path.columns if c != "span"} | {"span": "id"})
        joined = steps.join(path, on="id", how="left")
        ordered = joined.sort("path_length_us", "id", nulls_last=True)
        return ordered.row(len(ordered) // 2, named=True)

    @cached_property
    def step_count(self) -> int:
        return max(len(self.steps), 1)

    @cached_property
    def step_length_us(self) -> float:
        """The median step's window (µs); the trace's GPU work span when there are no steps."""
        step = self.median_step
        if step is not None and step.get("path_length_us"):
            return float(step["path_length_us"])
        gaps = launch_gaps(self.trace)
        if gaps.is_empty():
            return 0.0
        return (int(gaps["end_ns"].max()) - int(gaps["start_ns"].min())) / 1000.0  # type: ignore[arg-type]


Rule = Callable[[Readings], list[Advice]]


def advice(trace: Trace) -> list[Advice]:
    """Every rule's advice, the largest saving first (then by rule)."""
    readings = Readings(trace)
    found = [item for rule in RULES for item in rule(readings)]
    return sorted(found, key=lambda a: (-a.saving_us, a.rule, a.action))


def launch_bound(readings: Readings) -> list[Advice]:
    """A launch-bound step (CPU launch time above GPU busy time, the GPU at most
    :data:`LAUNCH_GPU_SHARE_MAX` of its critical path) → CUDA graphs / reduce-overhead; saving: the
    dispatch time on its critical path (CPU ops and launches, which a graph replay removes), but no
    more than the step's time beyond its GPU busy time (a replayed step still runs its GPU work)."""
    step = readings.median_step
    if step is None or not step.get("path_length_us"):
        return []
    gpu_share = step["path_gpu_us"] / step["path_length_us"]
    if step["bound"] != "launch-bound" or gpu_share > LAUNCH_GPU_SHARE_MAX:
        return []
    length = float(step["path_length_us"])
    dispatch = float(step["path_cpu_us"]) + float(step["path_launch_us"])
    saving = max(min(dispatch, length - float(step["gpu_busy_us"])), 0.0)
    graphs = readings.trace.runtime.filter(pl.col("name") == "cudaGraphLaunch").height > 0
    action = (
        "capture more of the step in the CUDA graph (the launches outside it set the step's length)"
        if graphs
        else 'replay the step as a CUDA graph: torch.compile(mode="reduce-overhead") or torch.cuda.graphs'
    )
    evidence = (
        f"median step {step['name']}: CPU {fmt.duration(step['cpu_launch_us'])} to launch "
        f"{fmt.duration(step['gpu_busy_us'])} of GPU work; its critical path ({fmt.duration(length)}) is "
        f"{path_shares(step)}"
    )
    gaps_share = float(step["path_gap_us"]) / length
    confidence = (
        "high"
        if gpu_share <= HIGH_CONFIDENCE_GPU_SHARE and gaps_share < HIGH_CONFIDENCE_GPU_SHARE
        else "medium"
    )
    return [Advice("launch_bound", action, evidence, saving, confidence)]


def path_shares(path: dict[str, Any]) -> str:
    """``62% CPU ops, 12% launches, 24% gaps, 2% GPU`` (the parts of a critical path, largest first)."""
    names = {
        "cpu_us": "CPU ops",
        "launch_us": "launches",
        "sync_wait_us": "sync waits",
        "gap_us": "gaps",
        "gpu_us": "GPU",
    }
    length = float(path["path_length_us"]) or 1.0
    parts = sorted(((float(path[f"path_{k}"]) / length, label) for k, label in names.items()), reverse=True)
    return ", ".join(f"{fmt.percent(100 * share)} {label}" for share, label in parts if share > 0)


def fusion(readings: Readings) -> list[Advice]:
    """Runs of memory-bound pointwise kernels close together on a stream (the same names in the same
    order, counted over the trace) → fuse them; saving from the roofline: the run's time less the time
    to move only the largest member's bytes at the run's achieved bandwidth (the intermediate tensors
    no longer written and read back)."""
    runs = pointwise_runs(readings.trace)
    if runs.is_empty():
        return []
    step_us = readings.step_length_us
    found = []
    for row in runs.iter_rows(named=True):
        per_step = row["saving_us"] / readings.step_count
        if per_step < FUSION_MIN_SAVING_US or (step_us and per_step < FUSION_MIN_SHARE * step_us):
            continue
        names = " → ".join(row["shorts"])
        evidence = (
            f"{names}: {fmt.count(row['count'])} times close together "
            f"({fmt.duration(row['us'] / row['count'])} each, "
            f"{fmt.size(row['bytes'] / row['count'])} moved, each kernel memory-bound); fused, only about "
            f"{fmt.size(row['largest_bytes'])} would move"
        )
        action = "fuse these pointwise kernels (torch.compile, or one hand-written Triton kernel)"
        found.append(Advice("fusion", action, evidence, per_step, "medium"))
    return found


def pointwise_runs(trace: Trace) -> pl.DataFrame:
    """Runs of ≥ 2 memory-bound pointwise kernels on a lane (at most :data:`RUN_GAP` other kernels
    apart), grouped by their names in
    order: ``names``, ``shorts``, ``count`` (occurrences), ``us`` (their time), ``bytes`` (their
    roofline bytes), ``largest_bytes`` (per occurrence, the largest member's), ``saving_us``
    (total over the occurrences), the largest saving first."""
    gaps = launch_gaps(trace)
    rooflines = kernel_rooflines(trace)
    schema: dict[str, pl.DataType] = {
        "names": pl.List(pl.String),
        "shorts": pl.List(pl.String),
        "count": pl.UInt32(),
        "us": pl.Float64(),
        "bytes": pl.Float64(),
        "largest_bytes": pl.Float64(),
        "saving_us": pl.Float64(),
    }
    if gaps.is_empty() or rooflines.is_empty():
        return pl.DataFrame(schema=schema)
    fusable = rooflines.filter(
        (pl.col("bound") == "memory-bound") & pl.col("kind").is_in(FUSION_KINDS) & (pl.col("bytes") > 0)
    ).select(
        pl.col("name").cast(pl.Categorical),  # as the lanes hold it
        "short",
        (pl.col("bytes") / pl.col("calls")).alias("call_bytes"),
    )
    work = (
        gaps.filter(pl.col("cat") == "kernel")
        .select("lane", "name", "start_ns", "end_ns")
        .with_columns(position=pl.int_range(pl.len()).over("lane"))
        .join(fusable, on="name", how="inner", maintain_order="left")
    )
    # a run: fusable kernels of a lane at most RUN_GAP kernels apart (a GEMM between the gelu and the
    # mul it feeds, as in a GeGLU MLP, keeps them one run)
    far = (pl.col("position") - pl.col("position").shift(1)) > RUN_GAP + 1
    opens = (pl.col("lane") != pl.col("lane").shift(1)).fill_null(True) | far.fill_null(True)
    runs = (
        work.with_columns(run=opens.cum_sum())
        .group_by("run", maintain_order=True)
        .agg(
            pl.col("name"),
            pl.col("short"),
            ((pl.col("end_ns") - pl.col("start_ns")).sum() / 1000.0).alias("us"),
            pl.col("call_bytes").sum().alias("bytes"),
            pl.col("call_bytes").max().alias("largest_bytes"),
        )
        .filter(pl.col("name").list.len() >= 2)
    )
    if runs.is_empty():
        return pl.DataFrame(schema=schema)
    saving = pl.col("us") * (1 - pl.col("largest_bytes") / pl.col("bytes"))
    return (
        runs.with_columns(saving_us=saving)
        .group_by("name")
        .agg(
            pl.col("short").first().alias("shorts"),
            pl.len().alias("count"),
            pl.col("us").sum(),
            pl.col("bytes").sum(),
            pl.col("largest_bytes").mean(),
            pl.col("saving_us").sum(),
        )
        .rename({"name": "names"})
        .sort(["saving_us", "count"], descending=True)
        .select(list(schema))
        .cast(schema)  # type: ignore[arg-type]
    )


def syncs(readings: Readings) -> list[Advice]:
    """Blocking calls on the median step's critical path → name the op that made them (and its python
    frame, with with_stack); saving: the time the host waited in them, but no more than the host's
    part of the path (CPU ops, launches, gaps: what would overlap the GPU without the wait), at
    least :data:`SYNC_MIN_SHARE` of the step."""
    step = readings.median_step
    if step is None or not step.get("path_length_us"):
        return []
    waits = pieces(readings.trace, readings.paths, [step["id"]]).filter(pl.col("kind") == "sync")
    calls = waits.drop_nulls("id")["id"].unique()
    if calls.is_empty():
        return []
    trace = readings.trace
    rows = trace.lookup(calls, "id", "name", "start_ns", "end_ns", "op_id")
    rows = rows.with_columns(
        trace.lookup(rows["op_id"], "name")["name"].cast(pl.String).alias("op"),
        pl.col("name").cast(pl.String),
    )
    waited = float((rows["end_ns"] - rows["start_ns"]).sum()) / 1000.0
    # without the wait the host's work would overlap the GPU's: no more than the host's share of the path
    host = float(step["path_cpu_us"]) + float(step["path_launch_us"]) + float(step["path_gap_us"])
    saving = min(waited, host)
    if saving < SYNC_MIN_SHARE * step["path_length_us"]:
        return []
    by_op = (
        rows.group_by("op", "name")
        .agg(
            ((pl.col("end_ns") - pl.col("start_ns")).sum() / 1000.0).alias("us"),
            pl.len().alias("n"),
            pl.col("id").first(),
        )
        .sort(["us", "op"], descending=[True, False], nulls_last=True)
    )
    top = by_op.row(0, named=True)
    frame = _python_frame(trace, int(top["id"]))
    where = f" at {frame}" if frame else ""
    if top["op"] is None:
        culprit = f"{top['name']} outside any op (torch.cuda.synchronize() or a stream sync){where}"
        action = f"remove or defer the {culprit}"
    else:
        item = (
            " (.item(), .tolist() or a Python read of a GPU value)"
            if top["op"] == "aten::_local_scalar_dense"
            else ""
        )
        culprit = f"{top['name']} in {top['op']}{item}{where}"
        action = (
            f"remove or defer the synchronisation in {top['op']}{where}: keep the value on the GPU, "
            "read it once per step"
        )
    evidence = (
        f"median step {step['name']}: {fmt.count(len(rows))} blocking call(s) on its critical path, "
        f"the host waited {fmt.duration(waited)}; most in {culprit} "
        f"({fmt.count(top['n'])}×, {fmt.duration(top['us'])})"
    )
    return [Advice("sync", action, evidence, saving, "medium")]


def _python_frame(trace: Trace, event_id: int) -> str | None:
    """The innermost python frame above an event (with_stack traces), else None."""
    for ancestor in reversed(trace.ancestors(event_id)):
        row = trace.lookup(pl.Series([ancestor], dtype=pl.UInt32), "cat", "name").row(0, named=True)
        if row["cat"] == "python_function":
            return str(row["name"])
    return None


def idle_behind_host(readings: Readings) -> list[Advice]:
    """The GPU waiting for the host inside a data loader's or an optimizer's annotation (at least
    :data:`IDLE_MIN_SHARE` of the median step and :data:`IDLE_MIN_US`) → name it; saving: that wait."""
    waits = annotation_host_wait(readings.trace)
    if waits.is_empty():
        return []
    step_us = readings.step_length_us
    found = []
    loader = pl.col("name").str.starts_with(DATA_LOADER)
    optimizer = pl.any_horizontal(*(pl.col("name").str.starts_with(p) for p in OPTIMIZER))
    for kind, which in (("data_loader", loader), ("optimizer", optimizer)):
        rows = waits.filter(which)
        if rows.is_empty():
            continue
        per_name = (
            rows.group_by("name")
            .agg(pl.col("host_wait_us").sum() / readings.step_count)
            .sort("host_wait_us", descending=True)
        )
        name, per_step = per_name.row(0)
        if per_step < IDLE_MIN_US or (step_us and per_step < IDLE_MIN_SHARE * step_us):
            continue
        evidence = (
            f"the GPU waits {fmt.duration(per_step)} per step for the host inside {name} "
            f"({fmt.percent(100 * per_step / step_us) if step_us else '?'} of the median step)"
        )
        if kind == "data_loader":
            action = (
                f"feed the GPU ahead of {name}: DataLoader(num_workers>0, pin_memory=True, "
                "prefetch_factor), non_blocking copies"
            )
            confidence = "medium"
        else:
            action = (
                f"shorten {name}: a fused or foreach optimizer (fused=True), or torch.compile the "
                "optimizer step"
            )
            confidence = "low"
        found.append(Advice(kind, action, evidence, per_step, confidence))
    return found


RULES: tuple[Rule, ...] = (launch_bound, fusion, syncs, idle_behind_host)
"""Every rule, in the order they are listed when savings tie."""
