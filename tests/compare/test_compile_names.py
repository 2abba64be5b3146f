"""torch.compile's wrapper names, one definition for every reader: the pre-op costs, the dispatch
chains and the tree comparison agree on a compiled training step (forward and backward)."""

from __future__ import annotations

import polars as pl

from tests.compare.conftest import fixture
from tracetui.compare.chains import dispatch_chains
from tracetui.compare.match_keys import MatchKeys, name_codes
from tracetui.compare.pair_tree import PairTree
from tracetui.insight.compile_names import compile_overheads, compile_wrapper, is_compile_wrapper
from tracetui.views.tree import TreeModel

WRAPPERS = {
    "TorchDynamo Cache Lookup",
    "Pregraph bytecode",
    "AOTDispatcher Runtime Wrapper Prologue",
    "Torch-Compiled Region: 0/0",
    "CompiledFunction",
    "CompiledFunctionBackward",  # the backward twin: a prefix in one copy, missing in the other
}
NOT_WRAPPERS = {
    "autograd::engine::evaluate_function: CompiledFunctionBackward",
    "CompiledFunctionX",
    "aten::mm",
}


def test_the_names() -> None:
    assert all(is_compile_wrapper(n) for n in WRAPPERS)
    assert not any(is_compile_wrapper(n) for n in NOT_WRAPPERS)
    frame = pl.DataFrame({"name": sorted(WRAPPERS | NOT_WRAPPERS)})
    assert set(frame.filter(compile_wrapper())["name"]) == WRAPPERS


def test_every_reader_of_a_compiled_training_step_agrees() -> None:
    trace = fixture("capture_mlp_compiled_train")
    in_trace = set(trace.events.filter(pl.col("cat") == "cpu_op")["name"].unique()) & WRAPPERS
    assert in_trace == WRAPPERS  # forward and backward wrappers are all in this capture
    overheads = compile_overheads(trace)
    assert set(overheads["name"]) >= WRAPPERS
    assert overheads.filter(pl.col("name") == "CompiledFunctionBackward")["calls"].item() == 3
    chained = {name for chain in dispatch_chains(trace)["chain"].to_list() for name in chain}
    assert not chained & WRAPPERS and "aten::mm" in chained
    model = TreeModel(trace)
    keys = MatchKeys(model, name_codes(model))
    cpu = trace.events.filter(pl.col("cat").is_in(["cpu_op", "user_annotation"]))
    names = dict(zip(cpu["id"].to_list(), cpu["name"].to_list(), strict=True))
    wrappers = {names[i] for i in names if keys.is_wrapper(i)}
    assert wrappers == WRAPPERS | {n for n in wrappers if n.startswith("## ")}  # and Inductor's markers


def test_the_comparison_opens_the_backward_wrapper() -> None:
    tree = PairTree(TreeModel(fixture("mlp_train_eager_default")), TreeModel(fixture("mlp_train_compiled")))
    opened = set()
    for pid, _ in tree.walk():
        node = tree.nodes(pid)[1]
        if tree.pair(pid).opened and node is not None:
            opened.add(node.full_name)
    assert {"CompiledFunction", "CompiledFunctionBackward"} <= opened
