"""The reading of each step and annotation: GPU busy share, CPU launch time against GPU time, a
verdict (launch-bound, GPU-bound, GPU waits), and the threads that launched its work."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.formatting import count_expr, duration_expr, percent_expr
from tracetui.trace.categories import LAUNCH_CALLS
from tracetui.trace.memo import kept
from tracetui.trace.stats import most_common, sum_us

if TYPE_CHECKING:
    from tracetui.trace import Trace

SYNC_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent")
BUSY_GPU_BOUND = 0.8  # GPU busy over the step's window at or above which a step is GPU-bound
THREAD_FIELDS = ("thread", "here", "kernels", "memcpys", "memsets", "gpu_events", "gpu_us")


def span_readings(trace: Trace) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(steps, annotations)``: the steps table with each step's reading (:func:`verdicts`), and the
    annotations table with each name's (its most common bound, its median call's verdict); each
    with its kernels launched from other threads (``kernels_split``; an annotation's per call) and
    the work of each thread (``threads``)."""
    step_verdicts, annotation_verdicts = verdicts(trace)
    annotations = (
        trace.annotations.join(_mean_verdicts(annotation_verdicts), on="name", how="left")
        .join(annotation_thread_splits(trace).rename({"split": "kernels_split"}), on="name", how="left")
        .join(_annotation_threads(trace), on="name", how="left")
    )
    steps = (
        trace.steps.join(
            step_verdicts.select("id", "gpu_busy_pct", "cpu_launch_us", "bound", "verdict"),
            on="id",
            how="left",
        )
        .join(thread_splits(trace).rename({"span": "id", "split": "kernels_split"}), on="id", how="left")
        .join(_step_threads(trace), on="id", how="left")
    )
    return steps, annotations


def verdicts(trace: Trace) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(steps, annotations)``: per step, GPU busy share of the step, idle gaps, CPU launch time vs
    GPU time, a verdict; per annotation instance, the same reading over the annotation (computed
    once per trace)."""
    return kept(trace, "verdicts", lambda: _span_verdicts(trace))


def _span_verdicts(trace: Trace) -> tuple[pl.DataFrame, pl.DataFrame]:
    syncs = _sync_calls(trace)
    return (
        _verdicts(trace.step_instances, trace.span_work, _sync_time(syncs, "step_id")),
        _verdicts(trace.annotation_instances, trace.span_work, _sync_time(syncs, "annotation_id")),
    )


def _mean_verdicts(per_instance: pl.DataFrame) -> pl.DataFrame:
    """Per annotation name: the most common bound (of a tie, the first by name: the same every
    run) and the verdict of its median call."""
    if per_instance.is_empty():
        return pl.DataFrame(schema={"name": pl.String, "bound": pl.String, "verdict": pl.String})
    return (
        per_instance.sort("cpu_launch_us")
        .group_by("name", maintain_order=True)
        .agg(most_common(pl.col("bound")), pl.col("verdict").get(pl.len() // 2))
    )


def thread_splits(trace: Trace) -> pl.DataFrame:
    """``(span, split)`` for each step and annotation instance with kernels launched from another
    thread while it was open: ``358 here + 666 on pt_autograd_0`` (``here``: its own thread)."""
    return split_text(trace.span_threads, "span", "kernels")


def annotation_threads(trace: Trace) -> pl.DataFrame:
    """Per annotation name and launching thread: the work launched while a call was open, per call
    (``kernels_per_call``, ``memcpys_per_call``, ``memsets_per_call``, ``gpu_events_per_call``,
    ``gpu_us_per_call``); per name its own thread (``here``) first, then by kernels."""
    calls = trace.annotation_instances.select(pl.col("id").alias("span"), "name")
    counts = ["kernels", "memcpys", "memsets", "gpu_events", "gpu_us"]
    return (
        trace.span_threads.join(calls, on="span")
        .group_by("name", "thread", "here")
        .agg(pl.col(*counts).sum())
        .join(calls.group_by("name").len("calls"), on="name")
        .select(
            "name", "thread", "here", *((pl.col(c) / pl.col("calls")).alias(f"{c}_per_call") for c in counts)
        )
        .sort(["name", "here", "kernels_per_call", "thread"], descending=[False, True, True, False])
    )


def annotation_thread_splits(trace: Trace) -> pl.DataFrame:
    """``(name, split)``: :func:`thread_splits` per annotation name, in kernels per call."""
    return split_text(annotation_threads(trace), "name", "kernels_per_call")


def split_text(threads: pl.DataFrame, key: str, value: str) -> pl.DataFrame:
    """``(key, split)``: per ``key``, ``value`` on its own thread (``here``) then on each other
    thread (``thread``) with some, largest first; only keys with some on another thread."""
    others = threads.filter(~pl.col("here") & (pl.col(value) > 0))
    if others.is_empty():
        return pl.DataFrame(schema={key: threads.schema[key], "split": pl.String})
    here = threads.filter(pl.col("here")).group_by(key).agg(pl.col(value).sum().alias("here_value"))
    parts = (
        others.sort([key, value, "thread"], descending=[False, True, False])
        .group_by(key, maintain_order=True)
        .agg(pl.format("{} on {}", count_expr(pl.col(value)), pl.col("thread")).str.join(" + ").alias("rest"))
    )
    return (
        parts.join(here, on=key, how="left")
        .select(
            key,
            pl.format("{} here + {}", count_expr(pl.col("here_value").fill_null(0)), pl.col("rest")).alias(
                "split"
            ),
        )
        .sort(key)
    )


def _step_threads(trace: Trace) -> pl.DataFrame:
    """``(id, threads)``: per step, the work each thread launched during it."""
    return (
        trace.span_threads.join(trace.steps.select(pl.col("id").alias("span")), on="span")
        .group_by("span", maintain_order=True)
        .agg(pl.struct(THREAD_FIELDS).alias("threads"))
        .rename({"span": "id"})
    )


def _annotation_threads(trace: Trace) -> pl.DataFrame:
    """``(name, threads)``: per annotation name, the work each thread launched per call."""
    per_call = annotation_threads(trace)
    fields = [c for c in per_call.columns if c != "name"]
    return per_call.group_by("name", maintain_order=True).agg(pl.struct(fields).alias("threads"))


def _sync_time(syncs: pl.DataFrame, by: str) -> pl.DataFrame:
    """CPU time spent waiting in synchronize calls (:func:`_sync_calls`), per step or annotation."""
    return syncs.group_by(by).agg(sum_us().alias("sync_us")).rename({by: "span"})


def _sync_calls(trace: Trace) -> pl.DataFrame:
    """The synchronize calls (few): their steps, annotations and times."""
    calls = trace.events.lazy().filter(pl.col("cat").is_in(LAUNCH_CALLS) & pl.col("name").is_in(SYNC_CALLS))
    return calls.select("step_id", "annotation_id", "start_ns", "end_ns").collect()


def _verdicts(spans: pl.DataFrame, work: pl.DataFrame, sync: pl.DataFrame) -> pl.DataFrame:
    """The reading of each span (steps or annotation instances, with their work and idle gaps from
    :func:`tracetui.trace.stats.span_instances`)."""
    table = (
        with_window_end(
            spans.lazy().select(
                "id",
                "name",
                "start_ns",
                "end_ns",
                "dur",
                "gpu_us",
                "gpu_busy_us",
                "gpu_events",
                "idle_gaps",
                "largest_gap_us",
            ),
            work,
        )
        .join(sync.lazy(), left_on="id", right_on="span", how="left", maintain_order="left")
        .with_columns(pl.col("sync_us").fill_null(0))
        .with_columns(window_us=(pl.col("window_end_ns") - pl.col("start_ns")) / 1000.0)
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
    bound = (
        pl.when(pl.col("gpu_events").fill_null(0) == 0)
        .then(pl.lit("idle"))
        .when(pl.col("cpu_launch_us") > pl.col("gpu_busy_us"))
        .then(pl.lit("launch-bound"))
        .when(pl.col("gpu_busy_pct") >= 100 * BUSY_GPU_BOUND)
        .then(pl.lit("gpu-bound"))
        .otherwise(pl.lit("gpu-waits"))
    )
    numbers_col = pl.col("numbers")
    verdict = (
        pl.when(pl.col("bound") == "idle")
        .then(pl.lit("no GPU work"))
        .when(pl.col("bound") == "launch-bound")
        .then(pl.format("launch/overhead-bound: {}", numbers_col))
        .when(pl.col("bound") == "gpu-bound")
        .then(pl.format("GPU-bound: {}", numbers_col))
        .otherwise(pl.format("GPU waits outside launches (sync, data, Python): {}", numbers_col))
    )
    return (
        table.with_columns(bound=bound, numbers=numbers)  # the numbers written once, read by each verdict
        .with_columns(verdict=verdict)
        .drop("end_ns", "window_end_ns", "numbers")
        .sort("start_ns")
        .collect()
    )


def with_window_end(spans: pl.LazyFrame, work: pl.DataFrame) -> pl.LazyFrame:
    """``spans`` (``id``, ``start_ns``, ``end_ns``) with ``window_end_ns``: the later of the span's end
    and the end of the GPU work it launched (``work``: :attr:`Trace.span_work`). A span's *window*,
    from its start to there, is what its GPU busy share, its critical path and its idle time cover."""
    gpu_end = work.lazy().group_by("span").agg(pl.col("end_ns").max().alias("gpu_end"))
    return (
        spans.join(gpu_end, left_on="id", right_on="span", how="left", maintain_order="left")
        .with_columns(window_end_ns=pl.max_horizontal("end_ns", "gpu_end"))
        .drop("gpu_end")
    )


def span_windows(trace: Trace, kind: str) -> pl.DataFrame:
    """The windows of the steps (``kind`` ``"steps"``) or annotation calls (``"annotations"``):
    ``span``, ``name``, ``track`` (the thread that opened it), ``start_ns``, ``cpu_end_ns`` (its end),
    ``end_ns`` (the window's end: :func:`with_window_end`), in time order. A span without a start or
    an end has no window: left out (the anomalies list its event, ``missing_timestamp``). Computed
    once per trace and kind."""
    return kept(trace, f"span_windows_{kind}", lambda: _span_windows(trace, kind))


def _span_windows(trace: Trace, kind: str) -> pl.DataFrame:
    spans = trace.steps if kind == "steps" else trace.annotation_instances
    spans = spans.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    tracks = trace.lookup(spans["id"], "track")["track"]
    frame = spans.select("id", pl.col("name").cast(pl.String), "start_ns", "end_ns").with_columns(tracks)
    return (
        with_window_end(frame.lazy(), trace.span_work)
        .select(
            pl.col("id").alias("span"),
            "name",
            "track",
            "start_ns",
            pl.col("end_ns").alias("cpu_end_ns"),
            pl.col("window_end_ns").alias("end_ns"),
        )
        .sort("start_ns", "span")
        .collect()
    )
