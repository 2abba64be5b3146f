"""Each GPU event's decoded name and the cost of the op that launched it, read against the roofline:
per event (the explorer's details, the kernels table of ``export`` and the dataset) and per kernel
name (the summary's rooflines).

These join the pure decoders (:mod:`kernel_names`, :mod:`flops`, :mod:`roofline`) to the trace model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import polars as pl

from tracetui.insight.distributions import gpu_distributions
from tracetui.insight.flops import op_cost_columns
from tracetui.insight.gpu_work import gpu_work
from tracetui.insight.kernel_names import kernel_name_columns
from tracetui.insight.roofline import MATRIX_KINDS, copy_kind, roofline_columns
from tracetui.trace.align import lookup
from tracetui.trace.memo import kept
from tracetui.trace.model import COST_SHAPES
from tracetui.trace.stats import DUR_NS, US, sum_us

if TYPE_CHECKING:
    from tracetui.trace import Trace

KERNEL_FIELDS = ("family", "kind", "arch", "tile", "stages", "layout", "fused_ops", "short")


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
    names = _decoded_names(trace, work)
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


def _decoded_names(trace: Trace, work: pl.DataFrame) -> pl.DataFrame:
    """The decoded names of every GPU work name of the trace (kept per trace): a part of its rows
    is decoded among all of them, since a short name is told apart from the trace's other names."""

    def decoded() -> pl.DataFrame:
        names = kernel_name_columns(work["name"])
        copies = [  # a memcpy's kind of copy, read once per distinct name
            copy_kind(op, variant) if family == "memcpy" else None
            for family, op, variant in names.select("family", "op", "variant").iter_rows()
        ]
        return names.select("name", *KERNEL_FIELDS, "notes").with_columns(
            pl.Series("copy", copies, dtype=pl.String)
        )

    return kept(trace, "decoded_names", decoded)


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
    roofline reading of the aggregate. An op's cost is shared among its kernels by time (computed
    once per trace: the summary, the advice and the insight view read it).

    The rows are summed as numbers; a name's and an op's text is joined once per total."""
    return kept(trace, "kernel_rooflines", lambda: _kernel_rooflines(trace))


def _kernel_rooflines(trace: Trace) -> pl.DataFrame:
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
        .join(names.lazy().select("name", "kind", "short", "copy"), on="name", how="left")
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
        "copy",
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


def decoded_kernels(trace: Trace) -> pl.DataFrame:
    """The kernels table with each name's decoded short form, family and kind."""
    kernels = trace.kernels.rename({"cat": "category"})
    if kernels.is_empty():
        return kernels
    decoded = kernel_name_columns(kernels["name"]).select("name", "short", "family", "kind")
    spread = gpu_distributions(trace).select("name", "p50_us", "p90_us", "p99_us")
    return kernels.join(decoded, on="name", how="left", maintain_order="left").join(
        spread, on="name", how="left", maintain_order="left"
    )
