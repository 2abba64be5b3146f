"""The run commands through the CLI: summary (text, --json schema), export, diff --ranks, convert."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.ranks.conftest import GLOO4, NCCL2, rank_files
from tracetui.cli import cli
from tracetui.errors import TraceError
from tracetui.insight.summary_data import SCHEMA as SUMMARY_SCHEMA
from tracetui.ranks.summary_data import COLLECTIVE_FIELDS, RANK_FIELDS, STRAGGLER_FIELDS

SINGLE_SECTIONS = [
    "trace",
    "counts",
    "steps",
    "annotations",
    "ops",
    "kernels",
    "step_times",
    "runtime",
    "rooflines",
    "compile_overheads",
    "orphans",
    "anomalies",
    "memory",
    "advice",
]


@dataclass
class Run:
    exit_code: int
    output: str


def invoke(*args: str, code: int = 0) -> Run:
    """Run the CLI; a TraceError counts as ``main()`` shows it: one line, exit code 2."""
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, list(args))
    if isinstance(result.exception, TraceError):
        run = Run(2, str(result.exception))
    elif result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    else:
        run = Run(result.exit_code, result.output)
    assert run.exit_code == code, run.output
    return run


def test_summary_of_a_directory_of_ranks() -> None:
    out = invoke("summary", str(GLOO4)).output
    assert out.startswith(f"4 ranks from {GLOO4}; rank from distributedInfo, world size 4, backend gloo")
    assert "Ranks, each on GPU 0 (NVIDIA H200), 3 steps each" in out
    assert (
        "Stragglers: rank 2 arrives last at 6 of 6 all-reduces; the other ranks wait 11.73 ms per step" in out
    )
    assert out.index("Stragglers: ") < out.index("Ranks, each on")  # the verdict first
    assert "  2 ◀  " in out and "◀: the straggler" in out
    assert "Collectives (of 6, by the time the others waited)" in out
    assert "GPU work across ranks (of 25 names" in out
    assert "Slowest rank per step: #2 rank 0" in out
    assert "rank 0: rank0.1796106605572181096.pt.trace.json.gz" in out  # then rank 0's own report
    assert "Top ops" in out and "Orphans:" in out


@pytest.mark.parametrize("columns", [80, 120, 200])
def test_gpu_work_across_ranks_shows_decoded_names_and_every_column(columns: int) -> None:
    """The names every other table writes (``memcpy HtoD (Pinned → Device)``, not ``Memcpy …``), and
    median / max on screen at any width."""
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(cli, ["summary", str(GLOO4)])
    lines = result.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("GPU work across ranks"))
    header, rows = lines[at + 2], lines[at + 4 : at + 14]
    assert header.split() == ["kernel", "ranks", "calls", "min", "median", "max", "max", "on"]
    assert max(len(line) for line in lines[at : at + 14]) <= columns
    names = [row[: header.index("ranks")].strip() for row in rows]
    assert names[0].startswith("memcpy HtoD (Pinned → ") and names[2].startswith("nvjet gemm+bias bf16")
    if columns >= 120:
        assert names[:3] == [
            "memcpy HtoD (Pinned → Device)",
            "memcpy DtoH (Device → Pinned)",
            "nvjet gemm+bias bf16 256x128 coopA TNT",
        ]
    assert not any(name.startswith(("Memcpy", "void ")) for name in names)


def test_summary_rank_option_picks_the_single_trace_sections() -> None:
    out = invoke("summary", str(NCCL2), "--rank", "1").output
    assert "rank 1: rank1.1795983200661629935.pt.trace.json.gz" in out
    assert "rank1.1795983200661629935.pt.trace.json.gz  PyTorch 2.8+" in out
    missing = invoke("summary", str(NCCL2), "--rank", "5", code=2)
    assert "no rank 5" in missing.output


def test_summary_json_schema() -> None:
    data = json.loads(invoke("summary", str(GLOO4), "--json").output)
    assert data["schema"] == "tracetui.ranks/1"
    assert list(data) == ["schema", "distributed", "ranks", "collectives", "stragglers", *SINGLE_SECTIONS]
    assert [list(r) for r in data["ranks"]] == [RANK_FIELDS] * 4
    assert [list(c) for c in data["collectives"]] == [COLLECTIVE_FIELDS] * 6
    assert [list(s) for s in data["stragglers"]] == [STRAGGLER_FIELDS]
    assert RANK_FIELDS == [
        "rank", "file", "device", "steps", "step_us_median", "gpu_busy_us", "compute_us", "comm_us",
        "memory_us", "idle_us", "overlap_pct", "host_comm_us",
    ]  # fmt: skip
    assert COLLECTIVE_FIELDS == [
        "group", "seq", "name", "bytes", "ranks", "arrival_skew_us", "last_rank", "wait_us",
    ]  # fmt: skip
    assert STRAGGLER_FIELDS == ["rank", "last_count", "others_wait_us"]
    assert data["stragglers"][0]["rank"] == 2 and data["distributed"]["rank"] == 0
    assert data["trace"]["name"].startswith("rank0.")
    single = json.loads(invoke("summary", str(rank_files(GLOO4)[0]), "--json").output)
    assert single["schema"] == SUMMARY_SCHEMA
    # the same sections (a single trace's also say what the cache did in the run)
    assert {k: v for k, v in single.items() if k not in ("schema", "cache")} == {
        k: data[k] for k in SINGLE_SECTIONS
    }
    run = data["distributed"]
    assert list(run["straggler"]) == [
        "rank", "last_count", "collectives", "wait_us_per_step", "share_of_waiting", "share_of_step", "cause",
    ]  # fmt: skip
    assert run["straggler"]["cause"]["kind"] == "host_gap"  # why it is late (tests/ranks/test_cause.py)
    lag = run["largest_lag"]
    assert run["straggler"]["rank"] == 2 and lag == {
        k: v for k, v in run["straggler"].items() if k != "cause"
    }
    assert [list(c) for c in run["clock_offsets"]] == [
        ["rank", "offset_us", "spread_us", "collectives", "applied"]
    ] * 4
    assert run["clock_reference"] == [0, 1, 2, 3] and not run["clocks_corrected"]
    assert run["kernels"][0]["short"] == "memcpy HtoD (Pinned → Device)"
    assert {
        "label",
        "world_size",
        "backend",
        "files",
        "missing",
        "duplicates",
        "verdict",
        "steps",
        "kernels",
    } <= set(run)


def test_summary_of_several_files_and_a_glob() -> None:
    files = [str(p) for p in rank_files(GLOO4)[:2]]
    assert invoke("summary", *files).output.startswith("2 ranks from 2 files")
    assert invoke("summary", str(GLOO4 / "rank[123]*")).output.startswith("3 ranks from")


def test_single_trace_commands_are_unchanged(tmp_path: Path) -> None:
    out = invoke("summary", str(rank_files(NCCL2)[0])).output
    assert out.startswith("rank0.1795983200660239887.pt.trace.json.gz")
    result = invoke("summary", str(rank_files(NCCL2)[0]), "--rank", "1", code=2)
    assert "--rank needs the traces of several ranks" in result.output


@pytest.mark.parametrize(
    "table", ["ranks", "collectives", "arrivals", "stragglers", "rank_kernels", "kernel_spread"]
)
def test_export_run_tables(table: str) -> None:
    out = invoke("export", str(GLOO4), "--table", table).output
    header = out.splitlines()[0].split(",")
    lines = out.splitlines()[1:]
    expected = {
        "ranks": 4,
        "collectives": 6,
        "arrivals": 24,
        "stragglers": 1,
        "rank_kernels": 4 * 25,  # every rank runs the same 25 names
        "kernel_spread": 25,
    }
    assert len(lines) == expected[table]
    first = {
        "ranks": "rank",
        "collectives": "group",
        "arrivals": "group",
        "stragglers": "rank",
        "rank_kernels": "rank",
    }
    assert header[0] == first.get(table, "name")


def test_export_a_single_trace_table_of_a_rank(tmp_path: Path) -> None:
    out = invoke("export", str(GLOO4), "--table", "steps", "--rank", "3").output
    assert len(out.splitlines()) == 4
    result = invoke("export", str(rank_files(GLOO4)[0]), "--table", "ranks", code=2)
    assert "needs the traces of several ranks" in result.output


def test_diff_two_ranks() -> None:
    out = invoke("diff", str(GLOO4), "--ranks", "0,2", "--report").output
    assert out.startswith("A  rank0.") and "\nB  rank2." in out
    assert "expected two rank numbers" in invoke("diff", str(GLOO4), "--ranks", "0", code=2).output
    assert "missing trace B" in invoke("diff", str(GLOO4), code=2).output
    both = invoke("diff", str(GLOO4), str(NCCL2), "--ranks", "0,1", code=2)
    assert "give the run only" in both.output


def test_convert_then_summary_and_export_of_the_dataset(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    result = invoke("convert", str(NCCL2), "-o", str(out))
    assert result.output.startswith(f"wrote {out} (2 ranks,")
    text = invoke("summary", str(out)).output
    assert text.startswith(f"2 ranks from {NCCL2}")
    assert "Stragglers: rank 1 arrives last at 4 of 4 all-reduces" in text
    kernels = invoke("export", str(out), "--table", "kernels", "--rank", "1").output
    assert len(kernels.splitlines()) == 1 + 44 + 10 + 4  # one row per GPU event of rank 1
    assert "holds events, kernels, ops" in invoke("export", str(out), "--table", "runtime", code=2).output
    assert (
        "--address needs --engine ray"
        in invoke("convert", str(NCCL2), "-o", str(tmp_path / "x"), "--address", "auto", code=2).output
    )


def test_cli_stays_thin() -> None:
    """Probing a run reads no polars: discovery and the header reader are light."""
    code = (
        "import sys, tracetui.cli, tracetui.ranks.discover as d; "
        f"d.discover([{str(GLOO4)!r}]); d.resolve([{str(GLOO4)!r}]); d.is_run(d.resolve([{str(GLOO4)!r}])); "
        "print(sorted(m for m in ('polars', 'rich', 'textual', 'torch') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_file_names_are_data(tmp_path: Path) -> None:
    """A rank file named like a terminal escape and a spreadsheet formula stays harmless."""
    for rank, path in enumerate(rank_files(NCCL2)):
        name = "=HYPERLINK(1)\x1b]52;c;x\x07_rank0.json.gz" if rank == 0 else path.name
        (tmp_path / name).write_bytes(path.read_bytes())
    text = invoke("summary", str(tmp_path)).output
    assert "\x1b" not in text and "\x07" not in text and "\ufffd]52;c;x\ufffd_rank0.json.gz" in text
    csv = invoke("export", str(tmp_path), "--table", "ranks").output
    row = next(line for line in csv.splitlines() if "HYPERLINK" in line)
    assert ",'=HYPERLINK(1)" in row and "\x1b" not in row


def test_a_big_run_shows_the_verdict_then_its_worst_ranks_then_every_rank(tmp_path: Path) -> None:
    """More than 20 ranks: the verdict first, the straggler marked, the worst 20 before the full table."""
    from tests.ranks import synthetic

    run = tmp_path / "run"
    for rank in range(24):
        doc = synthetic.set_rank(synthetic.read(rank_files(NCCL2)[rank % 2]), rank, world_size=24)
        if rank == 13:
            doc = synthetic.delay_collectives(doc, 20_000_000)
        synthetic.write(doc, run / f"rank{rank}.json.gz")
    out = invoke("summary", str(run), "--workers", "2").output
    verdict = out.index("Stragglers: rank 13 arrives last")
    worst = out.index("The worst 20 of 24 ranks")
    every = out.index("\nRanks, ")
    assert verdict < worst < every
    worst_rows = out[worst:every].splitlines()
    first_row = next(line for line in worst_rows if line.strip()[:1].isdigit())
    assert first_row.split()[:2] == ["13", "◀"]
    assert "◀: the straggler" in out
    data = json.loads(invoke("summary", str(run), "--json").output)
    assert data["distributed"]["straggler"]["rank"] == 13
