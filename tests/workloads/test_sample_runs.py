"""The bundled runs of several ranks (sample_traces/runs/): the README's table matches the folders,
every rank passes the distributed expectations, and the analysis names the straggler that each
capture made (``--straggler R`` in the traces' own metadata), and none in the run without one."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tracetui.compare.check import check_trace
from tracetui.compare.expectations import load_expectations
from tracetui.ranks.discover import resolve
from tracetui.ranks.run import report_for
from tracetui.sample_traces import default_trace
from tracetui.trace import load

from .helpers import DISTRIBUTED_EXPECT, read_trace

FOLDER = Path(default_trace()).parent
RUNS = FOLDER / "runs"
ROW = re.compile(r"^\| `runs/(?P<run>[\w.]+)/` \| `(?P<command>[^`]+)` \| (?P<ranks>\d+) \|")


def _readme_rows() -> dict[str, dict[str, str]]:
    rows = {}
    for line in (FOLDER / "README.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            rows[match["run"]] = match.groupdict()
    return rows


ROWS = _readme_rows()


def test_readme_lists_exactly_the_bundled_runs() -> None:
    assert sorted(ROWS) == sorted(p.name for p in RUNS.iterdir() if p.is_dir())
    assert len(ROWS) == 3


@pytest.mark.parametrize("name", sorted(ROWS))
def test_run_matches_its_readme_row_and_passes_the_expectations(name: str) -> None:
    traces = sorted(p for p in (RUNS / name).iterdir() if p.name.endswith(".json.gz"))
    row = ROWS[name]
    assert len(traces) == int(row["ranks"])
    expectations = load_expectations(DISTRIBUTED_EXPECT)
    for rank, path in enumerate(traces):
        assert path.name.startswith(f"rank{rank}.") and path.stat().st_size < 1 << 20
        trace = read_trace(path)
        assert trace["tracetui"]["command"] == row["command"]
        assert trace["distributedInfo"]["rank"] == rank
        failed = [r.check.text for r in check_trace(load(path), expectations) if not r.passed]
        assert not failed, (path.name, failed)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_the_analysis_names_the_straggler_the_capture_made(name: str) -> None:
    args = shlex.split(ROWS[name]["command"])
    report = report_for(resolve([RUNS / name]), summary=False)
    assert report.analysis.ranks["rank"].to_list() == list(range(int(ROWS[name]["ranks"])))
    named = report.analysis.straggler
    if "--straggler" in args:
        straggler = int(args[args.index("--straggler") + 1])
        assert named is not None and named.rank == straggler
        assert report.analysis.verdict.startswith(f"rank {straggler} arrives last at ")
    else:  # the healthy run: a lag (two processes share one GPU), not a straggler
        assert named is None and report.analysis.verdict.startswith("no clear straggler: the largest lag is")
