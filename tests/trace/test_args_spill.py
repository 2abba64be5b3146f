"""What a load keeps of the raw args is on disk (an unlinked temporary file), not in memory; where
no file can be written, in memory, and the args read the same either way."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import polars as pl
import pytest

import tracetui
from tracetui.trace import args as args_module
from tracetui.trace.args import ArgsBlocks, Spill

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BLOCKS = [bytes([i]) * (1000 + 37 * i) for i in range(20)]


def in_file(spill: Spill) -> int:
    return sum(isinstance(block, tuple) for block in spill._blocks)


def test_blocks_go_to_a_file_and_read_back() -> None:
    spill = Spill()
    for block in BLOCKS:
        spill.append(block)
    assert in_file(spill) == len(BLOCKS)  # none held in memory
    assert list(spill) == BLOCKS and spill[3] == BLOCKS[3] and spill[-1] == BLOCKS[-1]
    assert spill[2:5] == BLOCKS[2:5]
    assert spill._file is not None
    assert os.fstat(spill._file.fileno()).st_nlink == 0  # unlinked: nothing is left behind


def test_without_a_temporary_file_the_blocks_stay_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    spill = Spill()
    for block in BLOCKS:
        spill.append(block)
    assert in_file(spill) == 0
    assert list(spill) == BLOCKS


def test_a_full_disk_mid_way_keeps_the_rest_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    writes = {"n": 0}
    real = os.pwrite

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        writes["n"] += 1
        if writes["n"] > 7:
            raise OSError(28, "No space left on device")
        if writes["n"] == 3:  # a short write: the rest of the block is written after it
            return real(fd, bytes(data)[:10], offset)
        return real(fd, data, offset)

    monkeypatch.setattr(args_module.os, "pwrite", pwrite)
    spill = Spill()
    for block in BLOCKS:
        spill.append(block)
    assert 0 < in_file(spill) < len(BLOCKS)
    assert list(spill) == BLOCKS


def test_a_loaded_trace_reads_its_args_from_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRACETUI_NO_CACHE", "1")
    path = FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz"
    trace = tracetui.load(path)
    provider = trace.raw_args
    assert isinstance(provider, ArgsBlocks) and isinstance(provider._data, Spill)
    assert in_file(provider._data) == len(provider._data) > 0
    ids = trace.events["id"].to_list()
    spilled = [bytes(raw) for raw in provider.raw(ids)]
    # the same args as the cache's copy of the blocks (its tables, and its file read a block at a time)
    (write,) = provider.files().values()
    write(tmp_path / "args_data")
    with (tmp_path / "args_data").open("rb") as data:
        again = ArgsBlocks.from_tables(*provider.tables().values(), data)
        assert [bytes(raw) for raw in again.raw(ids)] == spilled
    assert any(spilled) and trace.event_args(ids[-1]) is not None


def test_blocks_in_a_file_and_in_memory_are_stored_end_to_end_and_read_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What a cache keeps of the blocks: their sizes in a table, their bytes end to end in a file,
    written a block at a time, whether the blocks were in the temporary file or in memory."""
    real = os.pwrite
    writes = {"n": 0}

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        writes["n"] += 1
        if writes["n"] > 5:
            raise OSError(28, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(args_module.os, "pwrite", pwrite)
    spill = Spill()
    for block in BLOCKS:
        spill.append(block)
    assert 0 < in_file(spill) < len(BLOCKS)
    assert spill.sizes() == [len(block) for block in BLOCKS]
    lengths = [len(block) // 2 for block in BLOCKS]
    provider = ArgsBlocks(
        range(0, 40, 2), [2 * n for n in lengths], spill, pl.Series(lengths, dtype=pl.UInt32)
    )
    (write,) = provider.files().values()
    write(tmp_path / "data")
    assert (tmp_path / "data").read_bytes() == b"".join(BLOCKS)
    blocks = provider.tables()["args_blocks"]
    assert blocks["stored"].to_list() == [len(block) for block in BLOCKS]
    with (tmp_path / "data").open("rb") as data:
        again = Spill.over(data, blocks["stored"].to_list())
        assert list(again) == BLOCKS and again.sizes() == spill.sizes()
