"""Insight on a loaded trace: decoded kernels with their roofline, step and annotation verdicts,
and the CPU cost of ``torch.compile``'s pre-ops.

These join the pure decoders (:mod:`kernel_names`, :mod:`flops`, :mod:`roofline`) to the trace
model; the summary, export and the viewer all read them from here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import polars as pl

from tracetui.formatting import count_expr, duration_expr, percent_expr
from tracetui.insight.compile_names import COMPILED_REGION, compile_wrapper
from tracetui.insight.flops import op_cost_columns
from tracetui.insight.kernel_names import kernel_name_columns
from tracetui.insight.roofline import MATRIX_KINDS, roofline_columns
from tracetui.trace.align import lookup
from tracetui.trace.categories import GPU_WORK, LAUNCH_CALLS
from tracetui.trace.memo import kept
from tracetui.trace.model import COST_SHAPES
from tracetui.trace.stats import DUR_NS, US, mean_us, merged_intervals, sum_us
from tracetui.trace.text import starts_with

if TYPE_CHECKING:
    from tracetui.trace import Trace

KERNEL_FIELDS = ("family", "kind", "arch", "tile", "stages", "layout", "fused_ops", "short")
SYNC_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent")
BUSY_GPU_BOUND = 0.8  # GPU busy over the step's window at or above which a step is GPU-bound


WORK_COLUMNS = ("id", "name", "cat", "dur", "start_ns", "end_ns", "launch_id", "launch_op_id")
WORK_ARGS = ("device", "bytes", "grid")


def gpu_work(trace: Trace) -> pl.DataFrame:
    """The GPU work (kernels, memcpys, memsets) in event order, with the columns the insight
    aggregates read (:data:`WORK_COLUMNS`, and :data:`WORK_ARGS` of its args): found once per
    trace, without building :attr:`Trace.gpu` (every column of every GPU event)."""
    return kept(trace, "gpu_work", lambda: _gpu_work(trace))


def _gpu_work(trace: Trace) -> pl.DataFrame:
    rows = trace.events.lazy().filter(pl.col("cat").is_in(GPU_WORK)).select(WORK_COLUMNS).collect()
    # one piece per column (the query's output comes in morsels): its readers gather from it
    return pl.concat([rows, lookup(trace.gpu_args, rows["id"], *WORK_ARGS)], how="horizontal").rechunk()


def kernel_costs(trace: Trace, ids: pl.Series | None = None) -> pl.DataFrame:
    """One row per GPU work event: its decoded name and the cost of its launching op.

    An op's FLOPs and bytes are spread over the kernels it launched: each kernel carries the op's
    cost and the op's total kernel time (``op_kernel_us``), so a split-K GEMM (two kernels) is not
    counted twice. Memcpys carry their ``bytes`` arg; memsets nothing. ``ids``: only those GPU
    events (and the other kernels of their ops, which their figures are read with).
    """
    return _kernel_costs(trace, ids).collect()


def _kernel_costs(trace: Trace, ids: pl.Series | None = None) -> pl.LazyFrame:
    """:func:`kernel_costs` as a query: a reader of a few of its columns builds only those (the
    names' fields and the ops' costs are joined from their small tables of distinct rows)."""
    rows, names, costs = _cost_rows(trace, ids)
    text = costs.drop("flops", "bytes")  # the rows carry their own
    order = [
        *(c for c in rows.collect_schema() if c not in ("cost_row", "op_kernel_us", "flops")),
        *names.columns[1:],
        *(c for c in costs.columns if c not in ("cost_row", "bytes")),
        "op_kernel_us",
        "roof_kind",
    ]
    return (
        rows.join(names.lazy(), on="name", how="left", maintain_order="left")
        .join(text.lazy(), on="cost_row", how="left", maintain_order="left")
        .with_columns(_roof_kind(pl.col("cost_kind"), pl.col("kind")))
        .select(order)
    )


def _cost_rows(trace: Trace, ids: pl.Series | None = None) -> tuple[pl.LazyFrame, pl.DataFrame, pl.DataFrame]:
    """``(rows, names, costs)``. ``rows``: per GPU work event, in event order, its numbers only:
    the GPU work's columns, ``blocks``, ``cost_row`` (its op's row of ``costs``: :func:`launch_op_costs`),
    ``op_kernel_us`` and its share of the op's ``flops`` and ``bytes`` as read below. ``names``: the
    decoded kernel names (:func:`kernel_name_columns`). The text of a name or an op is joined from
    those small tables by whoever shows it, after any aggregation. ``ids``: only the rows of those
    events and of their ops' other GPU work (an op's figures are read over all its kernels)."""
    work = gpu_work(trace)  # kept: the query adds its keys to it (the whole's; ``ids``': a part's)
    names = _decoded_names(trace)
    if ids is not None:
        work = _with_their_ops(work, ids)
    gpu = work.select("id", "name", "cat", "dur", "start_ns", "end_ns", "device", "launch_op_id", "bytes")
    costs, of_op = kept(trace, "launch_op_costs", lambda: launch_op_costs(trace))
    is_kernel = pl.col("cat") == "kernel"
    cost_row = lookup(of_op, gpu["launch_op_id"], "cost_row")["cost_row"]  # no table as long as the ids
    per_op = costs.select("cost_row", pl.col("flops").alias("op_flops"), pl.col("bytes").alias("op_bytes"))
    rows = (
        gpu.lazy()
        .with_columns(_blocks(work["grid"]), cost_row, _op_kernel_ns())
        .join(per_op.lazy(), on="cost_row", how="left", maintain_order="left")
        .with_columns(
            op_kernel_us=pl.when(is_kernel & pl.col("launch_op_id").is_not_null())
            .then(pl.col("op_kernel_ns") / US)
            .otherwise(pl.col("dur")),
            flops=pl.when(is_kernel).then(pl.col("op_flops")),
            bytes=pl.when(is_kernel)
            .then(pl.col("op_bytes"))
            .when(pl.col("cat") == "gpu_memcpy")
            .then(pl.col("bytes")),
        )
        .drop("op_flops", "op_bytes", "op_kernel_ns")
    )
    return rows, names, costs


def _roof_kind(cost_kind: pl.Expr, kind: pl.Expr) -> pl.Expr:
    """``roof_kind``: an op's cost is read against its own kind's roof (the attention op's seed
    kernel too), else the kernel name's kind."""
    return pl.when(cost_kind.is_in(list(MATRIX_KINDS))).then(cost_kind).otherwise(kind).alias("roof_kind")


def _op_kernel_ns() -> pl.Expr:
    """Per row of GPU work: the kernel time (ns) of its launching op, all its kernels together."""
    kernel_ns = pl.when(pl.col("cat") == "kernel").then(DUR_NS.fill_null(0)).otherwise(0)
    return (
        pl.when(pl.col("launch_op_id").is_not_null())
        .then(kernel_ns.sum().over("launch_op_id"))
        .alias("op_kernel_ns")
    )


def launch_op_costs(trace: Trace) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The cost of the ops that launched GPU work, once per distinct op name and recorded shapes
    (a trace has few): ``(costs, of_op)``. ``costs``: ``cost_row`` (its row), ``op``, the shapes
    and :func:`~tracetui.insight.flops.op_cost_columns`; ``of_op``: ``(id, cost_row)`` per op that
    launched GPU work, sorted by ``id`` (read it with :func:`~tracetui.trace.align.lookup`)."""
    shapes = trace.launch_shapes
    keys = ["op", *COST_SHAPES]
    ops = shapes.select("id", trace.lookup(shapes["id"], "name")["name"].alias("op"), *COST_SHAPES)
    shape_text = [pl.col(key).cast(pl.String) for key in keys[1:]]  # the few distinct shapes, as written
    distinct = ops.group_by(keys, maintain_order=True).agg("id").with_columns(shape_text)
    costs = pl.concat(
        [distinct.drop("id"), op_cost_columns(distinct, name="op").drop(keys)], how="horizontal"
    )
    of_op = (
        distinct.select("id", pl.int_range(pl.len(), dtype=pl.UInt32).alias("cost_row"))
        .explode("id")
        .sort("id")
    )
    return costs.with_row_index("cost_row"), of_op


def _blocks(grid: pl.Series) -> pl.Series:
    """``blocks`` of each ``grid``, read once per distinct grid (a trace has few, its kernels many)."""
    distinct = grid.unique().drop_nulls().to_frame().with_columns(grid_blocks())
    return grid.to_frame().join(distinct, on="grid", how="left", maintain_order="left")["blocks"]


def grid_blocks() -> pl.Expr:
    """``blocks``: the number of thread blocks of a kernel's ``grid`` (``[x, y, z]``), null without one."""
    sizes = pl.col("grid").str.extract_all(r"[0-9]+").list.eval(pl.element().cast(pl.Int64, strict=False))
    return (
        pl.when(sizes.list.len() > 0)
        .then(sizes.list.eval(pl.element().product()).list.first())
        .alias("blocks")
    )


def _decoded_names(trace: Trace) -> pl.DataFrame:
    """The decoded names of every GPU work name of the trace (kept per trace): a part of its rows
    is decoded among all of them, since a short name is told apart from the trace's other names."""

    def decoded() -> pl.DataFrame:
        return kernel_name_columns(gpu_work(trace)["name"]).select("name", *KERNEL_FIELDS, "notes")

    return kept(trace, "decoded_names", decoded)


def is_gpu_work(trace: Trace, event_id: int) -> bool:
    """Whether ``event_id`` is one of the GPU work events (a sorted search of their ids)."""
    ids = gpu_work(trace)["id"]
    at = ids.search_sorted(event_id)
    return bool(at < len(ids) and ids[at] == event_id)


def _with_their_ops(work: pl.DataFrame, ids: pl.Series) -> pl.DataFrame:
    """The rows of ``work`` whose ``id`` is one of ``ids``, or whose launching op launched one of them."""
    wanted = pl.col("id").is_in(ids.cast(pl.UInt32).implode())
    ops = work.filter(wanted)["launch_op_id"].drop_nulls().unique()
    return work.filter(wanted | pl.col("launch_op_id").is_in(ops.implode()))


def kernel_insight(trace: Trace, ids: pl.Series | None = None) -> pl.DataFrame:
    """:func:`kernel_costs` with each event's roofline (rates over its op's kernel time), sorted by
    ``id``. ``ids``: only those GPU events, each read as in the whole (the explorer's details pane
    asks for one: a whole trace's readings are ~600 bytes of text per kernel); their floats may
    differ in the last bits (polars divides a tiny column by a number exactly, a longer one by its
    reciprocal), never what is shown."""
    rows = kernel_costs(trace, ids)
    dropped = ("name", "cat", "dur", "start_ns", "end_ns", "device", "op_blocks")
    # read as the op's: its kernels share its rate, its kernel time and its largest grid
    rows = rows.with_columns(
        op_blocks=pl.when(pl.col("launch_op_id").is_not_null())
        .then(pl.col("blocks").max().over("launch_op_id"))
        .otherwise(pl.col("blocks"))
    )
    read = _with_roofline(trace, rows, "op_kernel_us", call_dur="op_kernel_us", blocks="op_blocks")
    if ids is not None:  # not the other kernels of their ops
        read = read.filter(pl.col("id").is_in(ids.cast(pl.UInt32).implode()))
    return read.sort("id").drop(dropped)


def kernels_table(trace: Trace) -> pl.DataFrame:
    """One row per GPU event: where it ran, what launched it, and what its name and shapes say."""
    return pl.concat(kernels_table_parts(trace))


def kernels_table_parts(trace: Trace, rows: int = 100_000) -> Iterator[pl.DataFrame]:
    """:func:`kernels_table` in parts of ``rows`` consecutive rows (at least one part): each part's
    readings (~600 bytes of text a kernel) are made for its kernels (read with their ops' other
    kernels), so that a writer holds one part's text at a time, not the whole trace's. A part's
    floats may differ from the whole's in the last bits (see :func:`kernel_insight`)."""
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
    ).sort("ts", maintain_order=True)  # ties in event order
    named = {
        "launch_id": "runtime",
        "launch_op_id": "launch_op",
        "annotation_id": "annotation",
        "step_id": "step",
    }
    linked = gpu.with_columns(  # the names looked up by id, not a join on every event
        trace.lookup(gpu[key], "name")["name"].alias(name) for key, name in named.items()
    ).with_columns(pl.col("launch_op").fill_null(""))
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
    for start in range(0, max(linked.height, 1), rows):
        part = linked.slice(start, rows)
        insight = kernel_insight(trace, part["id"]).select(
            "id",
            *KERNEL_FIELDS,
            "flops",
            "bytes",
            "tflops",
            "gbs",
            "intensity",
            "bound",
            "verdict",
        )
        table = part.join(insight, on="id", how="left", maintain_order="left")
        yield table.select(first + [c for c in table.columns if c not in first])


def kernel_rooflines(trace: Trace) -> pl.DataFrame:
    """Per kernel name (and device) with a known cost: total time, FLOPs and bytes, and the
    roofline reading of the aggregate. An op's cost is shared among its kernels by time.

    The rows are summed as numbers; a name's and an op's text is joined once per total."""
    rows, names, costs = _cost_rows(trace)
    dtypes = costs.select(pl.col("cost_row").alias("typed_row"), "cost_dtype").drop_nulls()
    typed = dtypes["typed_row"]  # the ops whose dtype is known
    share = pl.when(pl.col("op_kernel_us") > 0).then(DUR_NS / 1000 / pl.col("op_kernel_us"))
    lazy_totals = (
        rows.filter(pl.col("flops").is_not_null() | pl.col("bytes").is_not_null())
        .group_by("name", "device")
        .agg(
            pl.len().alias("calls"),
            sum_us().alias("time_us"),
            (pl.col("flops") * share).sum().alias("flops"),
            (pl.col("bytes") * share).sum().alias("bytes"),
            pl.col("cost_row").filter(pl.col("cost_row").is_in(typed.implode())).first().alias("typed_row"),
            pl.col("cost_row").first(),  # the first kernel's op: its kind picks the roof
            pl.col("blocks").median(),
        )
        .join(names.lazy().select("name", "kind", "short"), on="name", how="left")
        .join(dtypes.lazy(), on="typed_row", how="left")
        .join(costs.lazy().select("cost_row", "cost_kind"), on="cost_row", how="left")
    )
    call_us = pl.col("time_us") / pl.col("calls")
    totals = lazy_totals.select(
        pl.col("name").cast(pl.String),
        "device",
        "calls",
        "time_us",
        "flops",
        "bytes",
        "cost_dtype",
        "kind",
        _roof_kind(pl.col("cost_kind"), pl.col("kind")),
        "short",
        "blocks",
        call_us.alias("call_us"),
    ).collect()
    return _with_roofline(trace, totals, "time_us", call_dur="call_us", blocks="blocks").sort(
        ["time_us", "name"], descending=[True, False]
    )


def _with_roofline(trace: Trace, rows: pl.DataFrame, dur: str, call_dur: str, blocks: str) -> pl.DataFrame:
    """``rows`` with roofline columns against each row's device peaks (and SM count)."""
    devices = {d.get("id"): d for d in trace.devices}

    def read(part: pl.DataFrame, device: dict[str, object]) -> pl.DataFrame:
        sms = device.get("numSms")
        return roofline_columns(
            part,
            device.get("name"),  # type: ignore[arg-type]
            dur=dur,
            call_dur=call_dur,
            blocks=blocks,
            dtype="cost_dtype",
            kind="roof_kind",
            sms=sms if isinstance(sms, int) and sms > 0 else None,
        )

    parts = [
        read(part, devices.get(device, {}))
        for (device,), part in rows.group_by("device", maintain_order=True)
    ]
    return pl.concat(parts or [read(rows, {})], how="diagonal_relaxed")


def step_verdicts(trace: Trace) -> pl.DataFrame:
    """Per step: GPU busy share of the step, idle gaps, CPU launch time vs GPU time, a verdict."""
    return _verdicts(trace.step_instances, trace.span_work, _sync_time(trace, "step_id"))


def annotation_verdicts(trace: Trace) -> pl.DataFrame:
    """Per annotation instance: the same reading as :func:`step_verdicts`, over the annotation."""
    return _verdicts(trace.annotation_instances, trace.span_work, _sync_time(trace, "annotation_id"))


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


def _sync_time(trace: Trace, by: str) -> pl.DataFrame:
    """CPU time spent waiting in synchronize calls, per step or annotation."""
    syncs = kept(trace, "sync_calls", lambda: _sync_calls(trace))
    return syncs.group_by(by).agg(sum_us().alias("sync_us")).rename({by: "span"})


def _sync_calls(trace: Trace) -> pl.DataFrame:
    """The synchronize calls (few): their steps, annotations and times."""
    calls = trace.events.lazy().filter(pl.col("cat").is_in(LAUNCH_CALLS) & pl.col("name").is_in(SYNC_CALLS))
    return calls.select("step_id", "annotation_id", "start_ns", "end_ns").collect()


def _verdicts(spans: pl.DataFrame, work: pl.DataFrame, sync: pl.DataFrame) -> pl.DataFrame:
    """The reading of each span (steps or annotation instances, with their work and idle gaps from
    :func:`tracetui.trace.stats.span_instances`)."""
    gpu_end = work.lazy().group_by("span").agg(pl.col("end_ns").max().alias("gpu_end"))
    table = (
        spans.lazy()
        .select(
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
        )
        .join(gpu_end, left_on="id", right_on="span", how="left", maintain_order="left")
        .join(sync.lazy(), left_on="id", right_on="span", how="left", maintain_order="left")
        .with_columns(pl.col("sync_us").fill_null(0))
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
        .drop("end_ns", "gpu_end", "numbers")
        .sort("start_ns")
        .collect()
    )


def compile_overheads(trace: Trace) -> pl.DataFrame:
    """CPU cost per call of ``torch.compile``'s pre-ops, and of the compiled-region wrapper.

    The wrapper overhead of a ``Torch-Compiled Region`` is its CPU time minus the time inside
    the Inductor graph call (``## Call CompiledFxGraph … ##``) below it.
    """
    graph_call = starts_with("name", "## Call CompiledFxGraph")
    events = (  # one pass over the names: the few events of torch.compile's
        trace.events.lazy()
        .filter(compile_wrapper() | graph_call)
        .select("id", "cat", "name", "track", "pos", "end_pos", "start_ns", "end_ns")
        .collect()
    )
    preops = events.filter((pl.col("cat") == "cpu_op") & compile_wrapper())
    regions = events.filter(starts_with("name", COMPILED_REGION)).select(
        "id", "track", "pos", "end_pos", DUR_NS.alias("dur_ns")
    )
    graphs = events.filter(graph_call).select(
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
    rows = pl.concat([preops.select(pl.col("name").cast(pl.String), DUR_NS.alias("dur_ns")), wrapper])
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
    busy = merged_intervals(gpu_work(trace))
    return float((busy["end_ns"] - busy["start_ns"]).sum()) / 1000.0
