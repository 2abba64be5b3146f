"""``tracetui export`` of the tables with text on every row (``events``: the args; ``kernels``: the
roofline readings) in parts of consecutive rows: the file is the same, whatever the parts' size."""

from __future__ import annotations

import io
from functools import partial
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import tracetui
from tracetui.report import export
from tracetui.report.export import export_parts, export_table, write_table

FIXTURES = Path(__file__).parent.parent / "fixtures"
TRACE = FIXTURES / "mlp_train_compiled.json.gz"  # events with args and shapes; kernels with readings


def written(tmp_path: Path, table: str, fmt: str, name: str) -> bytes:
    trace = tracetui.load(TRACE)
    target = tmp_path / f"{name}.{fmt}"
    write_table(export_parts(trace, table), fmt, target, TRACE)
    return target.read_bytes()


@pytest.mark.parametrize("table", ["events", "kernels"])
@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_parts_of_any_size_write_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, fmt: str
) -> None:
    whole = written(tmp_path, table, fmt, "whole")
    monkeypatch.setattr(export, "ROWS", 7)
    monkeypatch.setattr(export, "KERNEL_ROWS", 5)
    trace = tracetui.load(TRACE)
    parts = list(export_parts(trace, table))
    assert len(parts) > 3 and all(p.height <= 7 for p in parts)  # many parts
    assert pl.concat(parts).equals(export_table(trace, table))
    in_parts = written(tmp_path, table, fmt, "parts")
    if fmt == "parquet":  # the same rows and types (the file's row groups differ)
        assert_frame_equal(pl.read_parquet(io.BytesIO(in_parts)), pl.read_parquet(io.BytesIO(whole)))
    else:
        assert in_parts == whole
        read = partial(pl.read_csv, infer_schema=False) if fmt == "csv" else pl.read_json
        assert len(read(io.BytesIO(in_parts))) == sum(p.height for p in parts)  # one header, one array


def test_the_whole_events_table_has_every_events_args_and_an_ops_shapes() -> None:
    trace = tracetui.load(TRACE)
    table = export_table(trace, "events")
    assert table["id"].to_list() == trace.events["id"].to_list()
    assert table["args"].to_list() == trace.args_json().to_list()
    ops = table.filter(pl.col("cat") == "cpu_op")
    assert ops["input_dims"].is_not_null().any()
    assert table.filter(pl.col("cat") != "cpu_op")["input_dims"].is_null().all()


def test_an_empty_table_is_written_with_its_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tracetui.load(FIXTURES / "cpu_only.json.gz")  # no GPU work: no kernels
    parts = list(export_parts(trace, "kernels"))
    assert len(parts) == 1 and parts[0].is_empty() and "verdict" in parts[0].columns
    for fmt in ("csv", "json", "parquet"):
        target = tmp_path / f"k.{fmt}"
        write_table(iter(parts), fmt, target, trace.path)
        if fmt == "csv":
            assert target.read_text().startswith("name,ts,dur,") and target.read_text().count("\n") == 1
        elif fmt == "json":
            assert target.read_text() == "[]"
        else:
            assert pl.read_parquet(target).columns == parts[0].columns


def test_stdout_gets_the_parts_as_one_document(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tracetui.load(TRACE)
    write_table(export_parts(trace, "kernels"), "json", None, TRACE)
    whole = capsys.readouterr().out
    monkeypatch.setattr(export, "KERNEL_ROWS", 4)
    write_table(export_parts(trace, "kernels"), "json", None, TRACE)
    assert capsys.readouterr().out == whole and whole.endswith("]\n")
    assert len(pl.read_json(io.StringIO(whole))) == len(trace.gpu.filter(pl.col("cat") != "cuda_runtime"))
