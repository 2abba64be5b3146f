"""Which events are collectives, and their names, groups and sizes, on one rank.

* NCCL: the collective kernels (``ncclDevKernel_AllReduce_…``, as
  :mod:`tracetui.insight.kernel_names` decodes them), on the GPU timeline. Their args carry
  ``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Process Group
  Name``/``Ranks`` (and ``Seq``) when the launching op was ``record_param_comms`` (PyTorch ≥ 2.3);
  otherwise the name says which collective it is. A kernel whose launch is not in the trace
  (enqueued before profiling started) cannot be told apart from the one before or after it on
  another rank: it is kept for the time breakdown but not aligned.
* gloo: the collectives are CPU work, ``gloo:all_reduce`` spans on gloo's threads (the copies made
  on the GPU for them, inside those spans or inside the ``c10d::*`` op, are communication too).
  Without them, the outermost ``c10d::*`` ops.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui.insight.kernel_names import kernel_name_columns
from tracetui.ranks.discover import ProcessGroup
from tracetui.trace.text import matches

if TYPE_CHECKING:
    from tracetui.trace import Trace

HOST_COLLECTIVE = r"^gloo:"  # gloo's collective spans (user annotations on its threads)
FALLBACK_COLLECTIVE = r"^c10d::"  # the dispatcher's collective ops (every backend)
COMM_ANNOTATION = r"^(?:gloo|nccl):"  # GPU copies made inside these spans are communication

# dtype names in collective args -> bytes per element
DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "bfloat16": 2,
    "half": 2,
    "float16": 2,
    "double": 8,
    "float64": 8,
    "long": 8,
    "int64": 8,
    "int": 4,
    "int32": 4,
    "short": 2,
    "int16": 2,
    "byte": 1,
    "char": 1,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "complexfloat": 8,
    "complexdouble": 16,
    "c10::bfloat16": 2,
    "c10::half": 2,
}
_CANONICAL = (
    "allreduce",
    "allgather",
    "reducescatter",
    "alltoall",
    "broadcast",
    "barrier",
    "sendrecv",
    "send",
    "recv",
    "gather",
    "scatter",
    "reduce",
)
PRETTY = {
    "allreduce": "all-reduce",
    "allgather": "all-gather",
    "reducescatter": "reduce-scatter",
    "alltoall": "all-to-all",
}
SCHEMA: dict[Any, Any] = {
    "id": pl.UInt32,
    "kind": pl.String,  # "kernel" (GPU timeline), "host" (gloo's spans) or "op" (c10d ops, the fallback)
    "group": pl.String,
    "name": pl.String,  # canonical: allreduce, allgather, reducescatter, …
    "step": pl.Int64,
    "seq": pl.UInt32,  # n-th collective of its group within its step on this rank
    "seq_arg": pl.Int64,  # the trace's own ``Seq`` arg, where written
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "in_nelems": pl.Int64,
    "out_nelems": pl.Int64,
    "dtype": pl.String,
    "bytes": pl.Int64,
    "group_ranks": pl.String,
    "group_size": pl.Int64,  # ranks in the group: from its ranks arg, else distributedInfo's pg_config
    "aligned": pl.Boolean,
}


def canonical(name: pl.Expr) -> pl.Expr:
    """``allreduce`` for ``gloo:all_reduce``, ``c10d::allreduce_``, ``AllReduce``, ``_allgather_base``…"""
    text = name.cast(pl.String).str.split(":").list.last().str.to_lowercase().str.replace_all(r"[_\-]", "")
    result: Any = pl.when(text.str.starts_with(_CANONICAL[0])).then(pl.lit(_CANONICAL[0]))
    for known in _CANONICAL[1:]:
        result = result.when(text.str.starts_with(known)).then(pl.lit(known))
    named: pl.Expr = result.otherwise(pl.when(text != "").then(text).otherwise(pl.lit("unknown")))
    return named


def pretty(name: str) -> str:
    """``all-reduce`` for ``allreduce``."""
    return PRETTY.get(name, name)


def default_group(groups: tuple[ProcessGroup, ...]) -> str:
    """The name of the default process group (``0`` in PyTorch), when the trace says it."""
    for group in groups:
        if group.description == "default_pg":
            return group.name
    return groups[0].name if len(groups) == 1 else "default"


def rank_collectives(trace: Trace, groups: tuple[ProcessGroup, ...] = ()) -> pl.DataFrame:
    """One row per collective on this rank (:data:`SCHEMA`), in start order."""
    events = trace.events
    steps = trace.steps.select(pl.col("id").alias("step_id"), "step")
    kernels = comm_kernels(events).filter(pl.col("start_ns").is_not_null())
    host = events.filter((pl.col("cat") == "user_annotation") & matches("name", HOST_COLLECTIVE))
    kind = "host"
    if kernels.is_empty() and host.is_empty():
        host, kind = outermost_c10d(events), "op"
    fallback = default_group(groups)
    rows = pl.concat(
        [
            _kernel_rows(trace, kernels, fallback),
            _host_rows(trace, host.filter(pl.col("start_ns").is_not_null()), fallback, kind),
        ]
    )
    rows = rows.join(steps, on="step_id", how="left").drop("step_id").sort("start_ns", "id")
    seq = pl.int_range(pl.len(), dtype=pl.UInt32).over("group", "step", "aligned")
    sizes = pl.DataFrame(
        {"group": [g.name for g in groups], "config_size": [g.size or len(g.ranks) or None for g in groups]},
        schema={"group": pl.String, "config_size": pl.Int64},
    ).unique("group", keep="first")
    listed = pl.col("group_ranks").str.count_matches(r"-?\d+").cast(pl.Int64)
    return (
        rows.join(sizes, on="group", how="left")
        .with_columns(
            seq=pl.when("aligned").then(seq),
            group_size=pl.when(listed > 0).then(listed).otherwise(pl.col("config_size")),
        )
        .select(list(SCHEMA))
        .cast(SCHEMA)
    )


def comm_kernels(events: pl.DataFrame) -> pl.DataFrame:
    """The collective kernels (those the kernel-name decoder reads as NCCL's), each with the
    collective its name says (``kernel_collective``: ``AllReduce``, ``SendRecv``, …)."""
    kernels = events.filter(pl.col("cat") == "kernel")
    decoded = kernel_name_columns(kernels["name"].unique()).filter(pl.col("family") == "nccl")
    return kernels.join(decoded.select("name", pl.col("collective").alias("kernel_collective")), on="name")


def outermost_c10d(events: pl.DataFrame) -> pl.DataFrame:
    """``c10d::*`` ops that are not inside another one."""
    ops = events.filter((pl.col("cat") == "cpu_op") & matches("name", FALLBACK_COLLECTIVE))
    parents = events.select(pl.col("id").alias("op_id"), pl.col("name").alias("parent_op"))
    inner = ops.join(parents, on="op_id", how="left").filter(
        matches("parent_op", FALLBACK_COLLECTIVE).fill_null(False)
    )
    return ops.join(inner.select("id"), on="id", how="anti")


def _kernel_rows(trace: Trace, kernels: pl.DataFrame, fallback: str) -> pl.DataFrame:
    """Collective kernels with the metadata of their args (or of their name)."""
    metas = [_kernel_meta(trace.event_args(i)) for i in kernels["id"].to_list()]
    meta = pl.DataFrame(metas, schema=_META_SCHEMA, orient="row")
    return (
        kernels.select(
            "id",
            pl.lit("kernel").alias("kind"),
            "start_ns",
            "end_ns",
            "step_id",
            pl.col("launch_id").is_not_null().alias("aligned"),
            "kernel_collective",
        )
        .hstack(meta)
        .select(
            "id",
            "kind",
            pl.col("group").fill_null(fallback),
            canonical(pl.coalesce("collective", "kernel_collective")).alias("name"),
            "step_id",
            "seq_arg",
            "start_ns",
            "end_ns",
            "in_nelems",
            "out_nelems",
            "dtype",
            _bytes(),
            "group_ranks",
            "aligned",
        )
    )


def _host_rows(trace: Trace, host: pl.DataFrame, fallback: str, kind: str) -> pl.DataFrame:
    """gloo spans (``kind`` host) or c10d ops (op), with the message size of their recorded input shape."""
    shapes = trace.shapes(host["id"].to_list()) if len(host) else None
    sizes = [
        _first_tensor(dims, types)
        for dims, types in (
            zip(shapes["input_dims"].to_list(), shapes["input_type"].to_list(), strict=True)
            if shapes is not None
            else ()
        )
    ]
    size = pl.DataFrame(sizes, schema={"in_nelems": pl.Int64, "dtype": pl.String}, orient="row")
    return (
        host.select(
            "id",
            pl.lit(kind).alias("kind"),
            pl.lit(fallback).alias("group"),
            canonical(pl.col("name")).alias("name"),
            "step_id",
            pl.lit(None, pl.Int64).alias("seq_arg"),
            "start_ns",
            "end_ns",
        )
        .hstack(size)
        .with_columns(out_nelems=pl.col("in_nelems"))
        .select(
            "id",
            "kind",
            "group",
            "name",
            "step_id",
            "seq_arg",
            "start_ns",
            "end_ns",
            "in_nelems",
            "out_nelems",
            "dtype",
            _bytes(),
            pl.lit(None, pl.String).alias("group_ranks"),
            pl.lit(True).alias("aligned"),
        )
    )


_META_SCHEMA = {
    "collective": pl.String,
    "in_nelems": pl.Int64,
    "out_nelems": pl.Int64,
    "dtype": pl.String,
    "group": pl.String,
    "group_ranks": pl.String,
    "seq_arg": pl.Int64,
}


def _kernel_meta(args: dict[str, Any]) -> tuple[Any, ...]:
    """The collective args of one kernel, typed (absent or odd values: None)."""
    return (
        _text(args.get("Collective name")),
        _int(args.get("In msg nelems")),
        _int(args.get("Out msg nelems")),
        _text(args.get("dtype")),
        _text(args.get("Process Group Name")),
        _text(args.get("Process Group Ranks")),
        _int(args.get("Seq")),
    )


def _bytes() -> pl.Expr:
    """The larger message (input or output) in bytes, where the dtype is known."""
    dtype = pl.col("dtype").str.to_lowercase()
    width = dtype.replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Int64)
    return (pl.max_horizontal("in_nelems", "out_nelems") * width).alias("bytes")


def _first_tensor(dims: str | None, kinds: str | None) -> tuple[int | None, str | None]:
    """Elements and dtype of the first tensor in recorded ``Input Dims`` / ``Input type`` (JSON
    text): ``[[4199424]]`` or, for a tensor list, ``[[[4195328]], [], …]``."""
    try:
        shape: Any = json.loads(dims) if dims else None
        kind: Any = json.loads(kinds) if kinds else None
    except ValueError:
        return None, None
    while isinstance(shape, list) and shape and isinstance(shape[0], list):
        shape = shape[0]
    count = math.prod(shape) if isinstance(shape, list) and all(isinstance(d, int) for d in shape) else None
    first = kind[0] if isinstance(kind, list) and kind else None
    return count, _text(first)


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None
