"""Insight on a loaded trace: decoded kernels with their roofline, step and annotation verdicts,
and the CPU cost of ``torch.compile``'s pre-ops.

These join the pure decoders (:mod:`kernel_names`, :mod:`flops`, :mod:`roofline`) to the trace
model; the summary, export and the viewer all read them from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.formatting import duration_expr, percent_expr
from tracetui.insight.compile_names import COMPILED_REGION, compile_wrapper
from tracetui.insight.flops import op_cost_columns
from tracetui.insight.kernel_names import kernel_name_columns
from tracetui.insight.roofline import roofline_columns
from tracetui.trace.categories import GPU_WORK, LAUNCH_CALLS
from tracetui.trace.stats import DUR_NS, mean_us, merged_intervals, sum_us

if TYPE_CHECKING:
    from tracetui.trace import Trace

KERNEL_FIELDS = ("family", "kind", "arch", "tile", "stages", "layout", "fused_ops", "short")
SYNC_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent")
BUSY_GPU_BOUND = 0.8  # GPU busy over the step's window at or above which a step is GPU-bound


def kernel_costs(trace: Trace) -> pl.DataFrame:
    """One row per GPU work event: its decoded name and the cost of its launching op.

    An op's FLOPs and bytes are spread over the kernels it launched: each kernel carries the op's
    cost and the op's total kernel time (``op_kernel_us``), so a split-K GEMM (two kernels) is not
    counted twice. Memcpys carry their ``bytes`` arg; memsets nothing.
    """
    gpu = trace.gpu.filter(pl.col("cat").is_in(GPU_WORK)).select(
        "id", "name", "cat", "dur", "start_ns", "end_ns", "device", "launch_op_id", "bytes"
    )
    names = kernel_name_columns(gpu["name"]).select("name", *KERNEL_FIELDS, "notes")
    ops = (
        trace.events.select(pl.col("id").alias("launch_op_id"), pl.col("name").alias("op"))
        .join(trace.launch_shapes.rename({"id": "launch_op_id"}), on="launch_op_id")
        .drop("input_strides")
    )
    rows = gpu.join(names, on="name", how="left").join(ops, on="launch_op_id", how="left")
    costs = op_cost_columns(rows, name="op")
    keys = ["op", "input_dims", "input_type", "concrete_inputs"]
    rows = rows.join(costs, on=keys, how="left", nulls_equal=True)
    is_kernel = pl.col("cat") == "kernel"
    return rows.with_columns(
        op_kernel_us=pl.when(is_kernel & pl.col("launch_op_id").is_not_null())
        .then(sum_us(DUR_NS).over("launch_op_id", is_kernel))
        .otherwise(pl.col("dur")),
        flops=pl.when(is_kernel).then(pl.col("flops")),
        bytes=pl.when(is_kernel)
        .then(pl.col("bytes_right"))
        .when(pl.col("cat") == "gpu_memcpy")
        .then(pl.col("bytes")),
    ).drop("bytes_right")


def kernel_insight(trace: Trace) -> pl.DataFrame:
    """:func:`kernel_costs` with each event's roofline (rates over its op's kernel time)."""
    rows = kernel_costs(trace)
    dropped = ("name", "cat", "dur", "start_ns", "end_ns", "device")
    return _with_roofline(trace, rows, "op_kernel_us").sort("id").drop(dropped)


def kernels_table(trace: Trace) -> pl.DataFrame:
    """One row per GPU event: where it ran, what launched it, and what its name and shapes say."""
    names = trace.events.select("id", "name")
    gpu = trace.gpu.select(
        "id",
        "name",
        pl.col("cat").alias("category"),
        "ts",
        "dur",
        "device",
        "stream",
        "correlation",
        "launch_id",
        "launch_op_id",
        "annotation_id",
        "step_id",
    )
    linked = (
        gpu.join(names.rename({"id": "launch_id", "name": "runtime"}), on="launch_id", how="left")
        .join(names.rename({"id": "launch_op_id", "name": "launch_op"}), on="launch_op_id", how="left")
        .join(names.rename({"id": "annotation_id", "name": "annotation"}), on="annotation_id", how="left")
        .join(names.rename({"id": "step_id", "name": "step"}), on="step_id", how="left")
        .with_columns(pl.col("launch_op").fill_null(""))
    )
    insight = kernel_insight(trace).select(
        "id",
        "family",
        "kind",
        "arch",
        "tile",
        "stages",
        "layout",
        "fused_ops",
        "short",
        "flops",
        "bytes",
        "tflops",
        "gbs",
        "intensity",
        "bound",
        "verdict",
    )
    table = linked.join(insight, on="id", how="left")
    first = [
        "name",
        "ts",
        "dur",
        "device",
        "stream",
        "correlation",
        "runtime",
        "launch_op",
        "launch_op_id",
        "annotation",
        "step",
        "category",
    ]
    return table.sort("ts").select(first + [c for c in table.columns if c not in first])


def kernel_rooflines(trace: Trace) -> pl.DataFrame:
    """Per kernel name (and device) with a known cost: total time, FLOPs and bytes, and the
    roofline reading of the aggregate. An op's cost is shared among its kernels by time."""
    kernels = kernel_costs(trace).filter(pl.col("flops").is_not_null() | pl.col("bytes").is_not_null())
    share = pl.when(pl.col("op_kernel_us") > 0).then(DUR_NS / 1000 / pl.col("op_kernel_us"))
    totals = kernels.group_by("name", "device").agg(
        pl.len().alias("calls"),
        sum_us().alias("time_us"),
        (pl.col("flops") * share).sum().alias("flops"),
        (pl.col("bytes") * share).sum().alias("bytes"),
        pl.col("cost_dtype").drop_nulls().first(),
        pl.col("kind").first(),
        pl.col("short").first(),
    )
    return _with_roofline(trace, totals, "time_us").sort(["time_us", "name"], descending=[True, False])


def _with_roofline(trace: Trace, rows: pl.DataFrame, dur: str) -> pl.DataFrame:
    """``rows`` with roofline columns against each row's device peaks."""
    device_names = {d.get("id"): d.get("name") for d in trace.devices}
    parts = [
        roofline_columns(part, device_names.get(device), dur=dur, dtype="cost_dtype", kind="kind")
        for (device,), part in rows.group_by("device", maintain_order=True)
    ] or [roofline_columns(rows, None, dur=dur, dtype="cost_dtype", kind="kind")]
    return pl.concat(parts, how="diagonal_relaxed")


def step_verdicts(trace: Trace) -> pl.DataFrame:
    """Per step: GPU busy share of the step, idle gaps, CPU launch time vs GPU time, a verdict."""
    steps = trace.step_instances
    work = trace.gpu.filter(pl.col("cat").is_in(GPU_WORK) & pl.col("step_id").is_not_null())
    return _verdicts(steps, work.rename({"step_id": "span"}), _sync_time(trace, "step_id"))


def annotation_verdicts(trace: Trace) -> pl.DataFrame:
    """Per annotation instance: the same reading as :func:`step_verdicts`, over the annotation."""
    spans = trace.annotation_instances
    calls = trace.events.select(pl.col("id").alias("launch_id"), pl.col("pos").alias("call_pos"))
    work = (
        trace.gpu.filter(pl.col("cat").is_in(GPU_WORK) & pl.col("launch_id").is_not_null())
        .join(calls, on="launch_id")
        .join_where(
            spans.select(pl.col("id").alias("span"), "pos", "end_pos"),
            pl.col("call_pos") >= pl.col("pos"),
            pl.col("call_pos") < pl.col("end_pos"),
        )
    )
    return _verdicts(spans, work, _sync_time(trace, "annotation_id"))


def _sync_time(trace: Trace, by: str) -> pl.DataFrame:
    """CPU time spent waiting in synchronize calls, per step or annotation."""
    syncs = trace.events.filter(pl.col("cat").is_in(LAUNCH_CALLS) & pl.col("name").is_in(SYNC_CALLS))
    return syncs.group_by(by).agg(sum_us().alias("sync_us")).rename({by: "span"})


def _verdicts(spans: pl.DataFrame, work: pl.DataFrame, sync: pl.DataFrame) -> pl.DataFrame:
    gpu_end = work.group_by("span").agg(pl.col("end_ns").max().alias("gpu_end"))
    gaps = _idle_gaps(work)
    table = (
        spans.select("id", "name", "start_ns", "end_ns", "dur", "gpu_us", "gpu_busy_us", "gpu_events")
        .join(gpu_end, left_on="id", right_on="span", how="left")
        .join(gaps, left_on="id", right_on="span", how="left")
        .join(sync, left_on="id", right_on="span", how="left")
        .with_columns(pl.col("sync_us", "idle_gaps", "largest_gap_us").fill_null(0))
        .with_columns(window_us=(pl.max_horizontal("end_ns", "gpu_end") - pl.col("start_ns")) / 1000.0)
        .with_columns(
            cpu_launch_us=(pl.col("dur") - pl.col("sync_us")).clip(0),
            gpu_busy_pct=pl.when(pl.col("window_us") > 0).then(
                100.0 * pl.col("gpu_busy_us") / pl.col("window_us")
            ),
        )
    )
    numbers = pl.format(
        "CPU {} to launch {} of GPU work; GPU busy {} of {}",
        duration_expr(pl.col("cpu_launch_us")),
        duration_expr(pl.col("gpu_busy_us")),
        percent_expr(pl.col("gpu_busy_pct")),
        duration_expr(pl.col("window_us")),
    )
    verdict = (
        pl.when(pl.col("gpu_events").fill_null(0) == 0)
        .then(pl.lit("no GPU work"))
        .when(pl.col("cpu_launch_us") > pl.col("gpu_busy_us"))
        .then(pl.format("launch/overhead-bound: {}", numbers))
        .when(pl.col("gpu_busy_pct") >= 100 * BUSY_GPU_BOUND)
        .then(pl.format("GPU-bound: {}", numbers))
        .otherwise(pl.format("GPU waits outside launches (sync, data, Python): {}", numbers))
    )
    bound = (
        pl.when(pl.col("gpu_events").fill_null(0) == 0)
        .then(pl.lit("idle"))
        .when(pl.col("cpu_launch_us") > pl.col("gpu_busy_us"))
        .then(pl.lit("launch-bound"))
        .when(pl.col("gpu_busy_pct") >= 100 * BUSY_GPU_BOUND)
        .then(pl.lit("gpu-bound"))
        .otherwise(pl.lit("gpu-waits"))
    )
    return table.with_columns(bound=bound, verdict=verdict).drop("end_ns", "gpu_end").sort("start_ns")


def _idle_gaps(work: pl.DataFrame, min_gap_ns: int = 1000) -> pl.DataFrame:
    """Per span: number of gaps ≥ 1 µs between GPU work and the largest one (µs)."""
    busy = merged_intervals(work, "span")
    gaps = busy.with_columns(gap=pl.col("start_ns") - pl.col("end_ns").shift(1).over("span"))
    return gaps.group_by("span").agg(
        (pl.col("gap") >= min_gap_ns).sum().alias("idle_gaps"),
        (pl.col("gap").max().fill_null(0) / 1000.0).alias("largest_gap_us"),
    )


def compile_overheads(trace: Trace) -> pl.DataFrame:
    """CPU cost per call of ``torch.compile``'s pre-ops, and of the compiled-region wrapper.

    The wrapper overhead of a ``Torch-Compiled Region`` is its CPU time minus the time inside
    the Inductor graph call (``## Call CompiledFxGraph … ##``) below it.
    """
    events = trace.events
    preops = events.filter((pl.col("cat") == "cpu_op") & compile_wrapper())
    regions = events.filter(pl.col("name").str.starts_with(COMPILED_REGION)).select(
        "id", "track", "pos", "end_pos", DUR_NS.alias("dur_ns")
    )
    graphs = events.filter(pl.col("name").str.contains(r"^## Call CompiledFxGraph")).select(
        "track", pl.col("pos").alias("graph_pos"), DUR_NS.alias("graph_ns")
    )
    wrapper = pl.DataFrame(schema={"name": pl.String, "dur_ns": pl.Int64})
    if not regions.is_empty() and not graphs.is_empty():
        wrapper = (
            regions.join_where(
                graphs,
                pl.col("track") == pl.col("track_right"),
                pl.col("graph_pos") > pl.col("pos"),
                pl.col("graph_pos") < pl.col("end_pos"),
            )
            .group_by("id", "dur_ns")
            .agg(pl.col("graph_ns").sum())
            .select(
                pl.lit(f"{COMPILED_REGION} wrapper (outside the graph call)").alias("name"),
                (pl.col("dur_ns") - pl.col("graph_ns")).alias("dur_ns"),
            )
        )
    rows = pl.concat([preops.select("name", DUR_NS.alias("dur_ns")), wrapper])
    return (
        rows.group_by("name")
        .agg(
            pl.len().alias("calls"),
            mean_us(pl.col("dur_ns")).alias("avg_us"),
            sum_us(pl.col("dur_ns")).alias("total_us"),
        )
        .sort(["total_us", "name"], descending=[True, False])
    )


def span_us(trace: Trace) -> float:
    """The trace's span (µs): from its first event's start to its last event's end."""
    bounds = trace.events.select(pl.col("end_ns").max().fill_null(0) - pl.col("start_ns").min().fill_null(0))
    return float(bounds.item()) / 1000.0


def gpu_work_union_us(trace: Trace) -> float:
    """GPU busy time over the whole trace (µs): the union of all GPU work intervals."""
    busy = merged_intervals(trace.gpu.filter(pl.col("cat").is_in(GPU_WORK)))
    return float((busy["end_ns"] - busy["start_ns"]).sum()) / 1000.0
