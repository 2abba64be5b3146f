"""The trace cache: a second load of an unchanged file comes from disk and is identical."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest

import tracetui
from tracetui.trace import cache, loader, native
from tracetui.trace.args import Deferred
from tracetui.trace.source import Source

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("TRACETUI_NO_CACHE", raising=False)
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    return tmp_path / "cache"


def copy_fixture(tmp_path: Path, name: str = "mlp_train_tbhandler_stack_memory.pt.trace.json.gz") -> Path:
    target = tmp_path / name
    target.write_bytes((FIXTURES / name).read_bytes())
    return target


def test_second_load_comes_from_the_cache_and_matches(private_cache: Path, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    first = tracetui.load(path)
    assert not first.from_cache and cache.has_entry(path)
    assert not first.launch_shapes.is_empty()  # computed after load, then added to the entry
    second = tracetui.load(path)
    assert second.from_cache and second._launch_shapes is not None
    for name in ("events", "instants", "flows", "meta_events", "tracks", "anomalies", "launch_shapes"):
        assert getattr(first, name).equals(getattr(second, name)), name
    assert second.metadata == first.metadata and second.format == first.format
    assert second.reader == first.reader == ("native" if native.AVAILABLE else "msgspec")
    assert second.annotations.equals(first.annotations)
    kernel = first.gpu.filter(pl.col("cat") == "kernel")["id"][0]
    assert second.event_args(kernel) == first.event_args(kernel)  # raw args re-read from the file
    assert second.shapes().equals(first.shapes())


def test_a_changed_file_is_not_served_from_the_cache(private_cache: Path, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "linear_eager.json.gz")
    tracetui.load(path)
    path.write_bytes((FIXTURES / "mlp_eager.json.gz").read_bytes())
    os.utime(path, ns=(1, 1))
    reloaded = tracetui.load(path)
    assert not reloaded.from_cache and "mlp_fwd" in reloaded.annotations["name"].to_list()


def test_small_traces_and_disabled_cache_are_not_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRACETUI_NO_CACHE", raising=False)
    tracetui.load(copy_fixture(tmp_path, "linear_eager.json.gz"))  # below MIN_BYTES
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    monkeypatch.setenv("TRACETUI_NO_CACHE", "1")
    assert cache.directory() is None


def test_a_damaged_entry_is_a_miss(private_cache: Path, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "linear_eager.json.gz")
    tracetui.load(path)
    entry = cache.entry_for(path)
    assert entry is not None
    (entry / "events.arrow").write_bytes(b"not arrow")
    assert not tracetui.load(path).from_cache


def test_the_entry_is_written_off_the_loading_thread(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first open does not wait for the cache: another thread writes the entry, and a read of
    that entry waits for it."""
    path = copy_fixture(tmp_path)
    writers: list[str] = []
    write = cache._write

    def spy(trace: tracetui.Trace, entry: Path) -> None:
        writers.append(threading.current_thread().name)
        write(trace, entry)

    monkeypatch.setattr(cache, "_write", spy)
    tracetui.load(path)
    assert cache.has_entry(path)  # waits for the write in progress
    assert writers == ["tracetui-cache-write"]
    assert not cache._writers  # the finished writer took itself off
    assert tracetui.load(path).from_cache


def test_a_process_that_exits_right_after_loading_still_completes_the_entry(
    private_cache: Path, tmp_path: Path
) -> None:
    path = copy_fixture(tmp_path)
    script = (
        "import os, sys, tracetui; from tracetui.trace import cache; cache.MIN_BYTES = 0; "
        "tracetui.load(sys.argv[1]); os.write(1, b'loaded')"
    )
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(private_cache))
    env.pop("TRACETUI_NO_CACHE", None)
    done = subprocess.run([sys.executable, "-c", script, str(path)], env=env, capture_output=True, check=True)
    assert done.stdout == b"loaded"
    assert cache.has_entry(path) and tracetui.load(path).from_cache


def test_a_cached_trace_reads_its_file_once_and_only_for_raw_args(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model does no I/O: the loader hands a trace from the cache a provider that reads the
    file again on the first use of raw args (and only then, and once)."""
    path = copy_fixture(tmp_path)
    first = tracetui.load(path)
    first.launch_shapes  # noqa: B018 (computed after load: added to the entry through the loader's sink)
    reads: list[Path] = []
    read = loader.read_source

    def spy(target: str | Path) -> Source:
        reads.append(Path(target))
        return read(target)

    monkeypatch.setattr(loader, "read_source", spy)
    second = tracetui.load(path)
    assert second.from_cache and isinstance(second.raw_args, Deferred)
    assert second.launch_shapes.equals(first.launch_shapes) and second.annotations.equals(first.annotations)
    assert reads == []
    assert second.shapes().equals(first.shapes())
    assert second.args_json().equals(first.args_json())
    kernel = first.gpu.filter(pl.col("cat") == "kernel")["id"][0]
    assert second.event_args(kernel) == first.event_args(kernel) != {}
    assert reads == [path]


def test_a_cached_trace_of_a_repaired_file_reads_the_args_the_load_read(
    private_cache: Path, tmp_path: Path
) -> None:
    """Event ids are positions among the events the load kept: a trace from the cache reads its
    raw args as the load did (here: an item that is not an event, dropped by the coercion)."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 5, "args": {"k": 1}},
        7,
        {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": {"k": 2}},
    ]
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": events}))
    first = tracetui.load(path)
    assert first.repairs and first.event_args(1) == {"k": 2}
    second = tracetui.load(path)
    assert second.from_cache
    assert [second.event_args(i) for i in (0, 1, 2)] == [{"k": 1}, {"k": 2}, {}]
    assert second.args_json().equals(first.args_json())


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG folders are Linux's convention")
def test_the_cache_folder_is_named_by_the_environment_or_the_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRACETUI_NO_CACHE", raising=False)
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.directory() == tmp_path / "mine"
    monkeypatch.delenv("TRACETUI_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.directory() == tmp_path / "xdg" / "tracetui"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.directory() == tmp_path / "home" / ".cache" / "tracetui"
