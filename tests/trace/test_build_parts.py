"""The build's parts on small hand-made inputs: the counts of a tree (made one column at a time),
and the forward links found from ``fwdbwd`` flows (only the ops at a flow's timestamp are read)."""

from __future__ import annotations

import polars as pl
import pytest

from tracetui.trace import links, native, stats


def tree_and_work() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two roots on one track: 0 [0, 100] holds 1 [10, 40] (which holds 2 [20, 30]) and 3 [50, 90];
    4 [200, 210] stands alone. Calls at rows 2 and 3 launched GPU work."""
    tree = pl.DataFrame(
        {
            "id": pl.Series([10, 11, 12, 13, 14], dtype=pl.UInt32),
            "start_ns": [0, 10, 20, 50, 200],
            "end_ns": [100, 40, 30, 90, 210],
            "end_pos": pl.Series([4, 3, 3, 4, 5], dtype=pl.Int32),
            "parent_pos": [-1, 0, 1, 0, -1],
        }
    )
    work = pl.DataFrame(
        {
            "at": pl.Series([2, 2, 3, 3], dtype=pl.UInt32),
            "cat": ["kernel", "gpu_memcpy", "kernel", "gpu_memset"],
            "dur": [5_000, 1_000, 2_500, 500],
        }
    )
    return tree, work


@pytest.mark.parametrize("extension", [True, False])
def test_node_stats_count_each_subtree(extension: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not extension:
        monkeypatch.setattr(native, "_scan", None)
    tree, work = tree_and_work()
    columns = list(stats.node_stats(tree, work))
    names = ["cpu_self_us", "gpu_us", "gpu_events", "kernels", "memcpys", "memsets"]
    assert [c.name for c in columns] == names
    got = pl.DataFrame(columns)
    assert got["cpu_self_us"].to_list() == [0.03, 0.02, 0.01, 0.04, 0.01]  # 100 - 30 - 40 ns, …
    assert got["gpu_events"].to_list() == [4, 2, 2, 2, 0]
    assert got["kernels"].to_list() == [2, 1, 1, 1, 0]
    assert got["memcpys"].to_list() == [1, 1, 1, 0, 0]
    assert got["memsets"].to_list() == [1, 0, 0, 1, 0]
    assert got["gpu_us"].to_list() == [9.0, 6.0, 6.0, 3.0, 0.0]
    assert got.schema["gpu_events"] == pl.UInt32 and got.schema["gpu_us"] == pl.Float64


def test_node_stats_without_work() -> None:
    tree, work = tree_and_work()
    got = pl.DataFrame(list(stats.node_stats(tree, work.clear())))
    assert got["gpu_events"].to_list() == [0] * 5 and got["gpu_us"].to_list() == [0.0] * 5


def test_fwdbwd_flows_bind_to_the_deepest_op_at_their_timestamp() -> None:
    events = pl.DataFrame(
        {
            "id": pl.Series([1, 2, 3, 4, 5, 6], dtype=pl.UInt32),
            "cat": ["cpu_op", "cpu_op", "cpu_op", "python_function", "cpu_op", "cpu_op"],
            "track": pl.Series([0, 0, 0, 0, 1, 1], dtype=pl.Int32),
            "start_ns": [100, 100, 300, 500, 500, 700],
            "depth": pl.Series([0, 1, 0, 0, 0, 0], dtype=pl.Int32),
        }
    )
    flows = pl.DataFrame(
        {
            "id": pl.Series([20, 21, 22, 23, 24, 25], dtype=pl.UInt32),
            "cat": ["fwdbwd", "fwdbwd", "fwdbwd", "fwdbwd", "ac2g", "ac2g"],
            "ph": ["s", "f", "s", "f", "s", "f"],
            "flow_id": ["a", "a", "b", "b", "c", "c"],
            "track": pl.Series([0, 1, 0, 1, 0, 1], dtype=pl.Int32),
            "ts_ns": [100, 700, 500, 500, 300, 700],
        }
    )
    op_args = pl.DataFrame(schema={"id": pl.UInt32, "seq": pl.Int64, "fwd_tid": pl.Int64})
    got = links.forward_links(events, op_args, flows)
    # a: from the deeper of the two ops at 100 (id 2) to the op at 700 on track 1 (id 6);
    # b: its start is on a python frame, not an op: no link; the ac2g flow is not read
    assert got.to_dict(as_series=False) == {"id": [6], "fwd_id": [2]}
