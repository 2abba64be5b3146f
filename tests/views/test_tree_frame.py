"""The tree's first frame kept in the trace's parts: a tree from it is the tree computed from the
events, node for node; a part that does not decode is computed again, never served."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import tracetui
from tests.app.conftest import fixture
from tracetui.trace import Trace
from tracetui.trace.model import DEVICES
from tracetui.views import tree_frame
from tracetui.views.tree import NodeKey, TreeModel, TreeOptions

TRACES = ["mlp_eager", "mlp_train_tbhandler_stack_memory.pt.trace", "cpu_only", "cuda_graph_replay"]


class Parts:
    """An in-memory part store that counts its reads and writes."""

    def __init__(self) -> None:
        self.kept: dict[str, dict[str, bytes]] = {}
        self.gets: list[str] = []
        self.puts: list[str] = []

    def get(self, kind: str) -> dict[str, bytes] | None:
        self.gets.append(kind)
        return self.kept.get(kind)

    def put(self, kind: str, parts: dict[str, bytes]) -> None:
        self.puts.append(kind)
        self.kept[kind] = dict(parts)


def with_parts(path: Path, parts: Parts) -> Trace:
    trace = tracetui.load(path)
    trace.parts = parts
    return trace


def every_key(model: TreeModel) -> Iterator[NodeKey]:
    for top in model.tops():
        yield top
        yield from model.walk(top)


def assert_same_tree(kept: TreeModel, fresh: TreeModel) -> None:
    """Every question the explorer asks, answered alike."""
    assert kept.tops() == fresh.tops()
    assert kept.hottest_path() == fresh.hottest_path()
    assert kept.step_ids == fresh.step_ids and kept.has_gpu == fresh.has_gpu
    keys = list(every_key(fresh))
    assert list(every_key(kept)) == keys
    for key in keys:
        assert kept.node(key) == fresh.node(key), key
        assert kept.children(key) == fresh.children(key), key
        assert kept.has_children(key) == fresh.has_children(key), key
        assert kept.step_of(key) == fresh.step_of(key), key
        assert kept.path_of(key) == fresh.path_of(key), key
        assert kept.is_span(key) == fresh.is_span(key), key
    for top in fresh.tops():
        assert kept.chain_below(top) == fresh.chain_below(top)
    assert kept.find("a") == fresh.find("a")
    assert kept.kinds.equals(fresh.kinds)


@pytest.mark.parametrize("name", TRACES)
def test_a_tree_from_its_kept_first_frame_is_the_computed_tree(name: str) -> None:
    parts = Parts()
    computed = TreeModel(with_parts(fixture(name), parts))
    path = computed.first_frame()
    assert parts.puts.count(tree_frame.KIND) == 1 and path == computed.hottest_path()
    reopened = TreeModel(with_parts(fixture(name), parts))
    assert reopened._first is not None  # from the part
    assert reopened.first_frame() == path and parts.puts.count(tree_frame.KIND) == 1  # not kept again
    assert_same_tree(reopened, TreeModel(tracetui.load(fixture(name))))


def test_the_first_frame_needs_no_events() -> None:
    parts = Parts()
    TreeModel(with_parts(fixture("mlp_train_tbhandler_stack_memory.pt.trace"), parts)).first_frame()
    trace = with_parts(fixture("mlp_train_tbhandler_stack_memory.pt.trace"), parts)
    model = TreeModel(trace)
    path = model.hottest_path()
    shown = [*model.tops(), *(kid for key in path[:-1] for kid in model.children(key))]
    rows = [(model.node(key), model.has_children(key), model.step_of(key)) for key in shown]
    assert len(rows) > 10
    assert model._shape is None  # the CPU structure was not built
    fresh = TreeModel(tracetui.load(fixture("mlp_train_tbhandler_stack_memory.pt.trace")))
    assert rows == [(fresh.node(key), fresh.has_children(key), fresh.step_of(key)) for key in shown]


def test_filters_and_traces_without_parts_keep_nothing() -> None:
    parts = Parts()
    trace = with_parts(fixture("mlp_eager"), parts)
    TreeModel(trace, TreeOptions(kernels_only=True)).first_frame()
    TreeModel(trace, TreeOptions(hide_python=True)).first_frame()
    assert tree_frame.KIND not in parts.puts and tree_frame.KIND not in parts.gets
    model = TreeModel(tracetui.load(fixture("mlp_eager")))  # no part store: nothing computed for one
    model.first_frame()
    assert model._first is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda kept: kept | {"frame.msgpack": kept["frame.msgpack"][:-7]},  # truncated
        lambda kept: kept | {"frame.msgpack": b"\x93\x01\x02\x03"},  # another shape
        lambda kept: kept | {"launched.arrow": kept["spans.arrow"]},  # another table
        lambda kept: {k: v for k, v in kept.items() if k != "spans.arrow"},  # a part missing
    ],
)
def test_a_part_that_does_not_decode_is_computed_again(damage: object) -> None:
    parts = Parts()
    TreeModel(with_parts(fixture("mlp_eager"), parts)).first_frame()
    parts.kept[tree_frame.KIND] = damage(parts.kept[tree_frame.KIND])  # type: ignore[operator]
    model = TreeModel(with_parts(fixture("mlp_eager"), parts))
    assert model._first is None  # computed from the events
    assert_same_tree(model, TreeModel(tracetui.load(fixture("mlp_eager"))))
    model.first_frame()  # and kept again
    assert TreeModel(with_parts(fixture("mlp_eager"), parts))._first is not None


def test_a_first_frame_past_the_row_cap_keeps_the_chain_and_reads_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parts = Parts()
    monkeypatch.setattr(tree_frame, "MAX_ROWS", 3)
    computed = TreeModel(with_parts(fixture("mlp_eager"), parts))
    computed.first_frame()
    reopened = TreeModel(with_parts(fixture("mlp_eager"), parts))
    assert reopened._first is not None
    assert set(reopened._first.nodes) == {*computed.tops(), *computed.hottest_path()}
    assert_same_tree(reopened, TreeModel(tracetui.load(fixture("mlp_eager"))))


def test_devices_are_kept_and_a_damaged_part_is_computed_again() -> None:
    parts = Parts()
    devices = with_parts(fixture("mlp_eager"), parts).devices
    assert devices and DEVICES in parts.kept
    assert with_parts(fixture("mlp_eager"), parts).devices == devices
    assert parts.puts.count(DEVICES) == 1
    parts.kept[DEVICES] = {"devices.msgpack": b"\xc1"}  # not msgpack
    assert with_parts(fixture("mlp_eager"), parts).devices == devices
    assert parts.puts.count(DEVICES) == 2


def test_a_kept_node_is_served_as_kept() -> None:
    """The rows come from the part (a tampered one shows: the CRC of the cache guards the bytes)."""
    parts = Parts()
    model = TreeModel(with_parts(fixture("mlp_eager"), parts))
    model.first_frame()
    frame, rows = tree_frame.read(parts, type(model.node(model.tops()[0])))  # type: ignore[misc]
    top = model.tops()[0]
    rows.nodes[top] = replace(rows.nodes[top], name="renamed")
    tree_frame.write(parts, frame, rows)
    assert TreeModel(with_parts(fixture("mlp_eager"), parts)).label(top) == "renamed"


def test_warming_a_tree_from_its_kept_first_frame_changes_no_answer() -> None:
    parts = Parts()
    TreeModel(with_parts(fixture("mlp_eager"), parts)).first_frame()
    model = TreeModel(with_parts(fixture("mlp_eager"), parts))
    assert model._first is not None and model._shape is None
    model.warm()
    assert model._shape is not None
    assert_same_tree(model, TreeModel(tracetui.load(fixture("mlp_eager"))))
