"""``write_table``, the writer of ``tracetui export`` and of the explorer's exports: lists of any
type joined in CSV (the kernels table's histogram column)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracetui.report.export import write_table


def test_csv_joins_lists_of_numbers_and_texts(tmp_path: Path) -> None:
    frame = pl.DataFrame({"name": ["a"], "histogram": [[3, 0, 1]], "ops": [["=x", "y"]]})
    write_table(frame, "csv", tmp_path / "t.csv", tmp_path / "trace.json")
    assert (tmp_path / "t.csv").read_text() == "name,histogram,ops\na,3; 0; 1,'=x; y\n"
