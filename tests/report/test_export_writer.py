"""``write_table``, the writer of ``tracetui export`` and of the explorer's exports: lists of any
type joined in CSV, files written atomically."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tracetui.errors import TraceError
from tracetui.report.export import write_table


def test_csv_joins_lists_of_numbers_and_texts(tmp_path: Path) -> None:
    frame = pl.DataFrame({"name": ["a"], "histogram": [[3, 0, 1]], "ops": [["=x", "y"]]})
    write_table(frame, "csv", tmp_path / "t.csv", tmp_path / "trace.json")
    assert (tmp_path / "t.csv").read_text() == "name,histogram,ops\na,3; 0; 1,'=x; y\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "t.parquet"
    target.write_bytes(b"old")

    def broken(self: pl.DataFrame, path: Path) -> None:
        Path(path).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken)
    with pytest.raises(TraceError, match=r"t\.parquet: cannot write: No space left on device"):
        write_table(pl.DataFrame({"a": [1]}), "parquet", target, tmp_path / "trace.json")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]
