"""``benchmarks/headline_trace.py``: the stand-in for the headline trace that docs/performance.md
says how to make, and the one line a benchmark gives when its trace is missing."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tracetui
from tracetui.sample_traces import default_trace

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def headline(*args: str) -> subprocess.CompletedProcess[str]:
    script = BENCHMARKS / "headline_trace.py"
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True)


def test_a_stand_in_replicates_the_given_trace_to_the_size_asked(tmp_path: Path) -> None:
    sample = default_trace()
    out = tmp_path / "standin.json.gz"
    size = 3 * len(gzip.decompress(sample.read_bytes()))
    done = headline("--from", str(sample), "--size", str(size), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"{out}: a stand-in made from {sample.name} (3 copies), not the published input"
    )
    one, three = tracetui.load(sample), tracetui.load(out)
    assert three.kernels["calls"].sum() == 3 * one.kernels["calls"].sum()
    assert three.step_instances.height == 3 * one.step_instances.height


def test_a_missing_trace_is_one_line_that_says_how_to_make_it(tmp_path: Path) -> None:
    script = BENCHMARKS / "bench_summary.py"
    missing = tmp_path / "nothing.json.gz"
    done = subprocess.run([sys.executable, str(script), str(missing)], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "benchmarks/headline_trace.py" in done.stderr


def test_many_ranks_makes_a_run_tracetui_and_hta_read_by_rank(tmp_path: Path) -> None:
    """``benchmarks/many_ranks.py``: the shared 4-rank set replicated to 6 ranks, each naming its rank
    as PyTorch writes it (HTA finds it by ``"rank":\\s+N``), rank 5 the straggler."""
    import json
    import re

    out = tmp_path / "run"
    script = BENCHMARKS / "many_ranks.py"
    done = subprocess.run(
        [sys.executable, str(script), str(out), "--ranks", "6", "--straggler", "5"], text=True
    )
    assert done.returncode == 0
    files = sorted(out.glob("*.json.gz"), key=lambda p: int(p.name[4:].split(".")[0]))
    found = [int(re.search(rb'"rank":\s+(\d+)', gzip.decompress(p.read_bytes())).group(1)) for p in files]
    assert found == list(range(6))
    summary = subprocess.run(
        [sys.executable, "-m", "tracetui", "summary", str(out), "--json"], capture_output=True, text=True
    )
    assert summary.returncode == 0, summary.stderr
    assert json.loads(summary.stdout)["distributed"]["straggler"]["rank"] == 5


@pytest.mark.slow
def test_bench_cores_prints_a_row_per_core_count_and_the_floor(tmp_path: Path) -> None:
    sample = default_trace()
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_cores.py"), str(sample), "--cores", "1,2,64", "--runs", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(f"| {sample.name} ")]
    cores = [row.split(" | ")[1] for row in rows]
    available = len(os.sched_getaffinity(0))
    assert cores == [c for c in ("1", "2") if int(c) <= available] + ["floor: inflate + one scanner"]
    assert rows[0].endswith("| 1.00x |")
