"""Which files make a run and which rank each is: distributedInfo, file name, order; duplicates."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.ranks import synthetic
from tests.ranks.conftest import GLOO4, NCCL2, rank_files
from tracetui.errors import TraceError
from tracetui.ranks.discover import (
    DATASET_MANIFEST,
    FROM_INFO,
    FROM_NAME,
    FROM_ORDER,
    discover,
    is_run,
    rank_list,
    resolve,
    single_trace,
)


def _plain_copies(tmp_path: Path, names: list[str], info: bool = False) -> list[Path]:
    """Copies of the 4-rank set's traces (without distributedInfo unless ``info``) under ``names``."""
    paths = []
    for name, source in zip(names, rank_files(GLOO4), strict=False):
        doc = synthetic.read(source)
        paths.append(synthetic.write(doc if info else synthetic.without_rank(doc), tmp_path / name))
    return paths


def test_a_directory_of_rank_traces() -> None:
    found = discover([GLOO4])
    assert found is not None and not found.is_single
    assert [(r.rank, r.source) for r in found.ranks] == [(r, FROM_INFO) for r in range(4)]
    assert (found.world_size, found.backend, found.missing, found.duplicates) == (4, "gloo", (), ())
    assert found.ranks[0].groups[0].name == "0" and found.ranks[0].groups[0].ranks == (0, 1, 2, 3)
    assert found.describe()[0].endswith("rank from distributedInfo, world size 4, backend gloo")


def test_several_paths_and_a_glob() -> None:
    paths = rank_files(GLOO4)
    explicit = discover([paths[3], paths[1]])
    assert explicit is not None and [r.rank for r in explicit.ranks] == [1, 3]
    assert explicit.missing == (0, 2) and explicit.label == "2 files"
    globbed = discover([str(GLOO4 / "rank[02]*.json.gz")])
    assert globbed is not None and [r.rank for r in globbed.ranks] == [0, 2]


def test_one_trace_is_not_a_run(tmp_path: Path) -> None:
    one = rank_files(NCCL2)[0]
    assert discover([one]) is None
    shutil.copy(one, tmp_path / one.name)
    assert discover([tmp_path]) is None  # a directory with one trace: as today


def test_rank_from_the_file_name(tmp_path: Path) -> None:
    _plain_copies(tmp_path, ["job_rank_3.json.gz", "job_rank_0.json.gz", "job-rank1.json"])
    found = discover([tmp_path])
    assert found is not None
    assert [(r.rank, r.source, r.path.name) for r in found.ranks] == [
        (0, FROM_NAME, "job_rank_0.json.gz"),
        (1, FROM_NAME, "job-rank1.json"),
        (3, FROM_NAME, "job_rank_3.json.gz"),
    ]
    assert found.missing == (2,)


def test_trailing_numbers_are_ranks_but_process_ids_are_not(tmp_path: Path) -> None:
    small = tmp_path / "small"
    _plain_copies(small, ["worker_0.123.pt.trace.json.gz", "worker_1.456.pt.trace.json.gz"])
    found = discover([small])
    assert found is not None and [(r.rank, r.source) for r in found.ranks] == [(0, FROM_NAME), (1, FROM_NAME)]
    pids = tmp_path / "pids"  # tensorboard's default worker name: host_<pid>
    _plain_copies(pids, ["host_939.1.pt.trace.json.gz", "host_940.2.pt.trace.json.gz"])
    assert discover([pids]) is None  # no rank information in a directory: one process, several runs
    explicit = discover(sorted(pids.iterdir()))
    assert explicit is not None and [(r.rank, r.source) for r in explicit.ranks] == [
        (0, FROM_ORDER),
        (1, FROM_ORDER),
    ]


def test_several_runs_of_one_rank_are_not_ranks(tmp_path: Path) -> None:
    for path in rank_files(GLOO4):
        shutil.copy(path, tmp_path / path.name)
    old = tmp_path / "rank2.older.pt.trace.json.gz"
    shutil.copy(rank_files(GLOO4)[2], old)
    os.utime(old, ns=(1, 1))
    found = discover([tmp_path])
    assert found is not None and len(found.ranks) == 4
    assert found.file(2).path.name.startswith("rank2.17961")  # the newest run
    assert [(d.rank, d.path.name) for d in found.duplicates] == [(2, old.name)]
    assert any("another run of rank 2" in line for line in found.describe())


def test_runs_of_a_single_rank_make_a_single_trace(tmp_path: Path) -> None:
    first = rank_files(GLOO4)[0]
    shutil.copy(first, tmp_path / "a.json.gz")
    shutil.copy(first, tmp_path / "b.json.gz")
    os.utime(tmp_path / "a.json.gz", ns=(1, 1))
    found = discover([tmp_path])
    assert found is not None and found.is_single and found.ranks[0].path.name == "b.json.gz"
    assert found.directory == tmp_path


def test_non_traces_are_skipped(tmp_path: Path) -> None:
    for path in rank_files(NCCL2):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    found = discover([tmp_path])
    assert found is not None and len(found.ranks) == 2
    assert [(p.name, why) for p, why in found.skipped] == [("config.json", "not a trace (no traceEvents)")]


def test_disagreeing_world_sizes_are_noted(tmp_path: Path) -> None:
    for rank, path in enumerate(rank_files(GLOO4)[:2]):
        doc = synthetic.set_rank(synthetic.read(path), rank, world_size=4 + 4 * rank)
        synthetic.write(doc, tmp_path / path.name)
    found = discover([tmp_path])
    assert found is not None and any("disagree on the world size" in n for n in found.notes)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (["/no/such/dir"], "no such file or directory"),
        (["/no/such/*.json"], "no file matches"),
    ],
)
def test_bad_inputs(inputs: list[str], message: str) -> None:
    with pytest.raises(TraceError, match=message):
        discover(inputs)


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="holds no trace"):
        discover([tmp_path])


def test_file_of_a_missing_rank() -> None:
    found = discover([GLOO4])
    assert found is not None
    with pytest.raises(TraceError, match=r"no rank 9 .*ranks: 0-3"):
        found.file(9)


def test_rank_list() -> None:
    assert rank_list([0, 1, 2, 3, 5, 7, 8, 9]) == "0-3, 5, 7-9"
    assert rank_list([]) == ""


def test_an_unreadable_file_is_skipped_with_its_reason(tmp_path: Path) -> None:
    for path in rank_files(NCCL2):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "empty.json").write_bytes(b"")
    found = discover([tmp_path])
    assert found is not None and len(found.ranks) == 2
    assert [(p.name, why) for p, why in found.skipped] == [("empty.json", "not a trace (no traceEvents)")]
    locked = tmp_path / "locked.json"
    locked.write_text("{}")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):  # root reads anything: nothing to test
            return
        found = discover([tmp_path])
        assert found is not None and any(
            p.name == "locked.json" and "cannot read" in why for p, why in found.skipped
        )
    finally:
        locked.chmod(0o644)


# ---- one trace or a run: the one resolver every command asks ----------------------------------------


def test_one_trace_or_a_run(tmp_path: Path) -> None:
    """``single_trace(resolve(...))``: the one question open, summary, export and capture ask (before,
    three predicates: ``is_file``, ``exists and not is_dir`` and ``not is_dataset``)."""
    one = rank_files(NCCL2)[0]
    assert single_trace(resolve([one])) == one  # a file
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert single_trace(resolve([fifo])) == fifo  # a pipe (not a regular file): nothing is read here
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(one, alone / one.name)
    assert single_trace(resolve([alone])) == alone  # a trace directory with one trace
    runs = tmp_path / "runs"  # several runs of one process: the directory, its newest trace shown
    runs.mkdir()
    for name in ("a.json.gz", "b.json.gz"):
        shutil.copy(rank_files(GLOO4)[0], runs / name)
    assert single_trace(resolve([runs])) == runs
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    (dataset / DATASET_MANIFEST).write_text("{}")
    for run in ([GLOO4], rank_files(GLOO4)[:2], [str(GLOO4 / "rank[02]*.json.gz")], [dataset]):
        target = resolve(run)
        assert single_trace(target) is None and is_run(target), run
    with pytest.raises(TraceError, match="no such file or directory"):
        resolve([tmp_path / "missing.json"])
