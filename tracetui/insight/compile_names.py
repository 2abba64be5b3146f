"""What ``torch.compile`` writes around compiled code: the names of its CPU wrappers and pre-ops, and
their CPU cost (:func:`compile_overheads`).

``TorchDynamo Cache Lookup``, ``Pregraph bytecode`` and ``AOTDispatcher Runtime Wrapper Prologue``
run before the graph; ``Torch-Compiled Region: F/G`` (numbered per frame and graph) wraps it; the
autograd function ``CompiledFunction`` and its backward node ``CompiledFunctionBackward`` wrap the
forward and backward graphs of a training step. One definition for every reader: the summary's
pre-op costs, the dispatch chains (which leave them out) and the tree comparison (which opens them
so their children line up with eager code).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.trace.stats import DUR_NS, mean_us, sum_us
from tracetui.trace.text import starts_with

if TYPE_CHECKING:
    from tracetui.trace import Trace

PREOPS = ("TorchDynamo Cache Lookup", "Pregraph bytecode", "AOTDispatcher Runtime Wrapper Prologue")
AUTOGRAD_WRAPPERS = ("CompiledFunction", "CompiledFunctionBackward")
COMPILED_REGION = "Torch-Compiled Region"  # a prefix: "Torch-Compiled Region: 0/0"
WRAPPERS = (*PREOPS, *AUTOGRAD_WRAPPERS)


def is_compile_wrapper(name: str) -> bool:
    """Whether an op name is one of ``torch.compile``'s wrappers or pre-ops."""
    return name in WRAPPERS or name.startswith(COMPILED_REGION)


def compile_wrapper() -> pl.Expr:
    """:func:`is_compile_wrapper` over the ``name`` column."""
    return pl.col("name").is_in(WRAPPERS) | starts_with("name", COMPILED_REGION)


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
