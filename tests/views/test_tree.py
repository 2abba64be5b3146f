"""The tree model as plain data: top level, threads, GPU work under its call, paths, filters, find."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import tracetui
from tests.app.conftest import fixture
from tracetui.views.tree import ORPHANS, OUTSIDE, TreeModel, TreeOptions


@pytest.fixture(scope="module")
def mlp() -> TreeModel:
    return TreeModel(tracetui.load(fixture("mlp_eager")))


@pytest.fixture(scope="module")
def train() -> tracetui.Trace:
    return tracetui.load(fixture("mlp_train_tbhandler_stack_memory.pt.trace"))


def names(model: TreeModel, keys) -> list[str]:
    return [model.label(key) for key in keys]


def test_steps_are_the_top_level(mlp: TreeModel) -> None:
    assert names(mlp, mlp.tops()) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4", "outside steps"]
    step = mlp.tops()[0]
    assert names(mlp, mlp.children(step)) == ["mlp_fwd", "cudaDeviceSynchronize"]
    outside = mlp.children(OUTSIDE)
    assert [mlp.node(key).kind for key in outside] == ["thread", "thread"]


def test_gpu_work_hangs_under_its_launch_call(mlp: TreeModel) -> None:
    mm = mlp.find("aten::mm", exact=True)[0]
    calls = mlp.children(mm)
    assert names(mlp, calls) == ["cudaMemsetAsync", "cuLaunchKernelEx"]
    kernel = mlp.node(mlp.children(calls[1])[0])
    assert kernel.kind == "kernel" and kernel.where == "GPU 0 · stream 7"
    assert kernel.name == "nvjet gemm bf16 256x128 coopA TNT"  # the decoded short form
    assert kernel.full_name == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"


def test_ops_that_launched_nothing_are_marked(mlp: TreeModel) -> None:
    transpose = mlp.node(mlp.find("aten::t", exact=True)[0])
    assert transpose.no_kernel and transpose.gpu_events == 0
    assert not mlp.node(mlp.find("aten::mm", exact=True)[0]).no_kernel


def test_cpu_only_traces_mark_nothing() -> None:
    model = TreeModel(tracetui.load(fixture("cpu_only")))
    assert not any(model.node(key).no_kernel for top in model.tops() for key in model.walk(top))


def test_backward_ops_get_a_thread_node_in_their_step(train: tracetui.Trace) -> None:
    model = TreeModel(train)
    step = model.tops()[0]
    threads = [key for key in model.children(step) if isinstance(key, tuple)]
    assert names(model, threads) == ["thread 502 (pt_autograd_0)"]
    roots = names(model, model.children(threads[0]))
    assert roots[0] == "autograd::engine::evaluate_function: NllLossBackward0"
    assert model.node(step).kernels == model.node(step).kernels  # step totals include the thread's work
    assert model.node(step).gpu_events >= model.node(threads[0]).gpu_events


def test_steps_nested_in_python_frames_stay_top_level(train: tracetui.Trace) -> None:
    model = TreeModel(train)
    assert names(model, model.tops()) == ["ProfilerStep#2", "ProfilerStep#3", "outside steps"]
    module = next(key for key in model.walk(OUTSIDE) if model.label(key) == "probe.py(65): <module>")
    assert "ProfilerStep#2" not in names(model, model.children(module))


def test_hide_python_reparents_ops(train: tracetui.Trace) -> None:
    model = TreeModel(train, TreeOptions(hide_python=True))
    step = model.tops()[0]
    assert names(model, model.children(step))[0] == "my_fwd"
    assert not any(model.node(key).kind == "python" for key in model.walk(step))


def test_path_to_reaches_every_shown_event(train: tracetui.Trace) -> None:
    model = TreeModel(train)
    for key in list(model.walk(model.tops()[1]))[:300]:
        if isinstance(key, int):
            path = model.path_to(key)
            assert path is not None and path[-1] == key and path[0] == model.tops()[1]


def test_kernels_only_keeps_launchers_and_their_work(mlp: TreeModel) -> None:
    model = TreeModel(mlp.trace, TreeOptions(kernels_only=True))
    shown = [key for top in model.tops() for key in model.walk(top)]
    assert "aten::t" not in names(model, shown)
    assert sum(model.node(key).kind == "kernel" for key in shown) == 15
    assert model.path_to(mlp.find("aten::t", exact=True)[0]) is None


def test_name_filter_keeps_ancestors_and_subtrees(mlp: TreeModel) -> None:
    model = TreeModel(mlp.trace, TreeOptions(name_filter="GELU"))
    step = model.tops()[0]
    shown = names(model, model.walk(step))
    assert shown == ["mlp_fwd", "aten::gelu", "cudaLaunchKernel", "elementwise gelu ×8"]


def test_name_filter_matching_a_kernel_keeps_its_chain(mlp: TreeModel) -> None:
    model = TreeModel(mlp.trace, TreeOptions(name_filter="nvjet_sm90_tst_192x128"))
    shown = names(model, model.walk(model.tops()[0]))
    assert shown == ["mlp_fwd", "aten::linear", "aten::matmul", "aten::mm", "cuLaunchKernelEx", shown[-1]]
    assert shown[-1].startswith("nvjet gemm bf16 192x128")


def test_hottest_path_and_chain_below(mlp: TreeModel) -> None:
    path = names(mlp, mlp.hottest_path())
    assert path[:3] == ["ProfilerStep#4", "mlp_fwd", "aten::linear"] and path[-1].startswith("nvjet")
    linear = mlp.find("aten::linear", exact=True)[0]
    assert names(mlp, mlp.chain_below(linear))[:4] == [
        "aten::matmul",
        "aten::mm",
        "cuLaunchKernelEx",
        path[-1],
    ]
    mlp_fwd = mlp.find("mlp_fwd", exact=True)[0]
    assert mlp.chain_below(mlp_fwd) == []  # five ops launch kernels: the chain splits at once


def test_find_is_in_tree_order_and_case_insensitive(mlp: TreeModel) -> None:
    found = mlp.find("GeLu")
    kinds = [mlp.node(key).kind for key in found]
    assert kinds == ["op", "kernel"] * 3
    steps = [mlp.step_of(key) for key in found]
    assert steps == sorted(steps, key=mlp.step_ids.index)


def test_find_matches_the_names_the_tree_shows(mlp: TreeModel) -> None:
    """Issue 37 item 6: ``/nvjet gemm`` found nothing on the eager sample: GPU work is shown by its
    decoded short form (``nvjet gemm bf16 256x128 coopA TNT``), and found by it as by its raw name."""
    found = mlp.find("NVJET GEMM")
    assert found and all(mlp.node(key).kind == "kernel" for key in found)
    assert all("nvjet gemm" in mlp.node(key).name for key in found)
    raw = mlp.find("nvjet_sm90_tst")  # the raw names, as before
    assert set(raw) == set(found)
    every = [key for key in mlp.find("") if mlp.node(key).kind == "kernel"]
    assert found == [key for key in every if "nvjet gemm" in mlp.node(key).name.lower()]
    label = mlp.node(found[0]).name
    assert mlp.find(label, exact=True) == [key for key in found if mlp.node(key).name == label]
    assert mlp.find("nvjet gemm", exact=True) == []


def test_cuda_graph_launch_holds_all_its_work() -> None:
    model = TreeModel(tracetui.load(fixture("cuda_graph_replay")))
    launch = model.find("cudaGraphLaunch", exact=True)[0]
    work = [model.node(key) for key in model.children(launch)]
    assert len(work) == 7 and {node.kind for node in work} == {"kernel", "memset"}


def test_orphans_get_a_synthetic_node(orphan_path: Path) -> None:
    model = TreeModel(tracetui.load(orphan_path))
    assert model.tops()[-1] == ORPHANS
    assert [model.node(key).full_name for key in model.children(ORPHANS)] == [
        "lost_kernel_a",
        "lost_kernel_b",
    ]
    assert model.path_to(model.children(ORPHANS)[0]) == [ORPHANS, model.children(ORPHANS)[0]]
    assert model.node(ORPHANS).gpu_us == 10.0


def test_deep_stack_is_walked_without_recursion(deep_path: Path) -> None:
    model = TreeModel(tracetui.load(deep_path))
    path = model.hottest_path()
    assert len(path) == 3004 and model.node(path[-1]).full_name == "deep_gemm_kernel"
    assert model.path_to(path[-1]) == path
    assert sum(1 for _ in model.walk(path[0])) == 3003


def test_one_definition_of_a_step(tmp_path: Path) -> None:
    """``ProfilerStep#`` and ASCII digits, in every reader: the tree's kinds, the steps table and the
    comparison's match keys. ``ProfilerStep#٣`` (an Arabic-Indic digit) is an annotation; it used to
    pass the loader's step test and then fail to parse as a step number (an internal error)."""
    from tests.app.synthetic import op, write
    from tracetui.compare.match_keys import MatchKeys, name_codes

    events = [
        op("ProfilerStep#٣", 0, 10, cat="user_annotation"),
        op("ProfilerStep#7", 20, 10, cat="user_annotation"),
        op("ProfilerStep#8x", 40, 10, cat="user_annotation"),
        op("aten::mm", 21, 5),
    ]
    trace = tracetui.load(write(tmp_path / "steps.json", events))
    assert trace.steps.select("name", "step").rows() == [("ProfilerStep#7", 7)]
    assert trace.annotations["name"].to_list() == ["ProfilerStep#٣", "ProfilerStep#8x"]
    model = TreeModel(trace)
    kinds = {model.node(k).name: model.node(k).kind for k in trace.events["id"].to_list()}
    assert kinds == {
        "ProfilerStep#٣": "annotation",
        "ProfilerStep#7": "step",
        "ProfilerStep#8x": "annotation",
        "aten::mm": "op",
    }
    keys = MatchKeys(model, name_codes(model))
    assert {trace.event(k)["name"]: keys.key(k)[0] for k in trace.events["id"].to_list()} == kinds


@pytest.mark.parametrize("name", ["mlp_train_tbhandler_stack_memory.pt.trace", "mlp_eager"])
def test_the_preorder_shape_nests_like_the_sorted_index(name: str) -> None:
    """The unfiltered tree reads its nesting from the preorder's ranges; the filtered one from
    sorted indexes: with every CPU event kept they agree on every node."""
    from tracetui.views.tree import _Filtered, _Preorder

    trace = tracetui.load(fixture(name))
    steps = frozenset(TreeModel(trace).step_ids)
    every = trace.events.filter(pl.col("pos").is_not_null()).select("id")
    ranges, index = _Preorder(trace, steps), _Filtered(trace, every, False, steps)
    assert ranges.roots.equals(index.roots)
    assert ranges.visible_ids().equals(index.visible_ids())
    for event_id in trace.events["id"].to_list():
        assert ranges.children(event_id) == index.children(event_id), event_id
        assert ranges.has_children(event_id) == index.has_children(event_id), event_id
        assert ranges.parent_of(event_id) == index.parent_of(event_id), event_id
        assert ranges.visible(event_id) == index.visible(event_id), event_id
    assert ranges.children(1 << 31) == [] and ranges.parent_of(1 << 31) is None


def test_the_autograd_wrapper_leads_to_the_forward_op_of_the_node_it_evaluates() -> None:
    """Issue 14 item 12: ``f`` on ``autograd::engine::evaluate_function: XBackward0`` (the node users
    land on) goes where ``f`` on its ``XBackward0`` child goes; the fixture's fwdbwd flows, read by
    hand, bind each XBackward0 to its forward op."""
    import gzip
    import json

    path = fixture("mlp_train_tbhandler_stack_memory.pt.trace")
    trace = tracetui.load(path)
    model = TreeModel(trace)
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    flows = {
        (e["pid"], e["tid"], e["ts"]): e["id"] for e in events if e.get("cat") == "fwdbwd" and e["ph"] == "f"
    }
    starts = {
        e["id"]: (e["pid"], e["tid"], e["ts"]) for e in events if e.get("cat") == "fwdbwd" and e["ph"] == "s"
    }
    wrapper = pl.col("name").cast(pl.String).str.starts_with("autograd::engine::evaluate_function: ")
    wrappers = trace.events.filter(wrapper)
    checked = 0
    for wrapper, name in wrappers.select("id", "name").iter_rows():
        inner = name.removeprefix("autograd::engine::evaluate_function: ")
        child = next(
            (c for c in model.children(wrapper) if isinstance(c, int) and model.node(c).name == inner), None
        )
        if child is None:
            continue
        raw = events[child]
        flow = flows.get((raw["pid"], raw["tid"], raw["ts"]))
        if flow is None:
            continue
        forward = model.forward_of(wrapper)
        assert forward is not None and forward == model.forward_of(child)
        pid, tid, ts = starts[flow]
        assert (events[forward]["pid"], events[forward]["tid"], events[forward]["ts"]) == (pid, tid, ts)
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("run", ["ddp_2rank_nccl", "gloo_4rank_mlp"])
def test_the_hottest_chain_follows_the_gpu_time_below_each_row(run: str) -> None:
    """A step or annotation row counts the GPU work of every thread while open (issue 14 item 1), but
    only its own thread's work lies below it: the opening chain went into train_step's optimizer (a
    41.6 µs kernel) past the autograd thread's row holding the step's 304.5 µs allreduce copy. At each
    level it takes the child with the most GPU time in the GPU rows below it, summed here by hand."""
    from itertools import pairwise

    from tests.app.conftest import FIXTURES

    path = sorted((FIXTURES / "ranks" / run).glob("*.json.gz"))[0]
    model = TreeModel(tracetui.load(path))

    def below(key: object) -> float:
        rows = [model.node(k) for k in (key, *model.walk(key))]  # type: ignore[arg-type]
        return sum(n.gpu_us or 0.0 for n in rows if n.kind in ("kernel", "memcpy", "memset"))

    chain = model.hottest_path()
    assert len(chain) > 3
    for parent, chosen in pairwise(chain):
        assert below(chosen) == pytest.approx(max(below(k) for k in model.children(parent))), chosen
