"""Tables a load keeps on disk until first used (the flows, the recorded shapes): the trace reads
them back as they were, only the columns asked for, never keeps what it read once for itself, and
keeps them in memory where no temporary file can be written. Also: the scan's all-null columns."""

from __future__ import annotations

import gc
import os
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import tracetui
from tracetui.errors import TraceError
from tracetui.insight.summary_data import summary_data
from tracetui.trace import cache, model, spill, stream
from tracetui.trace.model import TABLES, Unread, read_table
from tracetui.trace.spill import SpilledTables

FIXTURES = Path(__file__).parent.parent / "fixtures"
TRAIN = FIXTURES / "capture_mlp_compiled_train.json.gz"  # fwdbwd flows, recorded shapes
ASIDE = ("flows", "recorded_shapes")


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_NO_CACHE", "1")


def _load(path: Path, monkeypatch: pytest.MonkeyPatch, aside: bool) -> tracetui.Trace:
    with monkeypatch.context() as patch:
        patch.setenv("TRACETUI_SPILL_MIN_BYTES", "0" if aside else "1T")
        return tracetui.load(path)


def _unread(trace: tracetui.Trace, table: str) -> bool:
    return isinstance(trace.__dict__[table], Unread)


def test_a_load_keeps_the_flows_and_shapes_on_disk_and_reads_back_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = _load(TRAIN, monkeypatch, aside=True)
    held = _load(TRAIN, monkeypatch, aside=False)
    assert all(_unread(kept, name) for name in ASIDE) and not any(_unread(held, name) for name in ASIDE)
    assert kept.height("flows") == held.height("flows") == 211
    assert_frame_equal(kept.columns_of("flows", "ts", "cat"), held.flows.select("ts", "cat"))
    assert _unread(kept, "flows")  # a few columns: the table is still on disk
    for name in TABLES:
        assert_frame_equal(getattr(kept, name), getattr(held, name))
    assert not any(_unread(kept, name) for name in ASIDE)  # read whole: kept from now on
    assert_frame_equal(kept.shapes(), held.shapes())
    # what the flows gave the model at load: the forward links
    assert kept.events["fwd_id"].is_not_null().sum() == 12


def test_the_summary_reads_one_column_of_the_flows_and_keeps_no_shapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = _load(TRAIN, monkeypatch, aside=True)
    held = _load(TRAIN, monkeypatch, aside=False)
    data = summary_data(kept)
    assert data == summary_data(held)
    assert data["counts"]["flows"] == {"ac2g": 187, "fwdbwd": 24}
    assert data["rooflines"] and data["rooflines"] == summary_data(held)["rooflines"]
    assert all(_unread(kept, name) for name in ASIDE)
    assert not kept._columns  # read for the summary alone: nothing kept


def test_a_cache_entry_of_a_trace_with_tables_on_disk_holds_them_and_leaves_them_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRACETUI_NO_CACHE")
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRACETUI_CACHE_MIN_BYTES", "0")
    first = _load(TRAIN, monkeypatch, aside=True)
    cache.settle()
    assert all(_unread(first, name) for name in ASIDE)  # the writer read them, did not keep them
    again = tracetui.load(TRAIN)
    assert again.from_cache
    for name in ASIDE:
        assert_frame_equal(getattr(again, name), getattr(first, name))


def test_a_full_disk_while_the_tables_are_written_keeps_them_in_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened: list[object] = []
    make = tempfile.TemporaryFile

    def full(*args: object, **kwargs: object) -> object:
        if kwargs.get("prefix") != "tracetui-tables-":  # the raw args' spill: as it is
            return make(*args, **kwargs)  # type: ignore[call-overload]
        opened.append(handle := open("/dev/full", "w+b"))  # noqa: SIM115 (closed by the spill)
        return handle

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with monkeypatch.context() as patch:
        patch.setattr(tempfile, "TemporaryFile", full)
        trace = _load(TRAIN, patch, aside=True)
    assert opened and all(handle.closed for handle in opened)  # type: ignore[attr-defined]
    assert not any(_unread(trace, name) for name in ASIDE)
    assert_frame_equal(trace.recorded_shapes, _load(TRAIN, monkeypatch, aside=False).recorded_shapes)


def test_the_temporary_file_goes_with_the_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _load(TRAIN, monkeypatch, aside=True)
    unread = trace.__dict__["flows"]
    assert isinstance(unread, Unread) and isinstance(unread.source, SpilledTables)
    file = unread.source._file
    assert not file.closed
    del trace, unread
    gc.collect()
    assert file.closed


def test_the_cache_writer_holds_one_table_read_back_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each table a load kept on disk is read for the write alone and let go once written: when the
    shapes are read, the flows read before them are gone."""
    monkeypatch.delenv("TRACETUI_NO_CACHE")
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRACETUI_CACHE_MIN_BYTES", "0")
    read: list[tuple[str, weakref.ref[pl.DataFrame]]] = []
    alive_when_read: list[list[str]] = []
    original = model.read_table

    def table(source: model.TableSource, name: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        if not isinstance(source, SpilledTables):
            return original(source, name, columns)
        gc.collect()
        alive_when_read.append([before for before, ref in read if ref() is not None])
        frame = original(source, name, columns)
        read.append((name, weakref.ref(frame)))
        return frame

    monkeypatch.setattr(model, "read_table", table)
    _load(TRAIN, monkeypatch, aside=True)
    cache.settle()
    assert [name for name, _ in read] == ["flows", "recorded_shapes"]
    assert alive_when_read == [[], []]
    assert tracetui.load(TRAIN).from_cache


def test_a_trace_from_the_cache_answers_questions_asked_once_again_and_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table read for one question (not kept) is read again for the next, and whole after: the
    cache's source lets a table go once it gives it whole, so a question never asks it so."""
    monkeypatch.delenv("TRACETUI_NO_CACHE")
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRACETUI_CACHE_MIN_BYTES", "0")
    held = _load(TRAIN, monkeypatch, aside=False)
    cache.settle()
    again = tracetui.load(TRAIN)
    assert again.from_cache
    ops = held.events.filter(pl.col("cat") == "cpu_op")["id"].to_list()
    for _ in range(2):
        assert_frame_equal(again.shapes(ops), held.shapes(ops))
        assert_frame_equal(again.read_once("flows"), held.flows)
    assert_frame_equal(again.flows, held.flows)
    assert_frame_equal(again.recorded_shapes, held.recorded_shapes)


def test_without_a_temporary_file_the_tables_stay_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(tempfile, "TemporaryFile", refused)
        trace = _load(TRAIN, patch, aside=True)
    assert not any(_unread(trace, name) for name in ASIDE)
    assert_frame_equal(trace.flows, _load(TRAIN, monkeypatch, aside=False).flows)


def _frames() -> dict[str, pl.DataFrame]:
    return {
        "a": pl.DataFrame({"id": pl.Series([1, 2, 3], dtype=pl.UInt32), "x": ["p", None, "q"]}),
        "b": pl.DataFrame({"y": pl.Series(["u", "v"], dtype=pl.Categorical), "z": [1.5, None]}),
    }


def test_spilled_tables_read_back_whole_or_by_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_SPILL_MIN_BYTES", "0")
    frames = _frames()
    spilled = SpilledTables.of(Path("t.json"), frames)
    assert spilled is not None and spilled.names == ("a", "b") and not spilled.files
    for name, frame in frames.items():
        assert_frame_equal(read_table(spilled, name), frame)
        assert spilled.height(name) == frame.height and spilled.columns(name) == frame.columns
    assert_frame_equal(read_table(spilled, "a", ["x", "id"]), frames["a"].select("x", "id"))
    with pytest.raises(KeyError):
        spilled.file("a")


def test_a_table_is_read_back_in_reads_of_bounded_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_SPILL_MIN_BYTES", "0")
    frames = _frames()
    spilled = SpilledTables.of(Path("t.json"), frames)
    assert spilled is not None
    monkeypatch.setattr(spill, "READ_BYTES", 7)  # many reads per table
    for name, frame in frames.items():
        assert_frame_equal(read_table(spilled, name), frame)


def test_small_tables_are_not_spilled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_SPILL_MIN_BYTES", "1M")
    assert SpilledTables.of(Path("t.json"), _frames()) is None


def test_a_spilled_table_that_cannot_be_read_back_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_SPILL_MIN_BYTES", "0")
    spilled = SpilledTables.of(Path("t.json"), _frames())
    assert spilled is not None
    os.ftruncate(spilled._file.fileno(), 10)  # the file lost its bytes
    with pytest.raises(TraceError, match=r"t\.json: a table it kept aside cannot be read back") as caught:
        read_table(spilled, "b")
    assert "\n" not in str(caught.value)


def test_a_column_that_holds_only_nulls_keeps_its_type_and_rows() -> None:
    """The scan's all-null columns are made null columns (no buffer), nothing else changes."""
    frame = pl.DataFrame(
        {
            "id": pl.Series([1, 2, 3], dtype=pl.UInt32),
            "text": pl.Series([None, None, None], dtype=pl.String),
            "name": pl.Series([None, None, None], dtype=pl.Categorical),
            "count": pl.Series([None, None, None], dtype=pl.Int64),
            "some": pl.Series([None, 2.0, None], dtype=pl.Float64),
        }
    )
    compact = stream._without_null_buffers(frame)
    assert_frame_equal(compact, frame)
    assert compact.schema == frame.schema
    empty = frame.clear()
    assert_frame_equal(stream._without_null_buffers(empty), empty)
