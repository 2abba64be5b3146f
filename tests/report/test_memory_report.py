"""The memory surfaces of the CLI: the summary's Memory section, ``summary --json``'s ``memory``,
``export --table memory`` — and that they show the one peak ``memory_of`` computes."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from tests.insight import memory_traces as mt
from tests.insight.memory_replay import replay
from tracetui import formatting as fmt
from tracetui.cli import cli
from tracetui.insight.memory import NO_OP

FIXTURES = Path(__file__).parent.parent / "fixtures"
MEMORY_TRACE = FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz"


def invoke(*args: str | Path) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_summary_json_memory_has_the_replayed_peak_and_alive_set() -> None:
    memory = json.loads(invoke("summary", MEMORY_TRACE, "--json"))["memory"]
    expected = replay(MEMORY_TRACE)
    (device,) = memory["devices"]
    assert device["device"] == "cuda:0"
    assert device["peak_allocated_bytes"] == expected.peak[(1, 0)]
    assert device["peak_event_id"] == expected.peak_index[(1, 0)]
    assert (device["peak_step"], device["peak_op"]) == ("ProfilerStep#2", "aten::mm")
    assert device["end_allocated_bytes"] == 102_325_248
    alive = {a["op"]: (a["bytes"], a["count"]) for a in device["alive_at_peak"]}
    assert alive == expected.alive_by_op((1, 0))
    assert [a["bytes"] for a in device["alive_at_peak"]] == sorted(
        alive_bytes for alive_bytes, _ in alive.values()
    )[::-1]
    assert (
        device["before_trace_at_peak_bytes"] + sum(b for b, _ in alive.values())
        == device["peak_allocated_bytes"]
    )
    assert {s["step"] for s in device["steps"]} == {"ProfilerStep#2", "ProfilerStep#3"}
    assert device["leak_suspect"] is False
    assert set(device) >= {"peak_at_us", "peak_offset_us", "largest", "ops", "alive_at_peak_by_annotation"}


def test_a_trace_without_memory_events_has_no_memory_section() -> None:
    trace = FIXTURES / "mlp_eager.json.gz"
    assert json.loads(invoke("summary", trace, "--json"))["memory"] == {"devices": []}
    assert "Memory on" not in invoke("summary", trace)
    assert invoke("export", trace, "--table", "memory").startswith("order,id,ts,")


def test_summary_text_names_the_peak_and_its_ops() -> None:
    out = invoke("summary", MEMORY_TRACE)
    assert "Memory on cuda:0: peak 99.6 MiB allocated" in out
    assert "step ProfilerStep#2, op aten::mm" in out
    assert "Alive at the peak of cuda:0" in out and "(allocated before the trace)" in out
    assert "steady: every step ends at 97.6 MiB (2 steps)" in out
    assert "alive at the peak by step: ProfilerStep#2 2.0 MiB (4 blocks)" in out
    assert "Memory by allocating op (of 11, by bytes allocated)" in out
    assert "freed: of those bytes, what the trace freed (in any op)" in " ".join(out.split())


def test_frees_are_counted_with_the_allocating_op() -> None:
    """Issue 37 item 5: ``aten::mul … freed 0 B, net 640.0 MiB … at end 0 B`` read as a leak: the
    frees were counted with the op they happened in (autograd's, the next op's), not the op that
    allocated the blocks."""
    from tracetui.sample_traces import default_trace

    path = default_trace().parent / "transformer_block_train_memory.json.gz"
    device = json.loads(invoke("summary", path, "--json"))["memory"]["devices"][0]
    ops = {o["op"]: o for o in device["ops"]}
    mul = ops["aten::mul"]
    assert (mul["allocated_bytes"], mul["freed_bytes"], mul["net_bytes"], mul["at_end_bytes"]) == (
        640 << 20,
        640 << 20,
        0,
        0,
    )
    for op in device["ops"]:  # what an op allocated is freed or still alive at the end
        assert (
            op["allocated_bytes"] == op["freed_bytes"] + op["at_end_bytes"]
            and op["net_bytes"] == op["at_end_bytes"]
        )
        assert op["allocs"] >= op["frees"]
    frees = sum(o["frees"] for o in device["ops"]) + device["frees_before_trace"]
    assert frees == device["frees"]  # every free counted once: with its allocation, or before the trace
    assert "aten::mul 640.0 MiB 10 640.0 MiB 128.0 MiB 0 B" in " ".join(invoke("summary", path).split())


def test_no_enclosing_op_reads_as_such_everywhere(tmp_path: Path) -> None:
    path = mt.allocator_thread_trace(tmp_path / "allocator.json")
    device = json.loads(invoke("summary", path, "--json"))["memory"]["devices"][0]
    assert device["peak_op"] is None
    assert device["alive_at_peak"][0] == {"op": None, "bytes": 8000, "count": 2}
    assert NO_OP in invoke("summary", path)
    exported = pl.read_csv(invoke("export", path, "--table", "memory").encode())
    assert exported.filter(pl.col("tid") == mt.ALLOCATOR_TID)["op"].null_count() == 3


def test_a_leak_is_called_a_suspect(tmp_path: Path) -> None:
    path = mt.leaking_trace(tmp_path / "leak.json")
    device = json.loads(invoke("summary", path, "--json"))["memory"]["devices"][0]
    assert device["leak_suspect"] is True and device["verdict"].startswith("leak suspect")
    assert [s["change_bytes"] for s in device["steps"]] == [32 << 20] * 3
    assert "leak suspect" in invoke("summary", path)


def test_export_memory_has_one_row_per_event(tmp_path: Path) -> None:
    out = tmp_path / "memory.parquet"
    invoke("export", MEMORY_TRACE, "--table", "memory", "--format", "parquet", "-o", out)
    table = pl.read_parquet(out)
    assert table.height == 72 and table["ts"].is_sorted()
    assert {"device", "addr", "bytes", "allocated", "reserved", "op", "annotation", "step", "frame"} <= set(
        table.columns
    )
    assert {"track", "enclosing_pos", "pair_order"}.isdisjoint(table.columns)
    paired = table.filter(pl.col("kind") == "alloc").join(
        table.select(pl.col("id").alias("pair_id"), pl.col("bytes").alias("freed")), on="pair_id"
    )
    assert (paired["bytes"] == -paired["freed"]).all()


def test_one_peak_everywhere(tmp_path: Path) -> None:
    """The summary, --json, the export and check show the one peak memory_of computes."""
    data = json.loads(invoke("summary", MEMORY_TRACE, "--json"))["memory"]["devices"][0]
    peak = data["peak_allocated_bytes"]
    assert f"peak {fmt.size(peak)} allocated" in invoke("summary", MEMORY_TRACE)
    exported = pl.read_csv(invoke("export", MEMORY_TRACE, "--table", "memory").encode())
    assert exported["allocated"].max() == peak
    assert exported.filter(pl.col("allocated") == peak)["id"][0] == data["peak_event_id"]
    expect = tmp_path / "peak.toml"
    expect.write_text(f'[[expect]]\nmemory = "cuda:0"\npeak_allocated_max = {peak}\n')
    checked = json.loads(invoke("check", MEMORY_TRACE, "--expect", expect, "--json"))
    assert checked["results"][0]["value"] == peak and checked["passed"]
