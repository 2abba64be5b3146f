"""Dispatch chains: the path of op names from an annotation down to an op that launches GPU work
(``aten::linear → aten::matmul → aten::mm``) or to an op below which nothing launches
(``aten::linear → aten::t``).

Chains hold ``cpu_op`` names only and start below the nearest user annotation (a step, a
``record_function`` label or an Inductor ``## … ##`` marker), so compiled code reads as a bare
``aten::mm``. ``torch.compile``'s wrappers and pre-ops (``Torch-Compiled Region…``, ``TorchDynamo
Cache Lookup``, …, named in :mod:`tracetui.insight.compile_names`) are left out of chains; the diff
shows them on their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui.compare.scopes import cpu_tree
from tracetui.insight.compile_names import compile_wrapper
from tracetui.trace.categories import GPU_WORK, LAUNCH_CALLS
from tracetui.trace.nesting import ancestor_ids

if TYPE_CHECKING:
    from tracetui.trace import Trace

ARROW = " → "
_CHAIN_SCHEMA = pl.Schema([("id", pl.UInt32()), ("chain", pl.List(pl.String())), ("gpu_events", pl.UInt32())])


def dispatch_chains(trace: Trace) -> pl.DataFrame:
    """One row per chain end: ``id`` (the op), ``chain`` (op names, root first) and ``gpu_events``
    (GPU work the op launched itself; 0 for an op below which nothing launches).

    Ops that only pass work down (``aten::linear`` above ``aten::mm``) end no chain.
    """
    tree = cpu_tree(trace)
    if tree.is_empty():
        return pl.DataFrame(schema=_CHAIN_SCHEMA)
    is_node = (pl.col("cat") == "cpu_op") & ~compile_wrapper()
    stop = is_node | (pl.col("cat") == "user_annotation")
    tree = tree.with_columns(
        above=ancestor_ids(tree, stop, include_self=False),
        is_node=is_node.fill_null(False),
    )
    kinds = tree.select(pl.col("id").alias("above"), pl.col("is_node").alias("above_is_node"))
    tree = tree.join(kinds, on="above", how="left", maintain_order="left").with_columns(
        above=pl.when(pl.col("above_is_node")).then("above")
    )
    direct = _direct_launches(trace, tree)
    nodes = (
        tree.filter("is_node")
        .join(direct, on="id", how="left")
        .with_columns(pl.col("direct").fill_null(0))
        .select("id", "name", "above", "direct", "gpu_events")
    )
    paths = _paths(nodes.select("id", "name", "above"))
    ends = nodes.filter((pl.col("direct") > 0) | (pl.col("gpu_events").fill_null(0) == 0))
    return (
        ends.join(paths, on="id")
        .select("id", "chain", pl.col("direct").alias("gpu_events"))
        .cast(_CHAIN_SCHEMA)
        .sort("id")
    )


def _direct_launches(trace: Trace, tree: pl.DataFrame) -> pl.DataFrame:
    """``(id, direct)``: GPU work launched by runtime calls whose nearest chain node is the op."""
    work = (
        trace.gpu.filter(pl.col("cat").is_in(GPU_WORK) & pl.col("launch_id").is_not_null())
        .group_by("launch_id")
        .agg(pl.len().alias("direct"))
    )
    calls = tree.filter(pl.col("cat").is_in(LAUNCH_CALLS)).select(pl.col("id").alias("launch_id"), "above")
    return (
        calls.join(work, on="launch_id")
        .filter(pl.col("above").is_not_null())
        .group_by("above")
        .agg(pl.col("direct").sum())
        .rename({"above": "id"})
        .cast({"direct": pl.UInt32})
    )


def _paths(nodes: pl.DataFrame) -> pl.DataFrame:
    """``(id, chain)`` for every node, built one level at a time from the roots down."""
    level = nodes.filter(pl.col("above").is_null()).select("id", pl.concat_list("name").alias("chain"))
    rest = nodes.filter(pl.col("above").is_not_null())
    levels = [level]
    while not rest.is_empty() and not level.is_empty():
        parents = level.select(pl.col("id").alias("above"), pl.col("chain").alias("parent_chain"))
        level = rest.join(parents, on="above").select(
            "id", pl.concat_list("parent_chain", "name").alias("chain")
        )
        rest = rest.join(level.select("id"), on="id", how="anti")
        levels.append(level)
    return pl.concat(levels)
