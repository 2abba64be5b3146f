"""``benchmarks/headline_trace.py``: the stand-in for the headline trace that docs/performance.md
says how to make, and the one line a benchmark gives when its trace is missing."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

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
