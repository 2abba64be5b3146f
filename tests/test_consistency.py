"""One number, one computation (issue 14): for every fixture, the kernels, memsets, memcpys and GPU
time of every step and annotation are identical in the tree model, the details pane text, the tables,
``summary --json`` and ``export`` (through the CLI), and equal to a plain-Python replay of the raw
JSON (tests/replay.py), which knows nothing of tracetui. The texts are checked too: the tables' cells
and the printed summary's Steps, Annotations and threads lines write the replay's figures."""

from __future__ import annotations

import io
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner

import tracetui
from tests.replay import Span, replay
from tracetui import formatting as fmt
from tracetui.app.widgets.details import describe
from tracetui.cli import cli
from tracetui.report.summary import MAX_STEPS, summary_renderable
from tracetui.views.insight import load_insight
from tracetui.views.tables import build_tables
from tracetui.views.tree import TreeModel

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EVERY = sorted(FIXTURES.glob("*.json.gz")) + sorted((FIXTURES / "ranks").glob("*/*.json.gz"))
COUNTS = ("kernels", "memcpys", "memsets")


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def pane_numbers(text: str) -> dict[str, Any]:
    """The counts, GPU time and launched list's length the details pane writes."""
    found: dict[str, Any] = {}
    for key in COUNTS:
        match = re.search(rf"^  {key}\s+([\d,]+)", text, re.M)
        found[key] = int(match.group(1).replace(",", "")) if match else 0
    gpu = re.search(r"^  GPU time\s+(.+)$", text, re.M)
    found["gpu"] = gpu.group(1) if gpu else fmt.duration(0.0)
    launched = re.search(r"^Launched \(([\d,]+)\)", text, re.M)
    found["launched"] = launched.group(1) if launched else fmt.count(0)  # as written: 1,110
    split = re.search(r"^  kernels\s+[\d,]+ \((.+)\)$", text, re.M)
    found["split"] = split.group(1) if split else None
    return found


def expected_of(span: Span) -> dict[str, Any]:
    return {k: span.counts[k] for k in COUNTS} | {
        "gpu_events": span.counts["gpu_events"],
        "gpu_us": span.gpu_us,
    }


@pytest.mark.parametrize("path", EVERY, ids=lambda p: p.name[:40])
def test_every_surface_shows_the_same_numbers(path: Path) -> None:
    truth = replay(path)
    trace = tracetui.load(path)
    model = TreeModel(trace)
    insight = load_insight(trace)
    tables = build_tables(trace, insight)
    summary = json.loads(invoke("summary", str(path), "--json"))
    exported = {
        table: pl.read_json(io.StringIO(invoke("export", str(path), "--table", table, "--format", "json")))
        for table in ("steps", "annotations")
    }
    spans = {**truth.steps, **truth.annotations}

    # the tree model and the details pane, per instance
    for span_id, span in spans.items():
        want = expected_of(span)
        node = model.node(span_id)
        got = {k: getattr(node, k) for k in (*COUNTS, "gpu_events")} | {"gpu_us": node.gpu_us}
        assert got == want | {"gpu_us": pytest.approx(want["gpu_us"])}, span.name
        pane = pane_numbers(describe(trace, model, span_id, insight).plain)
        assert {k: pane[k] for k in COUNTS} == {k: want[k] for k in COUNTS}, span.name
        if want["gpu_events"]:
            assert pane["gpu"] == fmt.duration(node.gpu_us)
        assert pane["launched"] == fmt.count(want["gpu_events"])
        assert pane["split"] == truth.split(span)

    # steps: the table, summary --json, export, per step
    table = tables["steps"].frame.select("id", *COUNTS, "gpu_us").rows_by_key("id", named=True, unique=True)
    step_cells = {c.key: c for c in tables["steps"].columns}
    by_name = {s["name"]: s for s in summary["steps"]}
    export = exported["steps"].rows_by_key("id", named=True, unique=True) if truth.steps else {}
    assert len(summary["steps"]) == len(truth.steps)
    for step_id, step in truth.steps.items():
        want = expected_of(step)
        for where, row in (
            ("table", table[step_id]),
            ("summary", by_name[step.name]),
            ("export", export[step_id]),
        ):
            assert {k: row[k] for k in COUNTS} == {k: want[k] for k in COUNTS}, where
            assert row["gpu_us"] == pytest.approx(want["gpu_us"]), where
        assert by_name[step.name]["kernels_split"] == truth.split(step)
        cells = {k: step_cells[k].text(table[step_id][k]) for k in (*COUNTS, "gpu_us")}  # what it writes
        assert cells == {k: fmt.count(want[k]) for k in COUNTS} | {"gpu_us": fmt.duration(want["gpu_us"])}

    # annotations: per name and call, in the table, summary --json and export
    calls: dict[str, list[Span]] = defaultdict(list)
    for span in truth.annotations.values():
        calls[span.name].append(span)
    table_rows = tables["annotations"].frame.rows_by_key("name", named=True, unique=True)
    summary_rows = {a["name"]: a for a in summary["annotations"]}
    export_rows = exported["annotations"].rows_by_key("name", named=True, unique=True) if calls else {}
    assert set(table_rows) == set(summary_rows) == set(export_rows) == set(calls)
    for name, instances in calls.items():
        n = len(instances)
        want = {f"{k}_per_call": sum(s.counts[k] for s in instances) / n for k in COUNTS}
        want["gpu_us_per_call"] = sum(s.gpu_us for s in instances) / n
        want["kernels_here_per_call"] = sum(s.kernels_here for s in instances) / n
        for where, row in (
            ("table", table_rows[name]),
            ("summary", summary_rows[name]),
            ("export", export_rows[name]),
        ):
            assert {k: row[k] for k in want} == {k: pytest.approx(v) for k, v in want.items()}, (name, where)
        tree = [model.node(s.id) for s in instances]
        assert sum(node.kernels or 0 for node in tree) / n == want["kernels_per_call"]
        cells = {c.key: c.text(table_rows[name][c.key]) for c in tables["annotations"].columns if not c.name}
        for key, value in want.items():
            if key in cells:
                assert cells[key] == (fmt.duration(value) if "_us_" in key else fmt.count(value)), (name, key)

    printed_summary_agrees(summary, truth)


def printed_summary_agrees(summary: dict[str, Any], truth: Any) -> None:
    """The printed summary (wide: no cell cut) writes the replay's kernels, memsets and memcpys in its
    Steps rows (a column of zeros is dropped), each annotation's per-call figures and every split."""
    from rich.console import Console

    console = Console(width=400, file=io.StringIO(), record=True, color_system=None)
    console.print(summary_renderable(summary))
    text = console.export_text()
    steps = summary["steps"]
    listed = {s["name"] for s in steps[: MAX_STEPS - 1]} | {s["name"] for s in steps[-1:]}
    shown = [k for k in ("memsets", "memcpys") if any(s.counts[k] for s in truth.steps.values())]
    for step in truth.steps.values():
        if step.name not in listed:
            continue
        cells = r"\s+".join(fmt.count(step.counts[k]) for k in ("kernels", *shown))
        assert re.search(rf"^\s*{re.escape(step.name)}\s.*\s{cells}(\s|$)", text, re.M), step.name
    calls: dict[str, list[Span]] = defaultdict(list)
    for span in truth.annotations.values():
        calls[span.name].append(span)
    for name, instances in calls.items():
        n = len(instances)
        kernels = fmt.count(sum(s.counts["kernels"] for s in instances) / n)
        gpu = fmt.duration(sum(s.gpu_us for s in instances) / n)
        row = (
            rf"^\s*{re.escape(name)}\s+{fmt.count(n)}\s+{re.escape(kernels)}(\s\(.*?\))?\s.*{re.escape(gpu)}"
        )
        assert re.search(row, text, re.M), name
        split = truth.split(instances[0])
        if split and all(truth.split(s) == split for s in instances):
            assert f"{name} {split} per call" in " ".join(text.split()), name


@pytest.mark.parametrize(
    "path", [FIXTURES / "mlp_eager.json.gz", FIXTURES / "capture_mlp_compiled_train.json.gz"]
)
def test_why_figures_are_one_computation(path: Path) -> None:
    """Issue 39: each step's critical path and idle time in summary --json and export are the model's
    (insight.critical_path.step_paths, insight.idle.stream_idle), and the advice is the same list."""
    from tracetui.insight.advice import advice
    from tracetui.insight.critical_path import PARTS, step_paths
    from tracetui.insight.idle import stream_idle

    trace = tracetui.load(path)
    paths = step_paths(trace).spans.rows_by_key("span", named=True, unique=True)
    summary = json.loads(invoke("summary", str(path), "--json"))
    names = {row["name"]: span for span, row in paths.items()}
    for step in summary["steps"]:
        want = paths[names[step["name"]]]
        assert {k: step["critical_path"][k] for k in ("length_us", *PARTS)} == {
            k: pytest.approx(want[k]) for k in ("length_us", *PARTS)
        }
    exported = pl.read_json(
        io.StringIO(invoke("export", str(path), "--table", "critical_path", "--format", "json"))
    )
    steps_only = exported.filter(pl.col("span_kind") == "step").group_by("span").agg(pl.col("us").sum())
    for span, us in steps_only.iter_rows():
        assert us == pytest.approx(paths[span]["length_us"], abs=0.01) or us >= paths[span]["length_us"]
    idle = pl.read_json(io.StringIO(invoke("export", str(path), "--table", "idle", "--format", "json")))
    assert idle["idle_us"].to_list() == pytest.approx(stream_idle(trace)["idle_us"].to_list())
    assert [a["rule"] for a in summary["advice"]] == [a.rule for a in advice(trace)]
