"""Which tree nodes a critical path marks, as plain data: the events on it and every node above
them (the Why view's events, :class:`~tracetui.views.why.PathEvents`, on the dispatch tree)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from tracetui.trace.categories import GPU_KIND
from tracetui.views.tree import ORPHANS, OUTSIDE, NodeKey

if TYPE_CHECKING:
    from tracetui.views.tree import TreeModel


@dataclass(frozen=True)
class TreeMarks:
    """What the tree marks: ``on`` the events on a path, ``above`` the nodes that hold one."""

    on: frozenset[NodeKey] = frozenset()
    above: frozenset[NodeKey] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.on)

    def __or__(self, other: TreeMarks) -> TreeMarks:
        """Both marks (the paths found one by one, merged as each arrives)."""
        return TreeMarks(self.on | other.on, self.above | other.above)

    def of(self, key: NodeKey) -> str:
        """``"on"``, ``"above"`` or ``""`` for a node."""
        if key in self.on:
            return "on"
        return "above" if key in self.above else ""


NO_TREE_MARKS = TreeMarks()


def tree_marks(model: TreeModel, event_ids: Iterable[int], marks: TreeMarks = NO_TREE_MARKS) -> TreeMarks:
    """``marks`` with the events ``event_ids`` and every node above them: their ancestors up to
    their step (GPU work: through its launch call), the thread node they hang under and the top
    node (the keys of :meth:`~tracetui.views.tree.TreeModel.path_to`, found for all of them at
    once: one lookup per level). A node the filters hide is marked but not drawn."""
    trace = model.trace
    ids = pl.Series("id", sorted(set(event_ids) - marks.on), dtype=pl.UInt32)
    if ids.is_empty():
        return marks
    steps = pl.Series(model.step_ids, dtype=pl.UInt32).implode()
    launch = trace.lookup(ids, "launch_id")["launch_id"]
    gpu = trace.lookup(ids, "cat")["cat"].cast(pl.String).is_in(list(GPU_KIND))
    above: set[NodeKey] = set(marks.above)
    if (gpu & launch.is_null()).any():
        above.add(ORPHANS)
    frontier = pl.concat([ids.filter(~gpu), launch.filter(gpu).drop_nulls()]).unique()
    seen = set(launch.filter(gpu).drop_nulls().to_list())
    roots: list[pl.Series] = []
    while len(frontier):
        frontier = frontier.filter(~frontier.is_in(steps))  # a step is a top node: the climb ends
        parents = trace.lookup(frontier, "parent")["parent"]
        roots.append(frontier.filter(parents.is_null()))
        frontier = parents.drop_nulls().unique()
        frontier = frontier.filter(~frontier.is_in(pl.Series(list(seen), dtype=pl.UInt32).implode()))
        seen.update(frontier.to_list())
    above.update(seen)
    found = pl.concat(roots) if roots else pl.Series("id", [], dtype=pl.UInt32)
    places = trace.lookup(found.unique(), "step_id", "track")
    for step, track in places.unique().iter_rows():
        if not model.step_ids:
            above.add(("thread", None, track))
        elif step is None:
            above.update((OUTSIDE, ("thread", None, track)))
        else:
            above.update((step, ("thread", step, track)))
    on = marks.on | frozenset(ids.to_list())
    return TreeMarks(on, frozenset(above))
