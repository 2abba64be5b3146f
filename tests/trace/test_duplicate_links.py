"""Calls that share a correlation id (issue 12, item 3): bounded memory, nearest preceding call.

Before: the link joined GPU events and calls on the id alone, so N calls and N kernels of one id
made N² rows: 20,000 of each (a 9 MB file) passed 10 GB and were killed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

import tracetui
from tests.trace.synth import kernel, launch, trace_doc, write
from tracetui.trace.categories import GPU_WORK


def shared_id(calls: int) -> list[dict[str, Any]]:
    """``calls`` launches with correlation 1, each followed 3 µs later by its kernel."""
    events = []
    for i in range(calls):
        events.append(launch("cudaLaunchKernel", 10.0 * i, 2.0, 1))
        events.append(kernel(f"k{i}", 10.0 * i + 3, 4.0, 1))
    return events


def test_each_gpu_event_takes_the_nearest_preceding_call(tmp_path: Path) -> None:
    events = shared_id(50)
    events.append(kernel("before_every_call", -5.0, 1.0, 1))  # no call precedes it: the earliest
    events.append(kernel("orphan", 7.0, 1.0, 99))
    trace = tracetui.load(write(tmp_path / "t.json", trace_doc(events)))
    gpu = trace.gpu.join(
        trace.events.select(pl.col("id").alias("launch_id"), pl.col("ts").alias("call_ts")), on="launch_id"
    )
    for row in gpu.iter_rows(named=True):
        expected = 0.0 if row["name"] == "before_every_call" else row["ts"] - 3
        assert row["call_ts"] == expected, row
    assert trace.orphans["name"].to_list() == ["orphan"]
    kinds = trace.anomalies["kind"].value_counts()
    assert dict(kinds.iter_rows()) == {"duplicate_correlation": 50, "ambiguous_launch": 51}
    ambiguous = trace.anomalies.filter(pl.col("kind") == "ambiguous_launch")
    chosen = trace.gpu.select(pl.col("id").alias("event_id"), pl.col("launch_id").alias("other_id"))
    assert ambiguous.join(chosen, on=["event_id", "other_id"]).height == 51  # the call each one took


def test_a_graph_launch_is_one_call_with_many_gpu_events(tmp_path: Path) -> None:
    events = [launch("cudaGraphLaunch", 0, 5, 3)] + [kernel(f"g{i}", 10 + i, 1, 3) for i in range(20)]
    events.append(kernel("skewed", -1.0, 0.5, 3))  # before its call (clock skew): still that call
    trace = tracetui.load(write(tmp_path / "t.json", trace_doc(events)))
    assert trace.gpu["launch_id"].unique().to_list() == [0]
    assert trace.anomalies.is_empty()


CHILD = """
import resource, sys, tracetui
trace = tracetui.load(sys.argv[1])
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(trace.gpu.height, trace.gpu["launch_id"].null_count(), peak_kb)
"""
LIMIT = 1 << 30  # bytes: the load is killed past this (N² rows would need ~12 GB)


def rss(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text(errors="replace")
    except OSError:
        return 0
    return next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS")), 0)


def test_twenty_thousand_calls_of_one_id_load_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(trace_doc(shared_id(20_000))))
    env = dict(os.environ, TRACETUI_NO_CACHE="1")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env)
    peak = 0
    while child.poll() is None:
        peak = max(peak, rss(child.pid))
        if peak > LIMIT:
            child.kill()
        time.sleep(0.01)
    out = child.communicate()[0].decode().split()
    assert child.returncode == 0, f"killed at {peak >> 20} MB RSS"
    gpu, orphans, max_rss_kb = map(int, out)
    assert gpu == 20_000 and orphans == 0 and max_rss_kb * 1024 < LIMIT


def test_every_gpu_event_is_attributed_or_an_orphan_with_shared_ids(tmp_path: Path) -> None:
    events = [*shared_id(30), launch("cudaLaunchKernel", 5.0, 1.0, 2), launch("cudaMemcpyAsync", 6.0, 1.0, 2)]
    events += [kernel("two_calls", 8.0, 1.0, 2), kernel("nobody", 8.0, 1.0, 1234)]
    trace = tracetui.load(write(tmp_path / "t.json", trace_doc(events)))
    work = trace.gpu.filter(pl.col("cat").is_in(GPU_WORK))
    assert work.height == 32
    assert work["launch_id"].null_count() == trace.orphans.height == 1
    two = trace.gpu.filter(pl.col("name") == "two_calls")["launch_id"].item()
    assert trace.event(two)["name"] == "cudaMemcpyAsync"  # the later of the two preceding calls
