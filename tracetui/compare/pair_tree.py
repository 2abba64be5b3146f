"""Two dispatch trees aligned node by node: the comparison screen's data and ``diff --json``'s
``tree``. Pure (no widgets).

The aligned tree is a tree of *pairs* ``(a, b)``: a node of trace A and the matching node of trace
B, or one of them alone. Top level: steps paired by position, the other top nodes (*outside steps*,
threads of traces without steps, orphans) by name. Below a pair, the children of its two nodes are
aligned by a longest common subsequence (:mod:`~tracetui.compare.alignment`) of their match keys
(:mod:`~tracetui.compare.match_keys`): op, annotation and call names, GPU work by its
byte-identical name, threads by their name without numbers.

Where the two sides hold different structure around the same work, unmatched nodes are *opened*
(shown expanded, their children spliced into the sequence being aligned) and the level is aligned
again: torch.compile's wrappers and Inductor's ``## … ##`` markers always, and a node whose subtree
holds a GPU-launching op or GPU work named like a launching item of the other side. So eager
``aten::linear → aten::matmul → aten::mm`` lines up with compiled bare ``aten::mm`` (and their GEMM
kernels line up as identical), with ``aten::linear`` and ``aten::matmul`` shown only in A.

Children are aligned lazily, on first request, under a lock (the screen's workers walk the tree
for ``n`` / ``N`` while the UI thread renders it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from tracetui.compare.alignment import Key, Row, align, gaps
from tracetui.compare.match_keys import MatchKeys, Numbers, name_codes
from tracetui.views.subtree import node_record
from tracetui.views.tree import Node, NodeKey, TreeModel, single_child_chain

SAME, CHANGED, ONLY_A, ONLY_B = "same", "changed", "only_a", "only_b"
MARKERS = {SAME: " ", CHANGED: "~", ONLY_A: "−", ONLY_B: "+"}
STATUS_WORDS = {SAME: "in both", CHANGED: "in both, changed", ONLY_A: "only in A", ONLY_B: "only in B"}

GPU_REL = 0.10  # GPU time differs when it changes by more than 10 % …
GPU_ABS_US = 1.0  # … and by more than 1 µs
GAP_LIMIT = 64  # items per side in a gap that may be opened to align deeper
MAX_ROUNDS = 8  # open-and-realign passes per level
PEEK_DEPTH = 8  # how deep a node's subtree is searched for launching names …
PEEK_NODES = 512  # … and how many of its nodes at most


# ---- the aligned tree ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pair:
    """One row of the comparison: a node of A and/or of B. Depths are each side's own tree depth
    (-1 for the missing side); ``opened``: shown open, its children follow it as siblings."""

    id: int
    a: NodeKey | None
    b: NodeKey | None
    depth_a: int
    depth_b: int
    status: str
    parent: int | None
    index: int
    opened: bool = False

    @property
    def marker(self) -> str:
        return MARKERS[self.status]

    @property
    def one_sided(self) -> bool:
        return self.a is None or self.b is None


@dataclass(frozen=True, slots=True)
class _Item:
    """A node waiting to be aligned at one level (``opened``: its children follow it)."""

    key: NodeKey
    depth: int
    opened: bool = False


class PairTree:
    """The aligned tree of two :class:`TreeModel` s (A: before, B: after)."""

    def __init__(self, a: TreeModel, b: TreeModel) -> None:
        self.a = a
        self.b = b
        codes = name_codes(a, b)
        self._sides = {"a": MatchKeys(a, codes), "b": MatchKeys(b, codes)}
        self._pairs: list[Pair] = []
        self._children: dict[int, list[int]] = {}
        self._peeks: dict[tuple[int, NodeKey], frozenset[Key]] = {}
        self._lock = threading.RLock()
        self._tops = self._top_level()

    # ---- structure ----------------------------------------------------------------------------
    def tops(self) -> list[int]:
        """Top-level pairs: steps by position, then the other top nodes by name."""
        return list(self._tops)

    def pair(self, pid: int) -> Pair:
        return self._pairs[pid]

    def children(self, pid: int) -> list[int]:
        """The aligned children of a pair (computed on first request)."""
        cached = self._children.get(pid)
        if cached is None:
            with self._lock:
                cached = self._children.get(pid)
                if cached is None:
                    cached = self._children[pid] = self._align_children(self._pairs[pid])
        return cached

    def has_children(self, pid: int) -> bool:
        p = self._pairs[pid]
        if p.opened:
            return False
        return (p.a is not None and self.a.has_children(p.a)) or (
            p.b is not None and self.b.has_children(p.b)
        )

    def siblings(self, pid: int) -> list[int]:
        parent = self._pairs[pid].parent
        return self._tops if parent is None else self.children(parent)

    def path_of(self, pid: int) -> list[int]:
        """Pair ids from the top down to ``pid``."""
        path = [pid]
        while (parent := self._pairs[path[-1]].parent) is not None:
            path.append(parent)
        return path[::-1]

    def node(self, side: str, key: NodeKey) -> Node:
        return (self.a if side == "a" else self.b).node(key)

    def nodes(self, pid: int) -> tuple[Node | None, Node | None]:
        p = self._pairs[pid]
        return (
            None if p.a is None else self.a.node(p.a),
            None if p.b is None else self.b.node(p.b),
        )

    def labels(self, pid: int) -> tuple[str, str]:
        """The names the two halves of a row show (empty for a missing side)."""
        na, nb = self.nodes(pid)
        return ("" if na is None else na.name, "" if nb is None else nb.name)

    def changed(self, pid: int) -> frozenset[str]:
        """What differs in a pair present on both sides: ``"kernels"`` (kernel or GPU event
        counts) and ``"GPU"`` (time beyond the threshold)."""
        p = self._pairs[pid]
        if p.a is None or p.b is None:
            return frozenset()
        a, b = self._sides["a"].numbers(p.a), self._sides["b"].numbers(p.b)
        found = set()
        if a[0] != b[0] or a[1] != b[1]:
            found.add("kernels")
        if gpu_differs(a[2], b[2]):
            found.add("GPU")
        return frozenset(found)

    # ---- building ----------------------------------------------------------------------------
    def _new(self, a: _Item | None, b: _Item | None, parent: int | None, index: int) -> int:
        pid = len(self._pairs)
        opened = (a is not None and a.opened) or (b is not None and b.opened)
        self._pairs.append(
            Pair(
                id=pid,
                a=None if a is None else a.key,
                b=None if b is None else b.key,
                depth_a=-1 if a is None else a.depth,
                depth_b=-1 if b is None else b.depth,
                status=self._status(None if a is None else a.key, None if b is None else b.key),
                parent=parent,
                index=index,
                opened=opened,
            )
        )
        return pid

    def _status(self, a: NodeKey | None, b: NodeKey | None) -> str:
        if a is None:
            return ONLY_B
        if b is None:
            return ONLY_A
        return CHANGED if differs(self._sides["a"].numbers(a), self._sides["b"].numbers(b)) else SAME

    def _top_level(self) -> list[int]:
        tops_a, tops_b = self.a.tops(), self.b.tops()
        steps_a = [k for k in tops_a if isinstance(k, int)]
        steps_b = [k for k in tops_b if isinstance(k, int)]
        rows: list[tuple[_Item | None, _Item | None]] = [
            (None if x is None else _Item(x, 0), None if y is None else _Item(y, 0))
            for x, y in zip_longest(steps_a, steps_b)
        ]
        rest_a = [_Item(k, 0) for k in tops_a if not isinstance(k, int)]
        rest_b = [_Item(k, 0) for k in tops_b if not isinstance(k, int)]
        rows += self._rows(rest_a, rest_b, align(self._keys("a", rest_a), self._keys("b", rest_b)))
        with self._lock:
            return [self._new(x, y, None, index) for index, (x, y) in enumerate(rows)]

    def _align_children(self, p: Pair) -> list[int]:
        if p.opened:
            return []
        items_a = [] if p.a is None else [_Item(k, p.depth_a + 1) for k in self.a.children(p.a)]
        items_b = [] if p.b is None else [_Item(k, p.depth_b + 1) for k in self.b.children(p.b)]
        if p.a is None or p.b is None:
            rows: list[tuple[_Item | None, _Item | None]] = [(x, None) for x in items_a]
            rows += [(None, y) for y in items_b]
        else:
            rows = self._align_level(items_a, items_b)
        return [self._new(x, y, p.id, index) for index, (x, y) in enumerate(rows)]

    def _align_level(
        self, items_a: list[_Item], items_b: list[_Item]
    ) -> list[tuple[_Item | None, _Item | None]]:
        """Align one level; open unmatched wrappers and chains that hide matching work, and again."""
        for _ in range(MAX_ROUNDS):
            matched = align(self._keys("a", items_a), self._keys("b", items_b))
            open_a: set[int] = set()
            open_b: set[int] = set()
            for gap_a, gap_b in gaps(matched):
                if len(gap_a) > GAP_LIMIT or len(gap_b) > GAP_LIMIT:
                    continue
                self._choose_openings(items_a, items_b, gap_a, gap_b, open_a, open_b)
            if not open_a and not open_b:
                return self._rows(items_a, items_b, matched)
            items_a = self._open("a", items_a, open_a)
            items_b = self._open("b", items_b, open_b)
        return self._rows(items_a, items_b, align(self._keys("a", items_a), self._keys("b", items_b)))

    def _choose_openings(
        self,
        items_a: list[_Item],
        items_b: list[_Item],
        gap_a: list[int],
        gap_b: list[int],
        open_a: set[int],
        open_b: set[int],
    ) -> None:
        closed_a = [i for i in gap_a if not items_a[i].opened and self.a.has_children(items_a[i].key)]
        closed_b = [j for j in gap_b if not items_b[j].opened and self.b.has_children(items_b[j].key)]
        launch_a = {k for i in gap_a if (k := self._launching_key("a", items_a[i].key)) is not None}
        launch_b = {k for j in gap_b if (k := self._launching_key("b", items_b[j].key)) is not None}
        before = len(open_a) + len(open_b)
        for side, closed, items, other, chosen in (
            ("a", closed_a, items_a, launch_b, open_a),
            ("b", closed_b, items_b, launch_a, open_b),
        ):
            for index in closed:
                key = items[index].key
                if self._sides[side].is_wrapper(key) or self._peek(side, key) & other:
                    chosen.add(index)
        if len(open_a) + len(open_b) > before:
            return
        # Nothing on either side names the other's work at this level: open the chains whose
        # subtrees launch the same work (``foo → mm`` beside ``linear → matmul → mm``).
        below_a = {i: self._peek("a", items_a[i].key) for i in closed_a}
        below_b = {j: self._peek("b", items_b[j].key) for j in closed_b}
        union_a = frozenset().union(*below_a.values())
        union_b = frozenset().union(*below_b.values())
        open_a.update(i for i, keys in below_a.items() if keys & union_b)
        open_b.update(j for j, keys in below_b.items() if keys & union_a)

    def _open(self, side: str, items: list[_Item], chosen: set[int]) -> list[_Item]:
        if not chosen:
            return items
        model = self.a if side == "a" else self.b
        out: list[_Item] = []
        for index, item in enumerate(items):
            if index not in chosen:
                out.append(item)
                continue
            out.append(_Item(item.key, item.depth, opened=True))
            out += [_Item(k, item.depth + 1) for k in model.children(item.key)]
        return out

    def _rows(
        self, items_a: list[_Item], items_b: list[_Item], matched: list[Row]
    ) -> list[tuple[_Item | None, _Item | None]]:
        return [(None if i is None else items_a[i], None if j is None else items_b[j]) for i, j in matched]

    # ---- keys ---------------------------------------------------------------------------------
    def _keys(self, side: str, items: list[_Item]) -> list[Key]:
        key = self._sides[side].key
        return [key(item.key) for item in items]

    def _launching_key(self, side: str, key: NodeKey) -> Key | None:
        return self._sides[side].launching(key)

    def _peek(self, side: str, key: NodeKey) -> frozenset[Key]:
        """Launching keys below ``key`` (bounded by :data:`PEEK_DEPTH` and :data:`PEEK_NODES`)."""
        cache_key = (0 if side == "a" else 1, key)
        cached = self._peeks.get(cache_key)
        if cached is not None:
            return cached
        model = self.a if side == "a" else self.b
        found: set[Key] = set()
        level = model.children(key)
        seen = 0
        for _ in range(PEEK_DEPTH):
            below: list[NodeKey] = []
            for child in level:
                seen += 1
                launching = self._launching_key(side, child)
                if launching is not None:
                    found.add(launching)
                    below += model.children(child)
                if seen >= PEEK_NODES:
                    break
            if seen >= PEEK_NODES or not below:
                break
            level = below
        result = frozenset(found)
        self._peeks[cache_key] = result
        return result

    # ---- navigation ---------------------------------------------------------------------------
    def heat(self, pid: int) -> tuple[float, float]:
        """(GPU µs, CPU µs), the larger side's."""
        gpu = cpu = 0.0
        for node in self.nodes(pid):
            if node is not None:
                gpu, cpu = max(gpu, node.gpu_us or 0.0), max(cpu, node.cpu_us or 0.0)
        return gpu, cpu

    def hottest_path(self) -> list[int]:
        """The hottest pair from the top, then the hottest child (of those not opened) down."""
        tops = [p for p in self._tops if self.has_children(p)] or self._tops
        if not tops:
            return []
        path = [max(tops, key=self.heat)]
        while True:
            kids = self._closed_children(path[-1])
            if not kids:
                return path
            path.append(max(kids, key=self.heat))

    def chain_below(self, pid: int, side: str | None = None) -> list[int]:
        """Like :meth:`TreeModel.chain_below` over pairs; ``side`` ("a"/"b"): judge by that side's
        nodes only. Returns the pairs after ``pid``."""
        return single_child_chain(
            pid,
            self._closed_children,
            lambda k: self._launches(k, side, kernels=True),
            lambda k: self._launches(k, side, kernels=False),
        )

    def _closed_children(self, pid: int) -> list[int]:
        """Children that are not ``opened`` (an opened pair's children already follow it as siblings)."""
        return [k for k in self.children(pid) if not self._pairs[k].opened]

    def _launches(self, pid: int, side: str | None, *, kernels: bool) -> bool:
        for which, node in zip("ab", self.nodes(pid), strict=True):
            if node is None or (side is not None and which != side):
                continue
            if node.kind == "kernel" or (node.kernels if kernels else (node.is_gpu or node.gpu_events)):
                return True
        return False

    # ---- differences -----------------------------------------------------------------------------
    def is_difference(self, pid: int) -> bool:
        """A changed pair, or the first of a run of sibling pairs only in A (only in B)."""
        p = self._pairs[pid]
        if p.status == SAME:
            return False
        if p.status == CHANGED:
            return True
        if p.index == 0:
            return True
        return self._pairs[self.siblings(pid)[p.index - 1]].status != p.status

    def _descends(self, pid: int) -> bool:
        """Whether a walk looks inside ``pid`` (not inside one-sided subtrees: all one difference)."""
        p = self._pairs[pid]
        return not p.one_sided and self.has_children(pid)

    def next_in_order(self, pid: int | None) -> int | None:
        """The pair after ``pid`` in preorder (``None``: the first pair), skipping one-sided subtrees."""
        if pid is None:
            return self._tops[0] if self._tops else None
        if self._descends(pid) and (kids := self.children(pid)):
            return kids[0]
        current: int | None = pid
        while current is not None:
            p = self._pairs[current]
            siblings = self.siblings(current)
            if p.index + 1 < len(siblings):
                return siblings[p.index + 1]
            current = p.parent
        return None

    def previous_in_order(self, pid: int | None) -> int | None:
        """The pair before ``pid`` in preorder (``None``: the last pair)."""
        if pid is None:
            if not self._tops:
                return None
            return self._last_inside(self._tops[-1])
        p = self._pairs[pid]
        if p.index > 0:
            return self._last_inside(self.siblings(pid)[p.index - 1])
        return p.parent

    def _last_inside(self, pid: int) -> int:
        while self._descends(pid) and (kids := self.children(pid)):
            pid = kids[-1]
        return pid

    def find_difference(self, start: int | None, *, backwards: bool = False) -> tuple[int | None, bool]:
        """The next (previous) difference after ``start`` in preorder, wrapping once at the end;
        ``(pid, wrapped)``, ``(None, True)`` when the traces show no difference."""
        step = self.previous_in_order if backwards else self.next_in_order
        current = step(start)
        wrapped = False
        while True:
            if current is None:
                if wrapped or start is None:
                    return None, True
                wrapped = True
                current = step(None)
                continue
            if self.is_difference(current):
                return current, wrapped
            if wrapped and current == start:
                return None, True
            current = step(current)

    def walk(self) -> Iterator[tuple[int, int]]:
        """Every pair in preorder with its depth in the aligned tree (iterative: any depth)."""
        stack = [(pid, 0) for pid in reversed(self._tops)]
        while stack:
            pid, depth = stack.pop()
            yield pid, depth
            stack.extend((child, depth + 1) for child in reversed(self.children(pid)))


def differs(a: Numbers, b: Numbers) -> bool:
    """``(kernels, GPU events, GPU µs)`` of two nodes: different counts, or GPU times apart."""
    return a[0] != b[0] or a[1] != b[1] or gpu_differs(a[2], b[2])


def gpu_differs(a: float, b: float) -> bool:
    """GPU times apart by more than :data:`GPU_REL` of the larger and more than :data:`GPU_ABS_US`."""
    return abs(a - b) > max(GPU_ABS_US, GPU_REL * max(a, b))


# ---- plain data: ``diff --json``'s ``tree`` -------------------------------------------------------


def tree_records(tree: PairTree) -> list[dict[str, Any]]:
    """Every pair of the aligned tree in preorder, as JSON-ready records (docs/compare.md, ``tree``):
    ``index`` and ``parent`` are preorder positions, so the list is the same however the tree was
    walked before."""
    index: dict[int, int] = {}
    records: list[dict[str, Any]] = []
    for pid, depth in tree.walk():
        pair = tree.pair(pid)
        index[pid] = len(records)
        a, b = tree.nodes(pid)
        records.append(
            {
                "index": len(records),
                "parent": None if pair.parent is None else index[pair.parent],
                "depth": depth,
                "status": pair.status,
                "changed": sorted(tree.changed(pid)) if pair.status == CHANGED else [],
                "opened": pair.opened,
                "a": _node_record(a),
                "b": _node_record(b),
            }
        )
    return records


def _node_record(node: Node | None) -> dict[str, Any] | None:
    return None if node is None else node_record(node)
