"""The build's parts on small hand-made inputs: the counts of a tree (made one column at a time),
and the forward links found from ``fwdbwd`` flows (only the ops at a flow's timestamp are read)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
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


def _forward_links_before(events: pl.DataFrame, flows: pl.DataFrame) -> pl.DataFrame:
    """The forward links as they were found before ops were deduplicated ahead of the join: the
    flows joined to every op at their time, the deepest op on their thread kept per flow."""
    fwdbwd = flows.filter(pl.col("cat") == "fwdbwd").select("id", "ph", "flow_id", "track", "ts_ns")
    ops = events.filter(links.is_op()).select("id", "track", "start_ns", "depth")
    bound = (
        fwdbwd.join(ops, left_on="ts_ns", right_on="start_ns", suffix="_op")
        .filter(pl.col("track") == pl.col("track_op"))
        .sort("depth", descending=True, maintain_order=True)
        .unique("id", keep="first", maintain_order=True)
    )
    starts = bound.filter(pl.col("ph") == "s").select("flow_id", pl.col("id_op").alias("fwd_id"))
    ends = bound.filter(pl.col("ph") == "f").select("flow_id", pl.col("id_op").alias("id"))
    return ends.join(starts, on="flow_id").select("id", "fwd_id").unique("id", keep="first").sort("id")


_op = st.tuples(st.integers(0, 2), st.integers(0, 4), st.integers(0, 3), st.booleans())
_flow = st.tuples(st.sampled_from(["s", "f"]), st.integers(0, 3), st.integers(0, 2), st.integers(0, 4))


@settings(max_examples=examples(300), deadline=None)
@given(ops=st.lists(_op, max_size=12), flows=st.lists(_flow, max_size=10))
def test_fwdbwd_flows_bind_as_the_join_of_every_op_did(
    ops: list[tuple[int, int, int, bool]], flows: list[tuple[str, int, int, int]]
) -> None:
    """Any ops (thread, start, depth; some python frames) and flows (s/f, flow id, thread, time,
    each flow id at most one s and one f): the same links as joining every op at a flow's time.
    Where two ops at one time and thread are equally deep, the first in event order is taken."""
    seen: set[tuple[str, int]] = set()
    flows = [f for f in flows if (f[0], f[1]) not in seen and not seen.add((f[0], f[1]))]  # type: ignore[func-returns-value]
    events = pl.DataFrame(
        {
            "id": pl.Series(range(len(ops)), dtype=pl.UInt32),
            "cat": ["cpu_op" if op else "python_function" for *_, op in ops],
            "track": pl.Series([t for t, *_ in ops], dtype=pl.Int32),
            "start_ns": pl.Series([s for _, s, *_ in ops], dtype=pl.Int64),
            "depth": pl.Series([d for _, _, d, _ in ops], dtype=pl.Int32),
        }
    )
    table = pl.DataFrame(
        {
            "id": pl.Series(range(100, 100 + len(flows)), dtype=pl.UInt32),
            "cat": ["fwdbwd"] * len(flows),
            "ph": [ph for ph, *_ in flows],
            "flow_id": [str(i) for _, i, *_ in flows],
            "track": pl.Series([t for _, _, t, _ in flows], dtype=pl.Int32),
            "ts_ns": pl.Series([ts for *_, ts in flows], dtype=pl.Int64),
        }
    )
    op_args = pl.DataFrame(schema={"id": pl.UInt32, "seq": pl.Int64, "fwd_tid": pl.Int64})
    got = links.forward_links(events, op_args, table)
    assert got.to_dicts() == _forward_links_before(events, table).to_dicts()
