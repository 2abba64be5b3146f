"""``tracetui convert``: the Hive-partitioned dataset, read back by summary and export; with Ray."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.ranks.conftest import GLOO4, NCCL2
from tracetui.errors import TraceError
from tracetui.ranks import dataset
from tracetui.ranks.discover import DATASET_MANIFEST, discover, resolve
from tracetui.ranks.run import as_rank_set, convert, rank_paths, report_for
from tracetui.ranks.summary_data import ranks_data

SMALL = ("ranks", "steps", "collectives", "kernel_names")


def _convert(out: Path, source: Path = GLOO4, **kwargs: object) -> dict:  # type: ignore[type-arg]
    found = discover([source])
    assert found is not None
    return convert(found, out, **kwargs)  # type: ignore[arg-type]


def _without_label(data: dict) -> dict:  # type: ignore[type-arg]
    run = {k: v for k, v in data["distributed"].items() if k != "label"}
    return {**data, "distributed": run}


def test_layout_and_schema(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    facts = _convert(out)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [DATASET_MANIFEST, "summaries", "facts", *dataset.TABLE_NAMES]
    )
    for table in dataset.TABLE_NAMES:
        assert sorted(p.name for p in (out / table).iterdir()) == [f"rank={r}" for r in range(4)]
        assert [p.name for p in (out / table / "rank=0").iterdir()] == ["part-0.parquet"]
    assert json.loads((out / DATASET_MANIFEST).read_text()) == facts
    assert facts["schema"] == "tracetui.dataset/2" and facts["world_size"] == 4
    # what a user would do: one lazy scan over every rank, the rank from the folder names
    kernels = pl.scan_parquet(out / "kernels" / "**" / "*.parquet", hive_partitioning=True).collect()
    assert sorted(kernels["rank"].unique()) == [0, 1, 2, 3]
    assert {"name", "ts", "dur", "launch_op", "step", "family"} <= set(kernels.columns)
    events = dataset.scan(out, "events").filter(pl.col("rank") == 2).collect()
    assert events.height > 1000 and "start_ns" in events.columns
    summary = json.loads((out / "summaries" / "rank=2.json").read_text())
    assert summary["schema"] == "tracetui.summary/1" and summary["trace"]["name"].startswith("rank2")


def test_summary_of_the_dataset_is_the_summary_of_the_directory(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    _convert(out)
    from_traces = ranks_data(report_for(resolve([GLOO4]), rank=1))
    from_dataset = ranks_data(report_for(resolve([out]), rank=1))
    assert _without_label(from_dataset) == _without_label(from_traces)


def test_small_tables_match_the_directory_analysis(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    _convert(out, NCCL2)
    direct = report_for(resolve([NCCL2]), summary=False).analysis
    lazy = report_for(resolve([out]), summary=False).analysis
    for name in ("ranks", "collectives", "arrivals", "stragglers", "kernels", "steps"):
        assert_frame_equal(getattr(lazy, name), getattr(direct, name), check_dtypes=False)


def test_output_rules(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    _convert(out)
    with pytest.raises(TraceError, match="already exists"):
        _convert(out)
    stamp = (out / DATASET_MANIFEST).stat().st_mtime_ns
    os.utime(out / DATASET_MANIFEST, ns=(1, 1))
    _convert(out, force=True)
    assert (out / DATASET_MANIFEST).stat().st_mtime_ns != 1 and stamp
    other = tmp_path / "notes"
    other.mkdir()
    with pytest.raises(TraceError, match="not a tracetui dataset"):
        _convert(other, force=True)
    assert not list(tmp_path.glob(".*staging*"))


def test_a_single_trace_converts_as_one_rank(tmp_path: Path) -> None:
    rank_set = as_rank_set([next(GLOO4.glob("rank2*"))])
    assert [(r.rank, r.source) for r in rank_set.ranks] == [(2, "distributedInfo")]
    convert(rank_set, tmp_path / "one")
    assert dataset.read_manifest(tmp_path / "one")["ranks"][0]["rank"] == 2


def test_rank_paths_of_a_dataset(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    _convert(out)
    assert [p.name[:5] for p in rank_paths(resolve([out]), [3, 0])] == ["rank3", "rank0"]
    with pytest.raises(TraceError, match="no rank 9"):
        rank_paths(resolve([out]), [9])


def test_not_a_dataset(tmp_path: Path) -> None:
    (tmp_path / DATASET_MANIFEST).write_text('{"schema": "other"}')
    with pytest.raises(TraceError, match=r"not a tracetui\.dataset/2 dataset"):
        report_for(tmp_path)


def _frames(root: Path) -> dict[str, pl.DataFrame]:
    return {
        table: dataset.scan(root, table).collect().sort("rank", maintain_order=True)
        for table in dataset.TABLE_NAMES
    }


@pytest.mark.slow
@pytest.mark.ray
def test_ray_writes_the_same_dataset_and_summary(tmp_path: Path) -> None:
    """A local Ray (2 CPUs) converts the 4-rank set exactly as local processes do."""
    ray = pytest.importorskip("ray")
    local, remote = tmp_path / "local", tmp_path / "ray"
    _convert(local, workers=2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        _convert(remote, engine="ray")
    finally:
        ray.shutdown()
    files = sorted(p.relative_to(local) for p in local.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(remote) for p in remote.rglob("*") if p.is_file())
    assert len(files) == 1 + 4 * (len(dataset.TABLE_NAMES) + 2)  # + a summary and facts per rank
    for name in files:  # byte for byte: every Parquet part, summary and the manifest
        assert (remote / name).read_bytes() == (local / name).read_bytes(), name
    a, b = _frames(local), _frames(remote)
    for table in dataset.TABLE_NAMES:
        assert_frame_equal(a[table], b[table])
    assert ranks_data(report_for(remote, rank=2)) == ranks_data(report_for(local, rank=2))


def test_a_ranks_tree_comes_from_its_trace_else_from_the_dataset(tmp_path: Path) -> None:
    """`open DATASET`: a rank's own trace while it is there and unchanged; else its model tables and
    facts read from the dataset (the same trace, without raw args); a dataset without them says
    what to do."""
    import tracetui
    from tracetui.ranks.run import rank_trace
    from tracetui.views.tables import build_tables
    from tracetui.views.tree import TreeModel

    traces = Path(shutil.copytree(GLOO4, tmp_path / "traces"))
    files = sorted(traces.glob("*.json.gz"))
    out = tmp_path / "ds"
    _convert(out, traces)
    original = tracetui.load(files[2])
    assert rank_trace(out, 2).reader != "dataset"

    files[2].unlink()
    from_dataset = rank_trace(out, 2)
    assert from_dataset.reader == "dataset" and from_dataset.format.endswith("from the dataset (no raw args)")
    assert from_dataset.path == files[2]
    from tracetui.trace.model import TABLES

    for table in TABLES:
        assert_frame_equal(getattr(from_dataset, table), getattr(original, table))
    assert from_dataset.metadata == original.metadata and from_dataset.devices == original.devices
    assert from_dataset.event_count == original.event_count
    shown, expected = TreeModel(from_dataset), TreeModel(original)
    assert [shown.label(k) for k in shown.tops()] == [expected.label(k) for k in expected.tops()]
    assert_frame_equal(build_tables(from_dataset)["kernels"].frame, build_tables(original)["kernels"].frame)
    assert from_dataset.event_args(int(from_dataset.events["id"][0])) == {}  # no raw args

    shutil.copy(files[0], files[2])  # another trace now at rank 2's path: not the one converted
    assert rank_trace(out, 2).reader == "dataset"

    shutil.rmtree(out / "tracks" / "rank=2")
    files[2].unlink()
    with pytest.raises(TraceError, match=r"in the dataset tracks/rank=2/part-0.parquet is missing"):
        rank_trace(out, 2)


RUNNER = "from tracetui.cli import main\nmain()\n"  # as the installed `tracetui` script starts


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize("where", ["checkout", "shadow"])
def test_ray_started_from_inside_a_checkout_runs_this_tracetui(tmp_path: Path, where: str) -> None:
    """Ray puts the folder it was started from first on its workers' path: from the checkout's own
    folder, or from a folder holding another `tracetui/` (here one that cannot be imported), the
    workers still run the driver's tracetui, and write the dataset the local engine writes."""
    pytest.importorskip("ray")
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    cwd = root
    if where == "shadow":
        cwd = tmp_path / "elsewhere"
        (cwd / "tracetui").mkdir(parents=True)
        (cwd / "tracetui" / "__init__.py").write_text("raise ImportError('another tracetui')\n")
    runner = tmp_path / "bin" / "tracetui_cli.py"
    runner.parent.mkdir()
    runner.write_text(RUNNER)
    out, local = tmp_path / "ray", tmp_path / "local"
    env = {**os.environ, "PYTHONPATH": str(root), "TRACETUI_NO_CACHE": "1"}
    command = [sys.executable, str(runner), "convert", str(GLOO4), "-o", str(out), "--engine", "ray"]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    _convert(local)
    assert ranks_data(report_for(out, rank=2)) == ranks_data(report_for(local, rank=2))


def test_a_moved_dataset_still_finds_its_traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """convert run with relative paths; the dataset moved elsewhere (the traces stay), then moved with
    its traces: a rank opened from it, from another folder, is its trace file, with raw args and
    FLOPs."""
    import tracetui
    from tracetui.insight.kernels import kernels_table
    from tracetui.ranks.run import rank_trace

    work = tmp_path / "work"
    shutil.copytree(GLOO4, work / "traces")
    rank2 = sorted((work / "traces").iterdir())[2]
    flops = kernels_table(tracetui.load(rank2))["flops"].drop_nulls().to_list()
    assert flops  # the trace has FLOPs to lose
    monkeypatch.chdir(work)
    convert(as_rank_set(["traces"]), Path("ds"))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")

    def opened(dataset_path: Path, trace_file: Path) -> None:
        trace = rank_trace(dataset_path, 2)
        assert trace.reader != "dataset" and trace.path.resolve() == trace_file.resolve()
        assert trace.event_args(int(trace.events.filter(pl.col("cat") == "cpu_op")["id"][0]))
        assert kernels_table(trace)["flops"].drop_nulls().to_list() == flops

    moved = Path(shutil.move(work / "ds", tmp_path / "elsewhere" / "ds"))
    opened(moved, rank2)  # the traces stayed: their absolute paths
    shutil.move(moved, work / "ds")
    together = Path(shutil.move(work, tmp_path / "together"))
    opened(together / "ds", together / "traces" / rank2.name)  # moved with them: the path from the dataset
