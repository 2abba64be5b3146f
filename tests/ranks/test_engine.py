"""Ranks loaded in parallel processes, and the trace cache's results that make a warm run light."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.ranks.conftest import GLOO4
from tracetui.ranks import engine, workers
from tracetui.ranks.discover import discover, resolve
from tracetui.ranks.run import report_for
from tracetui.ranks.tables import TABLES
from tracetui.trace import cache
from tracetui.trace import cache_files as files


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("TRACETUI_NO_CACHE", raising=False)
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _entries():  # type: ignore[no-untyped-def]
    found = discover([GLOO4])
    assert found is not None
    return found.ranks


def _assert_same(a: list[engine.RankResult], b: list[engine.RankResult]) -> None:
    assert [r.rank for r in a] == [r.rank for r in b]
    for x, y in zip(a, b, strict=True):
        assert x.tables is not None and y.tables is not None
        for name in TABLES:
            assert_frame_equal(getattr(x.tables, name), getattr(y.tables, name))
        assert x.summary == y.summary


def test_processes_give_the_same_tables_as_one_process() -> None:
    entries = _entries()
    here = engine.load_ranks(entries, summary_rank=1, workers=1)
    seen: list[tuple[int, int]] = []
    two = engine.load_ranks(entries, summary_rank=1, workers=2, progress=lambda d, t: seen.append((d, t)))
    _assert_same(here, two)
    assert here[1].summary is not None and here[0].summary is None
    assert seen[0] == (0, 4) and seen[-1] == (4, 4)


def test_a_warm_run_loads_no_trace(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entries = _entries()
    cold = engine.load_ranks(entries, summary_rank=0)
    assert not any(r.cached for r in cold)

    def no_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("a warm run loaded a trace")

    monkeypatch.setattr(engine, "load", no_load)
    warm = engine.load_ranks(entries, summary_rank=0)
    assert all(r.cached for r in warm)
    _assert_same(cold, warm)
    # another rank's summary is not cached yet: only that rank is loaded again
    monkeypatch.undo()
    monkeypatch.delenv("TRACETUI_NO_CACHE", raising=False)
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(cache_dir))
    again = engine.load_ranks(entries, summary_rank=3)
    assert [r.cached for r in again] == [True, True, True, False]


def test_a_damaged_entry_is_dropped_and_rebuilt(cache_dir: Path) -> None:
    entries = _entries()
    cold = engine.load_ranks(entries)
    entry = cache.entry_for(entries[0].path)
    assert entry is not None
    (part,) = files.parts(entry, files.kind_stem(workers.tables_kind(entries[0])), "parts")
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x40
    part.write_bytes(bytes(data))
    rebuilt = engine.load_ranks(entries)
    assert sum(not r.cached for r in rebuilt) == 1
    _assert_same(cold, rebuilt)
    assert not part.exists() or part.read_bytes() != bytes(data)  # removed, or written again whole


def test_a_file_changed_during_the_computation_is_not_cached(cache_dir: Path, tmp_path: Path) -> None:
    trace = Path(shutil.copy(next(GLOO4.glob("rank0*")), tmp_path / "rank0.json.gz"))
    before = cache.identity(trace)
    os.utime(trace, ns=(10**18, 10**18))
    assert not cache.store_derived(trace, "test", before, {"a": b"1"})
    assert cache.derived(trace, "test") is None
    assert cache.store_derived(trace, "test", cache.identity(trace), {"a": b"1"})
    assert cache.derived(trace, "test") == {"a": b"1"}
    assert cache.derived(trace, "other kind") is None


def test_stale_staging_folders_are_removed(cache_dir: Path, tmp_path: Path) -> None:
    trace = Path(shutil.copy(next(GLOO4.glob("rank0*")), tmp_path / "rank0.json.gz"))
    store = files.store(cache_dir, create=True)
    assert store is not None
    leftover = files.new_folder(store).rename(store / ".staging-999999999-0dead")  # no such process
    os.utime(leftover, (1, 1))
    cache.store_derived(trace, "test", cache.identity(trace), {"a": b"1"})
    assert not leftover.exists()


def test_no_cache_when_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_NO_CACHE", "1")
    trace = Path(shutil.copy(next(GLOO4.glob("rank0*")), tmp_path / "rank0.json.gz"))
    assert not cache.store_derived(trace, "test", cache.identity(trace), {"a": b"1"})


def test_a_rank_that_cannot_be_loaded_is_reported_and_the_rest_analysed(gloo_copy: Path) -> None:
    bad = next(gloo_copy.glob("rank3*"))
    bad.write_text('{"distributedInfo": {"rank": 3, "world_size": 4}, "traceEvents": [ {"ph": "X", "ts": x!!')
    report = report_for(resolve([gloo_copy]), summary=False)
    assert [f["rank"] for f in report.facts["failed"]] == [3]
    assert "invalid JSON" in report.facts["failed"][0]["error"]
    assert report.analysis.ranks["rank"].to_list() == [0, 1, 2]
    assert report.analysis.verdict.startswith("rank 2 arrives last at 6 of 6")


def test_the_chosen_rank_must_load(gloo_copy: Path) -> None:
    from tracetui.errors import TraceError

    next(gloo_copy.glob("rank1*")).write_text('{"distributedInfo": {"rank": 1}, "traceEvents": [ !')
    with pytest.raises(TraceError, match=r"rank 1: .*invalid JSON"):
        report_for(resolve([gloo_copy]), rank=1)


def test_tables_kind_depends_on_what_discovery_said() -> None:
    entry = _entries()[0]
    from dataclasses import replace

    assert workers.tables_kind(entry) != workers.tables_kind(replace(entry, rank=7))
    assert workers.tables_kind(entry) != workers.tables_kind(replace(entry, source="order"))


def test_rank_tables_round_trip_through_ipc() -> None:
    result = engine.load_ranks(_entries()[:1])[0]
    assert result.tables is not None
    parts = engine.tables_parts(result.tables)
    assert sorted(parts) == sorted(f"{n}.arrow" for n in TABLES)
    import io

    assert_frame_equal(pl.read_ipc(io.BytesIO(parts["steps.arrow"])), result.tables.steps)


def test_small_ranks_are_batched_and_every_process_gets_several_batches() -> None:
    jobs = [engine.Job(entry) for entry in _entries()] * 40  # 160 ranks of ~40 KB
    tasks = engine.batches(jobs, count=2)
    assert [job for task in tasks for job in task] == jobs  # each once, in order
    assert max(len(t) for t in tasks) == engine.BATCH_JOBS and len(tasks) >= 2 * engine.SHARES
    assert [len(t) for t in engine.batches(jobs[:6], count=2)] == [1] * 6  # few ranks: one a task


def test_parallel_by_default_whatever_the_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACETUI_WORKERS", raising=False)
    entries = _entries()  # 4 ranks of 40 KB
    assert workers.count_for(entries, None) == min(4, workers.wanted())
    monkeypatch.setenv("TRACETUI_WORKERS", "3")
    assert workers.count_for(entries, None) == 3 and workers.count_for(entries, 1) == 1
    assert workers.count_for(entries[:1], None) == 1


@pytest.mark.slow
@pytest.mark.parametrize("command", ["summary", "export"])
def test_workers_1_and_n_give_identical_output(command: str) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "TRACETUI_NO_CACHE": "1"}
    args = ["--json", "--rank", "2"] if command == "summary" else ["--table", "arrivals", "--format", "json"]
    outputs = []
    for count in ("1", "3"):
        cmd = [sys.executable, "-m", "tracetui", command, str(GLOO4), *args, "--workers", count]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and len(outputs[0]) > 1000
