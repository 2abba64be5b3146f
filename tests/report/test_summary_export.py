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
