"""``tracetui export`` of the tables with text on every row (``events``: the args; ``kernels``: the
roofline readings) in parts of consecutive rows: the table written is the same, whatever the parts'
size."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import tracetui
from tracetui.errors import TraceError
from tracetui.report import export
from tracetui.report.export import export_parts, write_table

FIXTURES = Path(__file__).parent.parent / "fixtures"
TRACE = FIXTURES / "mlp_train_compiled.json.gz"  # events with args and shapes; kernels with readings


def read_back(data: bytes, fmt: str) -> pl.DataFrame:
    if fmt == "csv":
        return pl.read_csv(io.BytesIO(data), infer_schema_length=None)
    return pl.read_json(io.BytesIO(data)) if fmt == "json" else pl.read_parquet(io.BytesIO(data))


@pytest.mark.parametrize("path", [TRACE, FIXTURES / "mlp_eager.json.gz"], ids=lambda p: p.name)
@pytest.mark.parametrize("table", ["events", "kernels"])
@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_parts_of_any_size_write_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Path, table: str, fmt: str
) -> None:
    """The same rows, columns and values; a float may differ in its last bits where a part is a
    row or two (polars divides a tiny column by a number exactly, a longer one by its reciprocal)."""
    trace = tracetui.load(path)
    whole = tmp_path / f"whole.{fmt}"
    write_table(export_parts(trace, table), fmt, whole, path)
    frame = pl.concat(export_parts(trace, table))  # in the default parts (one, for these traces)
    monkeypatch.setattr(export, "ROWS", 7)
    monkeypatch.setattr(export, "KERNEL_ROWS", 5)
    parts = list(export_parts(trace, table))
    assert len(parts) > 3 and all(p.height <= 7 for p in parts)  # many parts
    assert_frame_equal(pl.concat(parts), frame, rel_tol=1e-12)
    in_parts = tmp_path / f"parts.{fmt}"
    write_table(iter(parts), fmt, in_parts, path)
    assert_frame_equal(
        read_back(in_parts.read_bytes(), fmt), read_back(whole.read_bytes(), fmt), rel_tol=1e-12
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"parts.{fmt}", f"whole.{fmt}"]  # nothing left


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_default_parts_write_the_bytes_of_the_whole(tmp_path: Path, fmt: str) -> None:
    trace = tracetui.load(TRACE)
    for name, frame in (
        ("parts", export_parts(trace, "events")),
        ("whole", pl.concat(export_parts(trace, "events"))),
    ):
        write_table(frame, fmt, tmp_path / f"{name}.{fmt}", TRACE)
    assert (tmp_path / f"parts.{fmt}").read_bytes() == (tmp_path / f"whole.{fmt}").read_bytes()


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_a_part_that_fails_is_its_own_error_and_leaves_no_file(tmp_path: Path, fmt: str) -> None:
    good = pl.DataFrame({"a": [1, 2]})

    def parts() -> Iterator[pl.DataFrame]:
        yield good
        yield good
        raise TraceError(TRACE, "the file changed since it was opened")

    with pytest.raises(TraceError, match="changed since"):  # not "cannot write"
        write_table(parts(), fmt, tmp_path / f"out.{fmt}", TRACE)
    assert list(tmp_path.iterdir()) == []


def test_parts_with_other_columns_are_refused(tmp_path: Path) -> None:
    parts = [pl.DataFrame({"a": [1]}), pl.DataFrame({"a": ["x"]})]
    with pytest.raises(ValueError, match="not the first's"):
        write_table(iter(parts), "csv", tmp_path / "out.csv", TRACE)
    with pytest.raises(ValueError, match="no part"):
        write_table(iter([]), "parquet", tmp_path / "out.parquet", TRACE)
    assert list(tmp_path.iterdir()) == []


def test_the_whole_events_table_has_every_events_args_and_an_ops_shapes() -> None:
    trace = tracetui.load(TRACE)
    table = pl.concat(export_parts(trace, "events"))
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
