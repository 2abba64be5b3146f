"""What two dispatch-tree nodes must share to be paired, and which nodes may be opened to pair
deeper: the pair tree's match keys, one :class:`MatchKeys` per trace.

A node's key is its kind and name (GPU work: its byte-identical name); a thread's is its name
without numbers (pid and tid differ between runs); a synthetic node's is its kind. Keys, counts and
GPU times are plain lists indexed by event row, so pairing a node costs no polars call; names are
coded by a dictionary the two sides share (:func:`name_codes`).
"""

from __future__ import annotations

import re
from collections.abc import Hashable

import polars as pl

from tracetui.insight.compile_names import is_compile_wrapper
from tracetui.trace.links import is_marker_name
from tracetui.views.tree import GPU_KINDS, NodeKey, TreeModel

Key = Hashable
Numbers = tuple[int, int, float]  # kernels, GPU events, GPU µs
LAUNCHING_KINDS = frozenset({"annotation", "op", "python"})  # keyed by the GPU work below them


def name_codes(*models: TreeModel) -> pl.DataFrame:
    """``(name, code)``: one integer per distinct event name of all ``models``."""
    names = pl.concat([m.trace.events.select("name") for m in models])
    return names.unique(maintain_order=True).with_row_index("code")


class MatchKeys:
    """One trace's tree with per-event match keys and numbers as plain lists (row-indexed)."""

    def __init__(self, model: TreeModel, codes: pl.DataFrame) -> None:
        self.model = model
        gpu = pl.col("kind").is_in(list(GPU_KINDS))
        frame = (
            model.trace.events.select("name", "dur", "gpu_us", "kernels", "gpu_events")
            .with_columns(kind=model.kinds.cast(pl.String))
            .select(
                "kind",
                "name",
                pl.when(gpu)
                .then(pl.col("dur"))
                .otherwise(pl.col("gpu_us").clip(0))
                .fill_null(0.0)
                .alias("gpu"),
                pl.when(gpu).then(0).otherwise(pl.col("kernels")).fill_null(0).alias("kernels"),
                pl.when(gpu).then(0).otherwise(pl.col("gpu_events")).fill_null(0).alias("events"),
            )
            .join(codes, on="name", how="left", maintain_order="left")
        )
        self.kind: list[str] = frame["kind"].to_list()
        self.code: list[int] = frame["code"].to_list()
        self.gpu: list[float] = frame["gpu"].to_list()
        self.kernels: list[int] = frame["kernels"].to_list()
        self.events: list[int] = frame["events"].to_list()
        self.steps = frozenset(model.step_ids)

    def key(self, key: NodeKey) -> Key:
        """What two nodes must share to be paired."""
        if isinstance(key, tuple):
            if key[0] == "thread":
                return ("thread", re.sub(r"\d+", "#", self.model.node(key).name))
            return key[:1]
        row = self.model.row(key)
        return (self.kind[row], self.code[row])

    def numbers(self, key: NodeKey) -> Numbers:
        """(kernels, GPU events, GPU µs) of a node."""
        if isinstance(key, tuple) or key in self.steps:
            node = self.model.node(key)
            return node.kernels or 0, node.gpu_events or 0, node.gpu_us or 0.0
        row = self.model.row(key)
        return self.kernels[row], self.events[row], self.gpu[row]

    def launching(self, key: NodeKey) -> Key | None:
        """The key of GPU work, or of an op, annotation or frame with GPU work below it; else ``None``."""
        if not isinstance(key, int):
            return None
        row = self.model.row(key)
        kind = self.kind[row]
        if kind in GPU_KINDS or (kind in LAUNCHING_KINDS and self.events[row]):
            return (kind, self.code[row])
        return None

    def is_wrapper(self, key: NodeKey) -> bool:
        """torch.compile's wrappers and pre-ops, and Inductor's ``## … ##`` markers: structure one
        side has around the same work, opened whenever it stands unmatched."""
        if not isinstance(key, int):
            return False
        node = self.model.node(key)
        if node.kind == "annotation":
            return is_marker_name(node.full_name)
        return node.kind == "op" and is_compile_wrapper(node.full_name)
