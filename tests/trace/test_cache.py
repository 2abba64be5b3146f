"""The trace cache: a second load of an unchanged file comes from disk, lazily, and is identical;
a changed file, a damaged or foreign entry, an interrupted write, a read-only or full disk each
give a correct trace (from the file) and leave nothing behind."""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracetui
from tracetui.errors import TraceError
from tracetui.insight.summary_data import summary_data
from tracetui.trace import cache, model, native, stream
from tracetui.trace import cache_files as files
from tracetui.trace.args import ArgsBlocks, Deferred
from tracetui.trace.layout import ARGS_FILE, schema
from tracetui.trace.model import TABLES

FIXTURES = Path(__file__).parent.parent / "fixtures"
BIG = "mlp_train_tbhandler_stack_memory.pt.trace.json.gz"
SMALL = "linear_eager.json.gz"


def copy_fixture(tmp_path: Path, name: str = BIG, as_name: str | None = None) -> Path:
    target = tmp_path / (as_name or name)
    target.write_bytes((FIXTURES / name).read_bytes())
    return target


def stored(path: Path) -> tracetui.Trace:
    """Load ``path`` and wait for its entry to be written."""
    trace = tracetui.load(path)
    cache.settle()  # waits for the writer
    assert cache.has_entry(path)
    return trace


def entry_files(path: Path) -> dict[str, Path]:
    """The entry's files by stem (a table's name, ``manifest``, a result's digest)."""
    cache.settle()
    entry = cache.entry_for(path)
    assert entry is not None
    return {name.split(".")[0]: entry / name for name in os.listdir(entry)}


def manifest_of(path: Path) -> tuple[Path, dict[str, Any]]:
    """The entry manifest's file and body, to change and give to :func:`write_manifest`."""
    manifest = entry_files(path)["manifest"]
    return manifest, json.loads(manifest.read_bytes())


def write_manifest(manifest: Path, body: dict[str, Any]) -> None:
    """Replace the entry's manifest with ``body`` (a new file, its CRC right)."""
    manifest.unlink()
    files.write_part(manifest.parent, "manifest", files.manifest_bytes(body), "json")


def swap_part(part: Path, data: bytes) -> str:
    """Replace a part of an entry with ``data``, same stem, its CRC right; the new file's name."""
    stem, _, suffix = part.name.split(".")
    part.unlink()
    return files.write_part(part.parent, stem, data, suffix).name


def leftovers(root: Path) -> list[Path]:
    """Writes in progress anywhere in the cache (there must be none once a load is over)."""
    return [p for p in root.rglob(".*") if p.name.startswith((".staging-", ".tmp-"))] if root.exists() else []


def entry_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str] | None]]:
    """Every table the model reads from a cache entry from now on: its name and columns (None: whole)."""
    read: list[tuple[str, list[str] | None]] = []
    original = model.read_table

    def spy(source: Any, name: str, columns: Any = None) -> pl.DataFrame:
        if isinstance(source, cache.EntryTables):
            read.append((name, None if columns is None else list(columns)))
        return original(source, name, columns)

    monkeypatch.setattr(model, "read_table", spy)
    return read


def same_trace(a: tracetui.Trace, b: tracetui.Trace) -> None:
    for name in TABLES:
        assert getattr(a, name).equals(getattr(b, name)), name
    assert a.stored_facts() == b.stored_facts()


def test_second_load_comes_from_the_cache_and_matches(private_cache: Path, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    first = stored(path)
    assert not first.from_cache and not first.launch_shapes.is_empty()  # computed after load, kept
    second = tracetui.load(path)
    assert second.from_cache
    same_trace(first, second)
    for name in TABLES:  # the same types too: the events' text stays dictionary-encoded
        assert getattr(second, name).schema == getattr(first, name).schema == schema(name), name
    assert second.launch_shapes.equals(first.launch_shapes)
    assert second.reader == first.reader == ("native" if native.AVAILABLE else "msgspec")
    assert second.annotations.equals(first.annotations)
    kernel = first.gpu.filter(pl.col("cat") == "kernel")["id"][0]
    assert second.event_args(kernel) == first.event_args(kernel)  # raw args re-read from the file
    assert second.shapes().equals(first.shapes())
    assert not leftovers(private_cache)


def test_a_trace_from_the_cache_reads_each_table_on_first_use(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = copy_fixture(tmp_path)
    summary = summary_data(stored(path))  # the summary is kept with the entry
    read = entry_reads(monkeypatch)
    again = tracetui.load(path)
    assert again.from_cache and read == []
    assert summary_data(again) == json.loads(json.dumps(summary)) and read == []  # no table read
    assert again.tracks.height and read == [("tracks", None)]
    again.tracks  # noqa: B018 (read once)
    assert read == [("tracks", None)]


def test_the_tree_of_a_cached_trace_reads_only_its_columns_and_matches(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracetui.views.timeline import lanes, window_for
    from tracetui.views.tree import TreeModel, TreeOptions

    path = copy_fixture(tmp_path)
    first = stored(path)
    read = entry_reads(monkeypatch)
    again = tracetui.load(path)
    fresh, cached = TreeModel(first), TreeModel(again)
    hot = cached.hottest_path()
    assert hot == fresh.hottest_path() and len(hot) > 3
    assert cached.tops() == fresh.tops()
    for key in [*cached.tops(), *hot]:
        assert cached.node(key) == fresh.node(key)
        assert cached.children(key) == fresh.children(key)
        assert cached.path_of(key) == fresh.path_of(key)
        assert cached.step_of(key) == fresh.step_of(key)
    hidden = TreeOptions(hide_python=True)
    assert TreeModel(again, hidden).hottest_path() == TreeModel(first, hidden).hottest_path()
    window = window_for(again, cached.step_of(hot[0]))
    assert window == window_for(first, fresh.step_of(hot[0]))
    assert lanes(again, window) == lanes(first, window)
    assert again.event_count == first.event_count and again.t0_ns == first.t0_ns
    assert again.devices == first.devices
    # the first frame reads some of the events' columns, never the whole table
    events = [columns for name, columns in read if name == "events"]
    assert events and None not in events
    seen = {column for columns in events for column in columns}
    assert len(seen) < len(first.events.columns)
    read.clear()
    assert again.events.equals(first.events)  # the whole table: only the other columns read
    assert read == [("events", [c for c in first.events.columns if c not in seen])]
    assert again.column("events", "name").equals(first.events["name"])
    assert again.column("events", "name").dtype == pl.Categorical  # as the model holds it


def test_the_first_frame_kept_with_the_entry_is_drawn_without_the_events(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reopen draws the tree's first frame (and the header's devices and event count) from the
    entry's parts, reading none of the events; the tree is the one computed from the file."""
    from tracetui.views.tree import TreeModel

    path = copy_fixture(tmp_path)
    first = stored(path)
    fresh = TreeModel(first)
    path_first = fresh.first_frame()  # kept with the entry
    devices = first.devices
    read = entry_reads(monkeypatch)
    again = tracetui.load(path)
    model = TreeModel(again)
    assert model.first_frame() == path_first
    shown = [*model.tops(), *(kid for key in path_first[:-1] for kid in model.children(key))]
    for key in shown:
        assert model.node(key) == fresh.node(key)
        assert model.has_children(key) == fresh.has_children(key)
        assert model.step_of(key) == fresh.step_of(key)
    assert again.devices == devices and again.event_count == first.event_count
    assert [name for name, _ in read if name == "events"] == []
    # past the first frame, the rest of the tree is read on demand and is the same
    for top in fresh.tops():
        assert list(model.walk(top)) == list(fresh.walk(top))
    assert [name for name, _ in read if name == "events"]


def test_a_damaged_first_frame_part_is_computed_again(private_cache: Path, tmp_path: Path) -> None:
    from tracetui.views import tree_frame
    from tracetui.views.tree import TreeModel

    path = copy_fixture(tmp_path)
    first = stored(path)
    TreeModel(first).first_frame()
    (part,) = files.parts(cache.entry_for(path), files.kind_stem(tree_frame.KIND), "parts")  # type: ignore[arg-type]
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x04
    part.write_bytes(bytes(data))
    again = tracetui.load(path)
    assert again.from_cache
    model = TreeModel(again)
    assert model._first is None and not part.exists()  # not served, removed
    fresh = TreeModel(first)
    assert model.hottest_path() == fresh.hottest_path()
    for top in fresh.tops():
        assert [model.node(k) for k in model.walk(top)] == [fresh.node(k) for k in fresh.walk(top)]
    model.first_frame()  # kept again
    assert TreeModel(tracetui.load(path))._first is not None


def test_an_entry_whose_manifest_misstates_a_table_is_a_miss(private_cache: Path, tmp_path: Path) -> None:
    """The manifest gives each table's rows (a reopen counts events without reading them, the
    manifest being checked by its CRC): rows that do not match the table are found when it is read
    (the entry is removed), and a manifest without them is a miss."""
    path = copy_fixture(tmp_path, SMALL)
    stored(path)
    manifest, body = manifest_of(path)
    body["tables"]["events"]["rows"] += 1
    write_manifest(manifest, body)
    again = tracetui.load(path)
    assert again.from_cache
    with pytest.raises(TraceError, match="cache entry was damaged"):
        again.events  # noqa: B018 (the table read does not match: checked)
    assert not cache.has_entry(path)
    stored(path)
    manifest, body = manifest_of(path)
    del body["tables"]["events"]["rows"]
    write_manifest(manifest, body)
    assert not tracetui.load(path).from_cache  # a manifest without rows: a miss


def test_summary_from_the_cache_renders_like_a_fresh_one(private_cache: Path, tmp_path: Path) -> None:
    from rich.console import Console

    from tracetui.report.summary import summary_renderable

    path = copy_fixture(tmp_path)

    def rendered(trace: tracetui.Trace) -> str:
        console = Console(width=160, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
        console.print(summary_renderable(summary_data(trace)))
        return console.export_text()

    fresh = rendered(stored(path))
    cached = tracetui.load(path)
    assert cached.from_cache and cached.parts.get("summary") is not None
    assert rendered(cached) == fresh
    moved = tmp_path / "moved.json.gz"  # another name, same identity: the name is the new one
    os.link(path, moved)
    data = summary_data(tracetui.load(moved))
    assert data["trace"]["path"] == str(moved) and data["trace"]["name"] == "moved.json.gz"


def changing_during_the_read(monkeypatch: pytest.MonkeyPatch, change: object) -> None:
    """Run ``change(path)`` right after the loader has read the file (before the model is built)."""
    read = stream.read

    def spy(target: Path, *args: Any, **kwargs: Any) -> stream.Streamed:
        streamed = read(target, *args, **kwargs)
        change(target)  # type: ignore[operator]
        return streamed

    spy.__wrapped__ = read  # type: ignore[attr-defined]
    monkeypatch.setattr(stream, "read", spy)


def test_a_file_that_grew_during_the_load_is_not_cached(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, a trace still being written was cached as read, and served after it was complete."""
    path = tmp_path / "growing.json"
    path.write_bytes(gzip.decompress((FIXTURES / SMALL).read_bytes()))

    def grow(target: Path) -> None:
        with target.open("ab") as handle:
            handle.write(b"\n" * 10)

    changing_during_the_read(monkeypatch, grow)
    first = tracetui.load(path)
    cache.settle()
    assert not cache_dirs(private_cache) and not leftovers(private_cache)
    monkeypatch.setattr(stream, "read", stream.read.__wrapped__)  # type: ignore[attr-defined]
    again = tracetui.load(path)
    assert not again.from_cache
    same_trace(first, again)


def test_a_file_rewritten_during_the_load_is_not_cached(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size and modification time written back: the change time still tells."""
    path = tmp_path / "rewritten.json"
    path.write_bytes(gzip.decompress((FIXTURES / SMALL).read_bytes()))

    def rewrite(target: Path) -> None:
        before = target.stat()
        data = target.read_bytes()
        target.write_bytes(data.replace(b'"dur": 1', b'"dur": 2', 1))
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert target.stat().st_size == before.st_size

    changing_during_the_read(monkeypatch, rewrite)
    tracetui.load(path)
    cache.settle()
    assert not cache_dirs(private_cache) and not leftovers(private_cache)


def cache_dirs(root: Path) -> list[Path]:
    """The entries of the cache folder ``root``."""
    return list(files.entries(root / files.STORE))


def padded_json(name: str, size: int) -> bytes:
    data = gzip.decompress((FIXTURES / name).read_bytes())
    assert len(data) <= size
    return data + b" " * (size - len(data))


def test_a_file_renamed_over_is_not_served_the_old_entry(private_cache: Path, tmp_path: Path) -> None:
    """Another trace of the same size and modification time moved onto the path: before, the key
    (path, size, mtime) matched and the old trace's tables were served."""
    size = len(gzip.decompress((FIXTURES / "mlp_eager.json.gz").read_bytes())) + 100
    path = tmp_path / "trace.json"
    path.write_bytes(padded_json(SMALL, size))
    stamp = path.stat().st_mtime_ns
    first = stored(path)
    replacement = tmp_path / "new.json"
    replacement.write_bytes(padded_json("mlp_eager.json.gz", size))
    os.utime(replacement, ns=(stamp, stamp))
    os.replace(replacement, path)
    assert path.stat().st_size == size and path.stat().st_mtime_ns == stamp
    again = tracetui.load(path)
    assert not again.from_cache
    assert "mlp_fwd" in again.annotations["name"].to_list()
    assert not again.events.equals(first.events)


@pytest.mark.parametrize("stem", ["events", "args_data"])
def test_a_flipped_byte_in_a_table_or_file_is_dropped_and_rebuilt(
    private_cache: Path, tmp_path: Path, stem: str
) -> None:
    """Before, one flipped bit in a cached column gave silently wrong GPU busy time. The raw
    args' file is checked like a table: when the entry is opened."""
    path = copy_fixture(tmp_path)
    first = stored(path)
    part = entry_files(path)[stem]
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x10
    part.write_bytes(bytes(data))
    again = tracetui.load(path)
    assert not again.from_cache
    same_trace(first, again)
    cache.settle()
    assert cache.has_entry(path) and tracetui.load(path).from_cache  # rebuilt


def test_a_truncated_or_partial_entry_is_a_miss(private_cache: Path, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    first = stored(path)
    flows = entry_files(path)["flows"]
    flows.write_bytes(flows.read_bytes()[:100])
    assert not tracetui.load(path).from_cache
    cache.settle()
    entry_files(path)["tracks"].unlink()  # a table missing
    again = tracetui.load(path)
    assert not again.from_cache
    same_trace(first, again)
    cache.settle()
    entry_files(path)["args_data"].unlink()  # the raw args' file missing
    assert not tracetui.load(path).from_cache


@pytest.mark.parametrize("field", ["format", "code", "identity", "tables", "facts", "files"])
def test_an_entry_of_another_schema_is_a_miss_and_removed(
    private_cache: Path, tmp_path: Path, field: str
) -> None:
    path = copy_fixture(tmp_path, SMALL)
    first = stored(path)
    manifest, body = manifest_of(path)
    body[field] = {
        "format": 2,
        "code": "0.1.0",
        "identity": "elsewhere",
        "tables": {},
        "facts": {},
        "files": {"args_data": "../args_data.00000000.bin"},
    }[field]
    write_manifest(manifest, body)
    again = tracetui.load(path)
    assert not again.from_cache
    same_trace(first, again)


@pytest.mark.parametrize(
    "listed",
    [
        {"args_data": 5},  # not a name
        {"events": "events.{crc}.bin"},  # a table's name
        {"args_data": "events.{crc}.bin"},  # another part's file
        {"args_data": "args_data\\..{crc}.bin"},  # not a plain name
        {"sub/args_data": "sub/args_data.{crc}.bin"},  # in another folder
        {"args_data": "args_data.{crc}.txt.bin"},
    ],
)
def test_a_manifest_listing_files_wrongly_is_a_miss_and_removed(
    private_cache: Path, tmp_path: Path, listed: dict[str, Any]
) -> None:
    """The manifest is read as data: each listed file must be a part of its own name in the entry."""
    path = copy_fixture(tmp_path, SMALL)
    first = stored(path)
    crc = entry_files(path)[ARGS_FILE].name.split(".")[1]
    manifest, body = manifest_of(path)
    body["files"] = {k: v.format(crc=crc) if isinstance(v, str) else v for k, v in listed.items()}
    write_manifest(manifest, body)
    again = tracetui.load(path)
    assert not again.from_cache
    same_trace(first, again)
    cache.settle()
    assert tracetui.load(path).from_cache  # rebuilt, and good


def test_an_args_file_not_the_size_of_its_blocks_is_one_line_error(
    private_cache: Path, tmp_path: Path
) -> None:
    """The raw args' file is checked (its CRC) when the entry is opened, and its size against its
    blocks when first read: a file that passes its checksum but is not what its blocks say (a
    writer's fault) is an error naming the cache, and the entry is removed."""
    path = copy_fixture(tmp_path)
    first = stored(path)
    part = entry_files(path)[ARGS_FILE]
    manifest, body = manifest_of(path)
    body["files"][ARGS_FILE] = swap_part(part, part.read_bytes()[:-1])  # one byte short, its CRC right
    write_manifest(manifest, body)
    trace = tracetui.load(path)
    assert trace.from_cache
    same_trace(first, trace)  # the tables are good
    for _ in range(2):  # and again, the same error (not the entry's handles, spent by the first)
        with pytest.raises(TraceError, match=r"cache entry was damaged while in use \(args_data\)"):
            trace.event_args(0)
    assert not cache.has_entry(path)  # removed: the next open loads the file
    assert tracetui.load(path).event_args(0) == first.event_args(0)


def test_a_file_of_an_entry_is_not_read_as_a_table(private_cache: Path, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, SMALL)
    stored(path)
    entry = cache.entry_for(path)
    assert entry is not None
    body = files.read_manifest(entry)
    assert body is not None
    tables = cache.EntryTables(path, entry, body[0]["tables"], body[0]["files"])
    try:
        with pytest.raises(KeyError):
            tables.scan("args_data")
        with pytest.raises(KeyError):
            tables.file("events")
    finally:
        tables.close()
    assert cache.has_entry(path)  # asked wrongly, not damaged: kept


def test_a_table_of_the_wrong_kind_is_a_miss_not_a_crash(private_cache: Path, tmp_path: Path) -> None:
    """A well-formed Arrow file of another table listed as a table (checksum and all): before,
    it crashed every later run until deleted by hand."""
    path = copy_fixture(tmp_path)
    first = stored(path)
    parts = entry_files(path)
    manifest, body = manifest_of(path)
    body["tables"]["events"]["file"] = swap_part(parts["events"], parts["flows"].read_bytes())
    write_manifest(manifest, body)
    again = tracetui.load(path)
    assert not again.from_cache
    same_trace(first, again)
    cache.settle()
    assert tracetui.load(path).from_cache  # rebuilt, and good


def test_a_table_damaged_after_the_entry_was_opened_is_one_line_error(
    private_cache: Path, tmp_path: Path
) -> None:
    path = copy_fixture(tmp_path)
    stored(path)
    trace = tracetui.load(path)
    assert trace.from_cache
    events = entry_files(path)["events"]
    with events.open("r+b") as handle:  # in place: the handle the trace holds sees it
        handle.seek(200)
        byte = handle.read(1)
        handle.seek(200)
        handle.write(bytes([byte[0] ^ 1]))
    with pytest.raises(TraceError, match="cache entry was damaged"):
        trace.events  # noqa: B018
    assert not cache.has_entry(path)  # removed: the next open loads the file


def run_python(script: str, private_cache: Path, *args: str, **kwargs: object) -> subprocess.Popen[bytes]:
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(private_cache), TRACETUI_CACHE_MIN_BYTES="0")
    env.pop("TRACETUI_NO_CACHE", None)
    command = [sys.executable, "-c", script, *args]
    return subprocess.Popen(command, env=env, **kwargs)  # type: ignore[call-overload]


def test_a_command_that_exits_right_after_loading_completes_the_entry(
    private_cache: Path, tmp_path: Path
) -> None:
    """Every command leaves through ``os._exit``, which does not wait for threads: before, each
    such run left a staging folder and never wrote the entry."""
    path = copy_fixture(tmp_path)
    script = "import sys, tracetui; from tracetui import cli; tracetui.load(sys.argv[1]); cli._exit(0)"
    assert run_python(script, private_cache, str(path)).wait(timeout=120) == 0
    assert cache.has_entry(path) and tracetui.load(path).from_cache
    assert not leftovers(private_cache)


def test_a_process_that_exits_plainly_completes_the_entry(private_cache: Path, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    script = "import sys, tracetui; tracetui.load(sys.argv[1])"
    assert run_python(script, private_cache, str(path)).wait(timeout=120) == 0
    assert cache.has_entry(path) and not leftovers(private_cache)


def test_an_exit_that_cannot_wait_removes_the_write_in_progress(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = copy_fixture(tmp_path)
    release = threading.Event()
    write = files.write_part

    def slow(folder: Path, stem: str, data: bytes, suffix: str) -> Path:
        written = write(folder, stem, data, suffix)
        release.wait(10)
        return written

    monkeypatch.setattr(files, "write_part", slow)
    tracetui.load(path)
    time.sleep(0.2)
    assert leftovers(private_cache)  # a staging folder, being written
    threading.Timer(1.0, release.set).start()
    cache.settle(timeout=0.1)  # what os._exit's caller does: gives up, stops the write, cleans
    assert not leftovers(private_cache)
    assert not cache._writers


KILLED_WRITER = """
import os, sys, time, tracetui
from tracetui.trace import cache_files
write = cache_files.write_part
def slow(folder, stem, data, suffix):
    path = write(folder, stem, data, suffix)
    os.write(1, b"writing\\n")
    time.sleep(60)
    return path
cache_files.write_part = slow
tracetui.load(sys.argv[1])
"""


def test_kill_9_during_the_write_leaves_a_folder_the_next_run_removes(
    private_cache: Path, tmp_path: Path
) -> None:
    """Before, a ``kill -9`` mid-write left its staging folder for good (293 MB on a big trace)."""
    path = copy_fixture(tmp_path)
    process = run_python(KILLED_WRITER, private_cache, str(path), stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"writing\n"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    process.stdout.close()
    assert leftovers(private_cache) and not cache.has_entry(path)
    first = tracetui.load(path)
    cache.settle()
    assert not leftovers(private_cache)
    again = tracetui.load(path)
    assert again.from_cache
    same_trace(first, again)


def staging_folder(store: Path, pid: int, name: str, marked: bool = True) -> Path:
    """A write in progress of process ``pid`` in ``store`` as the cache names it (``name``: hex), with
    a part in it and (``marked``) the entry's marker."""
    folder = store / f".staging-{pid}-{name}"
    folder.mkdir()
    (folder / "events.00000000.arrow").write_bytes(b"x" * 1000)
    if marked:
        files.write_part(folder, files.MARK, files.marker_bytes(), "mark")
    return folder


def test_stale_writes_are_removed_and_live_ones_kept(private_cache: Path, tmp_path: Path) -> None:
    store = files.store(private_cache, create=True)
    assert store is not None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = staging_folder(store, dead.pid, "abc")
    old = staging_folder(store, os.getpid(), "0d")
    os.utime(old, (time.time() - 2 * files.STALE_S,) * 2)
    live = staging_folder(store, os.getpid(), "1e")
    entry = files.entry_folder(store, "0" * 32, create=True)
    assert entry is not None
    part = entry / f".tmp-{dead.pid}-abc"
    part.write_bytes(b"y")
    # named as the cache names its writes, but not marked as the cache's: not removed
    unmarked = staging_folder(store, dead.pid, "ef", marked=False)
    misnamed = staging_folder(store, dead.pid, "not-hex")
    stored(copy_fixture(tmp_path, SMALL))
    assert not gone.exists() and not old.exists() and not part.exists()
    assert live.exists() and unmarked.exists() and misnamed.exists()
    assert sorted(os.listdir(unmarked)) == ["events.00000000.arrow"]


def read_only_run(root: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with the cache folder on a read-only file system (a read-only bind mount in
    a private mount namespace as root; a folder without write permission otherwise)."""
    env = dict(os.environ, TRACETUI_CACHE_DIR=str(root), TRACETUI_CACHE_MIN_BYTES="0")
    env.pop("TRACETUI_NO_CACHE", None)
    if os.geteuid() != 0:
        for folder in [root, root / files.STORE, *files.entries(root / files.STORE)]:
            folder.chmod(0o555)
        command = [sys.executable, "-c", script, *args]
    else:
        if shutil.which("unshare") is None:
            pytest.skip("root without unshare: cannot make a read-only file system")
        shell = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"'
        command = [
            "unshare",
            "-rm",
            "sh",
            "-c",
            shell,
            str(root),
            sys.executable,
            "-c",
            script,
            *args,
        ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


READ_ONLY = """
import json, sys, tracetui
out = []
for path in sys.argv[1:]:
    trace = tracetui.load(path)
    out.append([trace.from_cache, trace.events.height, trace.annotations["name"].to_list()])
print(json.dumps(out))
"""


def test_a_read_only_cache_serves_its_entries_and_loads_the_rest(private_cache: Path, tmp_path: Path) -> None:
    good = copy_fixture(tmp_path)
    damaged = copy_fixture(tmp_path, SMALL)
    new = copy_fixture(tmp_path, "mlp_eager.json.gz")
    expected = [tracetui.load(p) for p in (good, damaged, new)]
    cache.settle()
    shutil.rmtree(private_cache)
    stored(good), stored(damaged)
    events = entry_files(damaged)["events"]
    events.write_bytes(events.read_bytes()[:-3])
    before = sorted(str(p) for p in private_cache.rglob("*"))
    done = read_only_run(private_cache, READ_ONLY, str(good), str(damaged), str(new))
    if done.returncode and "mount" in done.stderr and "READ" not in done.stdout:
        pytest.skip(f"no read-only mount here: {done.stderr.strip()}")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    got = json.loads(done.stdout)
    assert [g[0] for g in got] == [True, False, False]
    assert [[g[1], g[2]] for g in got] == [
        [t.events.height, t.annotations["name"].to_list()] for t in expected
    ]
    assert sorted(str(p) for p in private_cache.rglob("*")) == before  # nothing written, nothing removed


@pytest.mark.parametrize("failing", ["the second table", ARGS_FILE])
def test_a_full_disk_gives_a_normal_load_and_leaves_nothing(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """ENOSPC is simulated (no small file system to fill here): the second table's write, or the
    raw args' file's, fails halfway, after some bytes reached the disk."""
    path = copy_fixture(tmp_path)
    write_with = files.write_part_with
    calls: list[str] = []

    def full(folder: Path, stem: str, write: Callable[[Path], object], suffix: str) -> Path:
        calls.append(stem)
        if (len(calls) != 2) if failing != ARGS_FILE else (stem != ARGS_FILE):
            return write_with(folder, stem, write, suffix)

        def halfway(scratch: Path) -> None:
            write(scratch)
            os.truncate(scratch, scratch.stat().st_size // 2)
            raise OSError(errno.ENOSPC, "No space left on device")

        return write_with(folder, stem, halfway, suffix)

    monkeypatch.setattr(files, "write_part_with", full)
    first = tracetui.load(path)
    cache.settle()
    assert (len(calls) == 2 if failing != ARGS_FILE else ARGS_FILE in calls) and not cache.has_entry(path)
    assert not leftovers(private_cache) and not cache_dirs(private_cache)
    monkeypatch.setattr(files, "write_part_with", write_with)
    same_trace(first, tracetui.load(path))


def test_the_size_cap_removes_the_least_recently_used(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [copy_fixture(tmp_path, SMALL, as_name=f"t{i}.json.gz") for i in range(3)]
    stored(paths[0])
    one = files.size_of(cache.entry_for(paths[0]))  # type: ignore[arg-type]
    monkeypatch.setenv("TRACETUI_CACHE_MAX", str(int(one * 2.5)))
    os.utime(cache.entry_for(paths[0]), (time.time() - 100,) * 2)  # type: ignore[arg-type]
    stored(paths[1])
    os.utime(cache.entry_for(paths[1]), (time.time() - 50,) * 2)  # type: ignore[arg-type]
    assert tracetui.load(paths[0]).from_cache  # used again: now the most recent
    stored(paths[2])
    assert [cache.has_entry(p) for p in paths] == [True, False, True]
    monkeypatch.setenv("TRACETUI_CACHE_MAX", "1K")  # an entry alone over the cap is not kept
    stored_path = copy_fixture(tmp_path, SMALL, as_name="t3.json.gz")
    tracetui.load(stored_path)
    cache.settle()
    assert not any(cache.has_entry(p) for p in [*paths, stored_path])


@pytest.mark.parametrize(
    ("text", "value"),
    [("", 4 << 30), ("2G", 2 << 30), ("512MiB", 512 << 20), ("2GB", 2 * 10**9), ("1000", 1000)],
)
def test_the_size_cap_reads_units(monkeypatch: pytest.MonkeyPatch, text: str, value: int) -> None:
    monkeypatch.setenv("TRACETUI_CACHE_MAX", text)
    assert cache.max_bytes() == value


def test_a_new_code_version_does_not_read_old_entries(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = copy_fixture(tmp_path, SMALL)
    stored(path)
    assert tracetui.load(path).from_cache
    monkeypatch.setattr(cache, "code_version", lambda: "another build")
    assert not cache.has_entry(path) and not tracetui.load(path).from_cache


def test_the_key_follows_the_version_the_format_and_the_scanner_not_the_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the key hashed every source file: a docstring edit emptied every user's cache."""
    package = tmp_path / "tracetui"
    shutil.copytree(Path(tracetui.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "__file__", str(package / "trace" / "cache.py"))

    def version() -> str:
        cache.code_version.cache_clear()
        return cache.code_version()

    number = cache.FORMAT
    try:
        first = version()
        stats = package / "trace" / "stats.py"
        stats.write_text(stats.read_text() + "\n# a comment, a docstring\n")
        assert version() == first
        monkeypatch.setattr(cache, "__version__", "99.0")
        assert version() != first
        monkeypatch.setattr(cache, "__version__", tracetui.__version__)
        monkeypatch.setattr(cache, "FORMAT", number + 1)
        assert version() != first
        monkeypatch.setattr(cache, "FORMAT", number)
        monkeypatch.setattr(cache, "scanner_abi", lambda: "another build of the scanner")
        assert version() != first
    finally:
        monkeypatch.undo()
        cache.code_version.cache_clear()
    scanner = native._scan
    if scanner is not None:  # the scanner's part: a digest of the built extension's bytes
        assert (
            cache.scanner_abi()
            == hashlib.blake2b(Path(scanner.__file__).read_bytes(), digest_size=8).hexdigest()
        )


def test_a_salt_gives_fresh_keys(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = copy_fixture(tmp_path, SMALL)
    stored(path)
    monkeypatch.setattr(cache, "SALT", "a test's own")
    assert not cache.has_entry(path) and not tracetui.load(path).from_cache


def test_results_are_keyed_and_checked_like_tables(private_cache: Path, tmp_path: Path) -> None:
    """:func:`cache.derived`: what a caller computed from a trace file (a rank's tables), stored only if
    the file did not change meanwhile, and never served damaged."""
    path = copy_fixture(tmp_path, SMALL)
    ident = cache.identity(path)
    parts = {"a.arrow": b"\x00" * 100, "summary.json": b"{}"}
    assert cache.store_derived(path, "rank-tables\x000", ident, parts)
    assert cache.derived(path, "rank-tables\x000") == parts
    assert cache.derived(path, "rank-tables\x001") is None
    (result,) = files.parts(cache.entry_for(path), files.kind_stem("rank-tables\x000"), "parts")  # type: ignore[arg-type]
    data = bytearray(result.read_bytes())
    data[-1] ^= 1
    result.write_bytes(bytes(data))
    assert cache.derived(path, "rank-tables\x000") is None and not result.exists()
    os.utime(path, ns=(1, 1))
    assert not cache.store_derived(path, "summary", ident, parts)  # the file changed since ident


def test_small_traces_and_disabled_cache_are_not_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRACETUI_NO_CACHE", raising=False)
    summary_data(tracetui.load(copy_fixture(tmp_path, SMALL)))  # below MIN_BYTES
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    monkeypatch.setenv("TRACETUI_NO_CACHE", "1")
    assert cache.directory() is None


def test_the_entry_is_written_off_the_loading_thread(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first open does not wait for the cache: another thread writes the entry, and a read of
    that entry waits for it."""
    path = copy_fixture(tmp_path)
    writers: list[str] = []
    write = cache._write

    def spy(*args: Any) -> None:
        writers.append(threading.current_thread().name)
        write(*args)

    monkeypatch.setattr(cache, "_write", spy)
    tracetui.load(path)
    assert cache.has_entry(path)  # waits for the write in progress
    assert writers == ["tracetui-cache-write"]
    assert not cache._writers  # the finished writer took itself off
    assert tracetui.load(path).from_cache


def test_a_cached_trace_never_reads_its_file_and_has_its_raw_args(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model does no I/O, and the entry holds the raw args as the load read them (deflated
    blocks: StoredArgs): a trace from the cache reads its file never, its args tables on first use."""
    path = copy_fixture(tmp_path)
    first = stored(path)
    first.launch_shapes  # noqa: B018 (computed after load: kept with the entry through its parts)
    reads: list[Path] = []
    read = stream.read

    def spy(target: Path, *args: Any, **kwargs: Any) -> stream.Streamed:
        reads.append(Path(target))
        return read(target, *args, **kwargs)

    monkeypatch.setattr(stream, "read", spy)
    second = tracetui.load(path)
    assert second.from_cache and isinstance(second.raw_args, Deferred)
    assert second.launch_shapes.equals(first.launch_shapes) and second.annotations.equals(first.annotations)
    assert second.shapes().equals(first.shapes())
    assert second.args_json().equals(first.args_json())
    kernel = first.gpu.filter(pl.col("cat") == "kernel")["id"][0]
    assert second.event_args(kernel) == first.event_args(kernel) != {}
    assert reads == []


def test_raw_args_of_an_entry_without_them_are_read_from_the_unchanged_file(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry whose trace had no stored args provider: the file is read again on first use, and
    only while it is the file the entry was made from."""
    path = copy_fixture(tmp_path)
    with monkeypatch.context() as patch:
        patch.setattr(ArgsBlocks, "tables", None)  # the provider keeps no tables
        stored(path)
    trace = tracetui.load(path)
    assert trace.from_cache
    kernel = int(trace.gpu.filter(pl.col("cat") == "kernel")["id"][0])
    assert trace.event_args(kernel) != {}
    again = tracetui.load(path)
    os.utime(path, ns=(1, 1))
    with pytest.raises(TraceError, match="changed since it was opened"):
        again.event_args(0)


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
    first = stored(path)
    assert first.repairs and first.event_args(1) == {"k": 2}
    second = tracetui.load(path)
    assert second.from_cache
    assert [second.event_args(i) for i in (0, 1, 2)] == [{"k": 1}, {"k": 2}, {}]
    assert second.args_json().equals(first.args_json())


def test_a_result_kept_before_its_entry_is_written_joins_it(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold ``summary`` keeps its result while the entry is still being written: the entry then
    moves in beside it, file by file, the manifest last."""
    path = copy_fixture(tmp_path)
    release = threading.Event()
    write = cache._write

    def held(*args: Any) -> None:
        release.wait(30)
        write(*args)

    monkeypatch.setattr(cache, "_write", held)
    first = tracetui.load(path)
    summary = summary_data(first)  # kept now, before the entry exists
    release.set()
    cache.settle()
    assert not leftovers(private_cache)
    again = tracetui.load(path)
    assert again.from_cache and summary_data(again) == json.loads(json.dumps(summary))
    same_trace(first, again)


def test_two_processes_writing_one_entry_leave_one_good_entry(private_cache: Path, tmp_path: Path) -> None:
    path = copy_fixture(tmp_path)
    script = "import sys, tracetui; from tracetui import cli; tracetui.load(sys.argv[1]); cli._exit(0)"
    processes = [run_python(script, private_cache, str(path)) for _ in range(2)]
    assert [p.wait(timeout=120) for p in processes] == [0, 0]
    assert len(cache_dirs(private_cache)) == 1 and not leftovers(private_cache)
    manifests = files.parts(cache.entry_for(path), "manifest", "json")  # type: ignore[arg-type]
    assert len(manifests) == 1
    assert tracetui.load(path).from_cache


def test_an_entry_removed_while_another_process_installs_it_is_left_whole(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process removes a damaged entry (a listing, then a file at a time) while another, which
    found no manifest, installs a good one under the same name: a removal in place would go on to
    delete the files the install had just moved in (the same bytes: the same names)."""
    path = copy_fixture(tmp_path)
    stored(path)
    entry = cache.entry_for(path)
    assert entry is not None
    staging = files.temporary(entry.parent, "staging")
    shutil.copytree(entry, staging)  # the other process's write, done
    part = next(entry.glob("events.*"))
    data = bytearray(part.read_bytes())
    data[-1] ^= 1
    part.write_bytes(bytes(data))

    empty = files._empty
    installed: list[Path] = []

    def emptying(folder: Path) -> None:
        """The removal's emptying, a file at a time; the other process installs meanwhile (its
        _write's steps: no manifest under the entry's name now)."""
        if not installed:
            installed.append(folder)
            try:
                cache._install(staging, entry)
            finally:
                empty(staging)
        empty(folder)

    with monkeypatch.context() as patch:
        patch.setattr(files, "_empty", emptying)
        assert cache.lookup(path, (), lambda tables, ident: None) is None  # damaged: removed
    assert installed and installed[0] != entry  # the removal empties the folder it renamed aside
    assert tracetui.load(path).from_cache  # the entry the other process installed, whole
    assert len(cache_dirs(private_cache)) == 1 and not leftovers(private_cache)


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
