"""Test-only helpers: the shown trees and the aligned pair tree as plain data to assert on.

They read the widgets' row lists directly (``_rows``, ``_depths``, ``_expanded``): what a test
checks is exactly what the widget would draw, and the widgets keep no API that only tests use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracetui.app.widgets.diff_tree import DiffTree
from tracetui.app.widgets.dispatch_tree import DispatchTree
from tracetui.compare.pair_tree import PairTree

PairRow = tuple[str, str, str]  # (marker, A's label, B's label)


def tree_as_data(tree: DispatchTree) -> list[dict[str, Any]]:
    """The dispatch tree's shown rows as nested ``{"label", "expanded", "children"}`` dicts."""
    assert tree.model is not None
    result: list[dict[str, Any]] = []
    stack: list[tuple[int, list[dict[str, Any]]]] = [(-1, result)]
    for key, depth in zip(tree._rows, tree._depths, strict=True):
        item: dict[str, Any] = {
            "label": tree.model.label(key),
            "expanded": key in tree._expanded,
            "children": [],
        }
        while stack[-1][0] >= depth:
            stack.pop()
        stack[-1][1].append(item)
        stack.append((depth, item["children"]))
    return result


def visible_labels(tree: DispatchTree) -> list[str]:
    """Every shown row as ``depth × "  " + label``."""
    assert tree.model is not None
    return ["  " * d + tree.model.label(k) for k, d in zip(tree._rows, tree._depths, strict=True)]


def pair_rows(tree: PairTree, pids: Sequence[int]) -> list[PairRow]:
    """``(marker, A's label, B's label)`` per pair."""
    return [(tree.pair(p).marker, *tree.labels(p)) for p in pids]


def rows_as_data(widget: DiffTree) -> list[PairRow]:
    """Every row the comparison's tree shows."""
    assert widget.model is not None
    return pair_rows(widget.model, widget._rows)


def cursor_as_data(widget: DiffTree) -> PairRow | None:
    """The cursor's row of the comparison's tree."""
    pid = widget.cursor_key
    return None if pid is None or widget.model is None else pair_rows(widget.model, [pid])[0]
