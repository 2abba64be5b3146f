"""The pair tree, without widgets: two real dispatch trees aligned node by node."""

from __future__ import annotations

from functools import cache

import pytest

import tracetui
from tests.app.conftest import fixture
from tests.as_data import pair_rows
from tracetui.compare.pair_tree import CHANGED, ONLY_A, ONLY_B, SAME, PairTree, differs
from tracetui.views.tree import TreeModel

ROWS = list[tuple[str, str, str]]


@cache
def tree(name: str) -> TreeModel:
    return TreeModel(tracetui.load(fixture(name)))


def model(a: str, b: str) -> PairTree:
    return PairTree(tree(a), tree(b))


def subtree_rows(diff: PairTree, pid: int) -> ROWS:
    """Rows below ``pid`` with every two-sided pair expanded (one-sided pairs stay closed)."""
    rows: ROWS = []
    stack = list(reversed(diff.children(pid)))
    while stack:
        current = stack.pop()
        rows += pair_rows(diff, [current])
        if not diff.pair(current).one_sided:
            stack.extend(reversed(diff.children(current)))
    return rows


def find(diff: PairTree, a: str, b: str, under: int | None = None) -> int:
    """The first pair labelled ``(a, b)`` (in the tops, or below ``under``)."""
    pids = diff.tops() if under is None else diff.children(under)
    return next(p for p in pids if diff.labels(p) == (a, b))


def test_gpu_time_threshold() -> None:
    assert not differs((1, 1, 56.5), (1, 1, 61.6))  # 8 %: the same GEMM
    assert differs((1, 1, 100.0), (1, 1, 112.0))  # 10.7 % of the larger
    assert not differs((0, 0, 0.4), (0, 0, 1.2))  # under a microsecond
    assert differs((5, 7, 234.5), (4, 6, 234.5))  # counts


# ---- eager vs compiled MLP ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mlp() -> PairTree:
    return model("mlp_eager", "mlp_compiled")


def test_steps_pair_by_position_and_outside_by_name(mlp: PairTree) -> None:
    tops = pair_rows(mlp, mlp.tops())
    assert tops == [
        ("~", "ProfilerStep#2", "ProfilerStep#2"),
        ("~", "ProfilerStep#3", "ProfilerStep#3"),
        ("~", "ProfilerStep#4", "ProfilerStep#4"),
        (" ", "outside steps", "outside steps"),
    ]


def test_mlp_fwd_aligns_gemms_and_shows_the_fusion(mlp: PairTree) -> None:
    step = find(mlp, "ProfilerStep#4", "ProfilerStep#4")
    mlp_fwd = find(mlp, "mlp_fwd", "mlp_fwd", under=step)
    assert mlp.pair(mlp_fwd).status == CHANGED  # 5 → 4 kernels
    rows = pair_rows(mlp, mlp.children(mlp_fwd))
    chain = [
        ("−", "aten::linear", ""),
        ("−", "aten::t", ""),
        ("−", "aten::matmul", ""),
        ("−", "aten::reshape", ""),
    ]
    wrappers = [
        ("+", "", "TorchDynamo Cache Lookup"),
        ("+", "", "Torch-Compiled Region: 1/0"),
        ("+", "", "Pregraph bytecode"),
        ("+", "", "AOTDispatcher Runtime Wrapper Prologue"),
    ]
    mm = (" ", "aten::mm", "aten::mm")
    assert rows[:4] == chain
    assert rows[4:8] == wrappers and rows[8][2].startswith("## Call CompiledFxGraph")
    assert rows[9] == mm
    assert rows[10:12] == [("−", "aten::_unsafe_view", ""), ("−", "aten::gelu", "")]
    assert rows[12:16] == chain and rows[16] == mm
    assert rows[17:19] == [("−", "aten::_unsafe_view", ""), ("−", "aten::mul", "")]
    assert rows[19:23] == chain
    assert rows[23] == ("+", "", "triton_poi_fused__unsafe_view_gelu_mul_0")
    assert rows[24:] == [mm, ("−", "aten::_unsafe_view", "")]
    # each side keeps its own tree: linear → matmul → mm on the left, the marker → mm on the right
    pairs = [mlp.pair(p) for p in mlp.children(mlp_fwd)]
    assert [p.depth_a for p in pairs[:4]] + [pairs[9].depth_a] == [2, 3, 3, 4, 4]
    assert [p.depth_b for p in pairs[4:10]] == [2, 2, 3, 3, 3, 4]
    assert [p.opened for p in pairs[:4]] == [True, False, True, False]


def test_gemm_kernels_are_identical_and_the_fused_kernel_only_in_b(mlp: PairTree) -> None:
    step = find(mlp, "ProfilerStep#4", "ProfilerStep#4")
    rows = subtree_rows(mlp, find(mlp, "mlp_fwd", "mlp_fwd", under=step))
    kernels = [r for r in rows if r[1].startswith("nvjet") or r[2].startswith("nvjet")]
    assert kernels == [
        (" ", "nvjet gemm bf16 256x128 coopA TNT", "nvjet gemm bf16 256x128 coopA TNT"),
        (" ", "nvjet gemm bf16 256x128 coopA TNT", "nvjet gemm bf16 256x128 coopA TNT"),
        (" ", "nvjet gemm bf16 192x128 coopB TNT", "nvjet gemm bf16 192x128 coopB TNT"),
    ]
    triton = find(
        mlp, "", "triton_poi_fused__unsafe_view_gelu_mul_0", under=find(mlp, "mlp_fwd", "mlp_fwd", step)
    )
    below = pair_rows(mlp, [p for p in _walk(mlp, triton)])
    assert below == [("+", "", "cuLaunchKernel"), ("+", "", "inductor poi _unsafe_view+gelu+mul #0")]
    gelu = find(mlp, "aten::gelu", "", under=find(mlp, "mlp_fwd", "mlp_fwd", step))
    assert pair_rows(mlp, list(_walk(mlp, gelu))) == [
        ("−", "cudaLaunchKernel", ""),
        ("−", "elementwise gelu ×8", ""),
    ]


def _walk(diff: PairTree, pid: int) -> list[int]:
    out: list[int] = []
    stack = list(reversed(diff.children(pid)))
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(diff.children(current)))
    return out


def test_differences_walk_hunks_in_tree_order_and_wrap(mlp: PairTree) -> None:
    found, start = [], None
    for _ in range(9):
        pid, wrapped = mlp.find_difference(start)
        assert pid is not None
        found.append((mlp.pair(pid).marker, *mlp.labels(pid), wrapped))
        start = pid
    assert found[:8] == [
        ("~", "ProfilerStep#2", "ProfilerStep#2", False),
        ("~", "mlp_fwd", "mlp_fwd", False),
        ("−", "aten::linear", "", False),  # the chain that disappeared, one hunk
        ("+", "", "TorchDynamo Cache Lookup", False),  # torch.compile's wrappers, one hunk
        ("−", "aten::_unsafe_view", "", False),
        ("−", "aten::_unsafe_view", "", False),
        ("+", "", "triton_poi_fused__unsafe_view_gelu_mul_0", False),
        ("−", "aten::_unsafe_view", "", False),
    ]
    last = mlp.tops()[2]
    backwards = []
    for _ in range(3):
        pid, wrapped = mlp.find_difference(last, backwards=True)
        assert pid is not None
        backwards.append(mlp.labels(pid))
        last = pid
    assert backwards == [
        ("aten::_unsafe_view", ""),
        ("", "triton_poi_fused__unsafe_view_gelu_mul_0"),
        ("aten::_unsafe_view", ""),
    ]
    pid, wrapped = mlp.find_difference(mlp.tops()[-1])
    assert wrapped and mlp.labels(pid) == ("ProfilerStep#2", "ProfilerStep#2")


def test_hottest_path_and_chain(mlp: PairTree) -> None:
    path = [mlp.labels(p) for p in mlp.hottest_path()]
    assert path[:3] == [("ProfilerStep#4",) * 2, ("mlp_fwd",) * 2, ("aten::mm",) * 2]
    assert path[-1] == ("nvjet gemm bf16 256x128 coopA TNT",) * 2
    mm = mlp.hottest_path()[2]
    assert [mlp.labels(p)[0] for p in mlp.chain_below(mm)] == [
        "cuLaunchKernelEx",
        "nvjet gemm bf16 256x128 coopA TNT",
    ]
    assert [p for p in mlp.path_of(mlp.hottest_path()[-1])] == mlp.hottest_path()


def test_reverse_direction_mirrors(mlp: PairTree) -> None:
    back = model("mlp_compiled", "mlp_eager")
    step = find(back, "ProfilerStep#4", "ProfilerStep#4")
    rows = pair_rows(back, back.children(find(back, "mlp_fwd", "mlp_fwd", under=step)))
    forward = pair_rows(
        mlp,
        mlp.children(find(mlp, "mlp_fwd", "mlp_fwd", under=find(mlp, "ProfilerStep#4", "ProfilerStep#4"))),
    )
    flip = {"−": "+", "+": "−", " ": " ", "~": "~"}
    assert sorted((flip[m], b, a) for m, a, b in rows) == sorted(forward)


def test_a_trace_against_itself_has_no_difference() -> None:
    same = model("mlp_eager", "mlp_eager")
    assert {same.pair(p).status for p in same.tops()} == {SAME}
    assert same.find_difference(None) == (None, True)


def test_threads_pair_by_name_without_numbers() -> None:
    train = model("mlp_train_eager_default", "mlp_train_compiled")
    tops = pair_rows(train, train.tops())
    assert all(m != "−" and m != "+" for m, _, _ in tops)
    assert any("pt_autograd" in a and "pt_autograd" in b for _, a, b in tops)
    assert {ONLY_A, ONLY_B} & {train.pair(p).status for p in train.tops()} == set()
