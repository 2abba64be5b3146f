"""`tracetui summary` and `tracetui export` on real traces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from tracetui.cli import cli
from tracetui.trace import native

FIXTURES = Path(__file__).parent.parent / "fixtures"
MLP_EAGER = str(FIXTURES / "mlp_eager.json.gz")


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_summary_text_answers_the_blog_questions() -> None:
    out = invoke("summary", MLP_EAGER)
    assert "NVIDIA H200" in out
    assert "mlp_fwd" in out
    assert "Launched no GPU work" in out and "aten::t" in out and "aten::_unsafe_view" in out
    assert "aten::mm" in out and "nvjet" in out


def test_summary_json_schema() -> None:
    data = json.loads(invoke("summary", MLP_EAGER, "--json"))
    assert data["schema"] == "tracetui.summary/1"
    assert {"path", "events", "format", "devices"} <= set(data["trace"])
    assert {"counts", "steps", "annotations", "ops", "kernels", "orphans", "anomalies"} <= set(data)
    fwd = next(a for a in data["annotations"] if a["name"] == "mlp_fwd")
    assert {"name", "calls", "kernels_per_call", "gpu_us"} <= set(fwd)
    assert (fwd["calls"], fwd["kernels_per_call"], fwd["memsets_per_call"]) == (3, 5, 2)
    op = next(o for o in data["ops"] if o["name"] == "aten::t")
    assert set(op) >= {
        "name",
        "calls",
        "cpu_total_us",
        "cpu_self_us",
        "gpu_us",
        "kernels",
        "launches_kernels",
    }
    assert op["launches_kernels"] is False
    kernel = data["kernels"][0]
    assert {"name", "calls", "total_us", "avg_us", "launched_by"} <= set(kernel)
    assert kernel["launched_by"] == ["aten::mm"]
    assert data["orphans"]["count"] == 0 and data["anomalies"]["count"] == 0


def test_version_and_summary_json_say_which_decoder_reads_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "trace reader: native" in invoke("--version")
    assert json.loads(invoke("summary", MLP_EAGER, "--json"))["trace"]["reader"] == "native"
    monkeypatch.setattr(native, "_scan", None)  # an install without a C compiler
    monkeypatch.setattr(native, "AVAILABLE", False)
    monkeypatch.setattr(native, "_MISSING", "No module named 'tracetui.trace._scan'")
    version = invoke("--version")
    assert "trace reader: msgspec only" in version and "not built" in version
    assert json.loads(invoke("summary", MLP_EAGER, "--json"))["trace"]["reader"] == "msgspec"


def test_summary_json_on_compiled_trace_reports_compile_preops() -> None:
    data = json.loads(invoke("summary", str(FIXTURES / "mlp_compiled.json.gz"), "--json"))
    names = {c["name"] for c in data["compile_overheads"]}
    assert "TorchDynamo Cache Lookup" in names and any(n.startswith("Torch-Compiled Region") for n in names)


def test_export_dash_means_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = invoke("export", MLP_EAGER, "--table", "ops", "-o", "-")
    assert out.startswith("name,calls,") and "aten::t," in out
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_export_kernels_table(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"k.{fmt}"
    invoke("export", MLP_EAGER, "--table", "kernels", "--format", fmt, "-o", str(out))
    frame = {"csv": pl.read_csv, "parquet": pl.read_parquet, "json": pl.read_json}[fmt](out)
    required = [
        "name",
        "ts",
        "dur",
        "device",
        "stream",
        "correlation",
        "runtime",
        "launch_op",
        "launch_op_id",
        "annotation",
        "step",
        "family",
        "kind",
        "arch",
        "tile",
        "stages",
        "layout",
        "fused_ops",
    ]
    assert frame.columns[: len(required)][:11] == required[:11]
    assert set(required) <= set(frame.columns)
    assert frame.height == 21
    gemm = frame.filter(pl.col("name").str.starts_with("nvjet")).row(0, named=True)
    assert (gemm["runtime"], gemm["launch_op"], gemm["annotation"]) == (
        "cuLaunchKernelEx",
        "aten::mm",
        "mlp_fwd",
    )
    assert gemm["family"] == "cublasLt nvjet" and gemm["tile"] == "256x128"


def test_export_ops_and_events_to_stdout() -> None:
    ops = pl.read_csv(invoke("export", MLP_EAGER, "--table", "ops").encode())
    assert set(ops.filter(~pl.col("launches_kernels"))["name"]) >= {"aten::t", "aten::view"}
    events = pl.read_json(invoke("export", MLP_EAGER, "--table", "events", "--format", "json").encode())
    assert "args" in events.columns and events.height == 143


def test_export_parquet_needs_a_file() -> None:
    result = CliRunner().invoke(cli, ["export", MLP_EAGER, "--format", "parquet"])
    assert result.exit_code != 0


@pytest.mark.parametrize("trace", sorted(p.name for p in FIXTURES.glob("*.json.gz")))
def test_every_fixture_summarises_and_exports(trace: str, tmp_path: Path) -> None:
    path = str(FIXTURES / trace)
    assert "Orphans:" in invoke("summary", path)
    data = json.loads(invoke("summary", path, "--json"))
    assert data["trace"]["name"] == trace
    for table in ("events", "ops", "kernels", "annotations", "steps", "runtime", "anomalies"):
        invoke(
            "export", path, "--table", table, "--format", "parquet", "-o", str(tmp_path / f"{table}.parquet")
        )


def test_summary_reads_the_roofline_like_the_blog() -> None:
    eager = json.loads(invoke("summary", MLP_EAGER, "--json"))["rooflines"]
    compiled = json.loads(invoke("summary", str(FIXTURES / "mlp_compiled.json.gz"), "--json"))["rooflines"]
    gemm = next(r for r in eager if r["name"].startswith("nvjet_sm90_tst_256x128"))
    assert gemm["bound"] == "compute-bound" and gemm["flops"] == pytest.approx(
        6 * 38_654_705_664
    )  # 2 GEMMs a forward, 3 steps
    gelu = next(r for r in eager if "Gelu" in r["name"])
    fused = next(r for r in compiled if r["name"] == "triton_poi_fused__unsafe_view_gelu_mul_0")
    assert gelu["bound"] == fused["bound"] == "memory-bound"
    assert fused["roof_fraction"] > 0.9 > gelu["roof_fraction"]  # fusion: one pass at ~95% of copy bandwidth


def test_summary_of_steps_without_duration(tmp_path: Path) -> None:
    """Found by fuzzing: the median-step line sorted steps by a missing CPU time."""
    doc = json.loads(gzip.decompress(Path(MLP_EAGER).read_bytes()))
    for event in doc["traceEvents"]:
        if str(event.get("name", "")).startswith("ProfilerStep#"):
            del event["dur"]
    path = tmp_path / "steps_without_dur.json"
    path.write_text(json.dumps(doc))
    out = invoke("summary", str(path))
    assert "ProfilerStep#" in out and "Median step" not in out


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json.gz")), ids=lambda p: p.name[:30])
def test_piped_summary_cuts_no_name_in_a_table_that_fits(path: Path) -> None:
    """Issue 14 item 14: piped (80 columns), a table whose full width fits cut its names anyway (the
    text columns' maximum was counted, not their width). A table that fits is written whole; one that
    does not gives up name width only, and keeps every number."""
    import io

    from rich.console import Console, Group
    from rich.measure import Measurement

    import tracetui
    from tracetui.insight.summary_data import summary_data
    from tracetui.report.summary import summary_renderable
    from tracetui.report.table import FitTable

    def tables(renderable: object) -> list[FitTable]:
        if isinstance(renderable, FitTable):
            return [renderable]
        if isinstance(renderable, Group):
            return [t for r in renderable.renderables for t in tables(r)]
        return []

    found = tables(summary_renderable(summary_data(tracetui.load(path))))
    assert found
    for table in found:
        wide = Console(width=400, file=io.StringIO())
        natural = Measurement.get(wide, wide.options, table).maximum
        console = Console(width=80, file=io.StringIO(), record=True)
        console.print(table)
        text = console.export_text()
        if natural <= 80:
            assert "…" not in text.replace("… ", ""), text  # "… 3 more" rows are the report's own
        numbers = [
            str(cell) for column in table.columns if column.justify == "right" for cell in column.cells
        ]
        assert all(n in text for n in numbers), text


def test_a_table_that_fits_keeps_its_names_whole_in_80_columns() -> None:
    """The issue's case by hand: a 33-character name, four numbers and a short text column make a
    table narrower than 80 columns; piped (80 columns) its names were cut to 16 characters, room kept
    for a text column's 24-character maximum that its 8-character cells never use."""
    import io

    from rich.console import Console
    from rich.measure import Measurement
    from rich.text import Text

    from tracetui.report.table import nums, table

    name = "Optimizer.zero_grad#AdamW.zero_gr"
    rows = [[Text(name), "30", "9", "862.6 µs", "1.20 ms", Text("launches")]]
    header = [("annotation", "name"), *nums("calls", "kernels", "GPU", "CPU"), ("bound", "text")]
    grid = table("Annotations", header, rows)
    console = Console(width=80, file=io.StringIO(), record=True)
    assert Measurement.get(console, console.options, grid).maximum <= 80
    console.print(grid)
    assert name in console.export_text()


def test_a_table_too_wide_even_with_short_names_cuts_names_not_its_last_column() -> None:
    """The Llama trace's annotations piped at 80 columns: seven number and text columns need 66 of them,
    so names at their 16-character minimum still overflowed, and the terminal cut the table's right
    edge ("bound b", "launche"). The names give up more; every line fits, every cell else whole."""
    import io

    from rich.console import Console
    from rich.text import Text

    from tracetui.report.table import MIN_NAME, Cell, nums, table

    rows: list[list[Cell]] = [
        [Text("train_step"), "30", "1,024", "69", "17", "14.41 ms", "50.16 ms", Text("launches")],
        [
            Text("Optimizer.zero_grad#AdamW.zero_grad"),
            "30",
            "0",
            "0",
            "0",
            "0.0 µs",
            "152.5 µs",
            Text("idle"),
        ],
    ]
    header = [
        ("annotation", "name"),
        *nums("calls", "kernels", "memsets", "memcpys", "GPU", "CPU"),
        ("bound by", "text"),
    ]
    console = Console(width=80, file=io.StringIO(), record=True)
    console.print(table("Annotations (per call)", header, rows))
    lines = console.export_text().splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), lines
    text = "\n".join(lines)
    assert "bound by" in text and "launches" in text and "152.5 µs" in text and "1,024" in text
    cut = next(line for line in lines if "Optimizer" in line).split()[0]
    assert cut.endswith("…") and len(cut) >= MIN_NAME


def test_small_truths_of_the_summary_and_the_help() -> None:
    """Issue 14 item 15: no "Every op launched GPU work" without ops; a memcpy-only op's kernels cell
    names its memory work; tracetui --help names every export table; the diff report names a
    repeated device once."""
    import re

    from tracetui.report.names import TABLES

    no_ops = invoke("summary", str(FIXTURES / "cuda_graph_replay.json.gz"))
    assert "Every op launched GPU work" not in no_ops and "No ops in this trace" in no_ops
    import io

    from rich.console import Console

    from tracetui.report.summary import _ops

    path = str(FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz")
    data = json.loads(invoke("summary", path, "--json"))
    memory_only = [o for o in data["ops"] if o["kernels"] == 0 and o["gpu_events"]]
    assert memory_only  # aten::to, aten::copy_, aten::item, …: memcpys, no kernel
    console = Console(width=120, file=io.StringIO(), record=True)
    console.print(_ops({"ops": memory_only}))
    shown = console.export_text()
    for op in memory_only:
        assert re.search(rf"{re.escape(op['name'])}\s.*\s{op['gpu_events']} mem\s", shown), op["name"]
    help_text = " ".join(invoke("--help").split())
    assert all(table in help_text for table in TABLES)
    ranks = FIXTURES / "ranks" / "ddp_2rank_nccl"
    report = invoke("diff", str(ranks), "--ranks", "0,1", "--report")
    assert "NVIDIA H200, NVIDIA H200" not in report and "2 × NVIDIA H200" in report


def test_a_tie_of_bounds_gives_the_same_bound_every_run() -> None:
    # nccl:all_reduce in the DDP fixture: two calls waiting, two GPU-bound; the answer never
    # depends on the order the rows come in (a hash group's mode came in any order)
    from tracetui.insight.spans import _mean_verdicts

    calls = pl.DataFrame(
        {
            "name": ["all_reduce"] * 4,
            "bound": ["waits", "gpu-bound", "waits", "gpu-bound"],
            "verdict": ["a", "b", "c", "d"],
            "cpu_launch_us": [1.0, 2.0, 3.0, 4.0],
        }
    )
    answers = {
        _mean_verdicts(calls.sample(fraction=1.0, shuffle=True, seed=seed)).row(0, named=True)["bound"]
        for seed in range(20)
    }
    assert answers == {"gpu-bound"}
