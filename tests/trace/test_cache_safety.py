"""The trace cache removes only what it wrote, and serves no entry it cannot trust (issue 35, items 2
and 14), and its failures are visible (issue 36): the attacks as they were made, and the property
that the cache folder keeps whatever it held before."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracetui
from tests.hypothesis_budget import examples
from tracetui.insight.summary_data import summary_data
from tracetui.trace import cache
from tracetui.trace import cache_files as files

FIXTURES = Path(__file__).parent.parent / "fixtures"
SMALL = "linear_eager.json.gz"
OTHER = "mlp_eager.json.gz"
STRANGER = 4242  # another user's id (the tests run as root, or chown is skipped)


def copy(name: str, to: Path) -> Path:
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / name, to)
    return to


def stored(path: Path) -> tracetui.Trace:
    trace = tracetui.load(path)
    summary_data(trace)  # a result kept with the entry too
    cache.settle()
    assert cache.has_entry(path)
    return trace


def snapshot(root: Path) -> dict[str, Any]:
    """Everything under ``root``: each path's kind and, for a file, its inode, size, modification
    time and first MiB (links not followed; a 5 GB file is not read whole)."""
    found: dict[str, Any] = {}
    for folder, names, file_names in os.walk(root):
        for name in names:
            found[os.path.relpath(os.path.join(folder, name), root)] = "folder"
        for name in file_names:
            path = Path(folder) / name
            status = path.lstat()
            with path.open("rb") as handle:
                head = handle.read(1 << 20)
            found[os.path.relpath(path, root)] = (status.st_ino, status.st_size, status.st_mtime_ns, head)
    return found


def cache_wrote(relative: str) -> bool:
    """Whether a path (relative to the cache folder) is one of the store's: its tag, its entries."""
    return relative == files.STORE or relative.startswith(files.STORE + os.sep)


def user_folders(root: Path) -> None:
    """A cache folder that is a user's folder: a 5 GB trace (sparse: no disk used), the tools'
    caches of ``~/.cache``, files and folders named as the cache names its own."""
    big = root / "rank_traces"
    big.mkdir(parents=True)
    with (big / "rank0.json").open("wb") as handle:
        handle.truncate(5 << 30)
    for tool in ("huggingface", "pip"):
        (root / tool / "hub").mkdir(parents=True)
        (root / tool / "hub" / "model.bin").write_bytes(os.urandom(4096))
    (root / ("ab" * 16)).mkdir()  # a key's name
    (root / ("ab" * 16) / "manifest.00000000.json").write_text("{}")
    (root / ".staging-999999999-abc").mkdir()  # a dead process's leftover, by its name
    (root / ".staging-999999999-abc" / "notes.txt").write_text("mine")
    (root / "notes.txt").write_text("mine")


def test_a_cache_folder_holding_user_folders_past_the_cap_keeps_them_all(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack as made: with the default 4G cap, the folder of a 5 GB trace was deleted; with
    ``1M``, ``huggingface/`` and ``pip/`` went."""
    user_folders(private_cache)
    traces = [copy(SMALL, private_cache / f"trace{i}.json.gz") for i in range(3)]  # traces in it too
    before = snapshot(private_cache)
    for cap in ("", "1M", "1K"):  # 1K: every entry over the cap, each removed as soon as written
        monkeypatch.setenv("TRACETUI_CACHE_MAX", cap)
        for path in traces:
            summary_data(tracetui.load(path))
            cache.settle()
    after = snapshot(private_cache)
    assert {name: after.get(name) for name in before} == before  # before: the folders were removed
    assert all(cache_wrote(name) for name in set(after) - set(before))


def test_a_folder_of_the_stores_name_that_is_not_the_caches_is_left_alone(
    private_cache: Path, tmp_path: Path
) -> None:
    (private_cache / files.STORE / ("cd" * 16)).mkdir(parents=True)
    (private_cache / files.STORE / "mine.txt").write_text("mine")
    before = snapshot(private_cache)
    path = copy(SMALL, tmp_path / "t.json.gz")
    first = tracetui.load(path)
    cache.settle()
    assert not cache.has_entry(path) and snapshot(private_cache) == before
    assert tracetui.load(path).events.equals(first.events)


def test_an_entry_holding_a_file_of_someone_elses_keeps_it(private_cache: Path, tmp_path: Path) -> None:
    path = copy(SMALL, tmp_path / "t.json.gz")
    stored(path)
    entry = cache.entry_for(path)
    assert entry is not None
    (entry / "notes.txt").write_text("mine")
    files.remove_entry(entry)
    assert (entry / "notes.txt").read_text() == "mine" and not cache.has_entry(path)
    assert os.listdir(entry) == ["notes.txt"]


# ---- planted entries ------------------------------------------------------------------------------
def plant(victim: Path, source: Path, forge: tuple[str, ...] = ()) -> Path:
    """The attack as made: the entry of trace ``source`` copied under ``victim``'s key, its manifest
    saying ``victim``'s identity (its checksum right). ``forge``: also the victim's digest fields
    (``quick``: its head and tail, as anyone who can read it computes them; ``crc32``: all of it)."""
    made, target = cache.entry_for(source), cache.entry_for(victim)
    assert made is not None and target is not None
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(made, target)
    (manifest,) = files.parts(target, "manifest", "json")
    body = json.loads(manifest.read_bytes())
    body["identity"] = cache.identity(victim)
    if "source" in body:  # the digest's record: what a planter who read the victim's file can write
        digest = files.Digest()
        digest.update(victim.read_bytes())
        body["source"] |= {name: digest.record()[name] for name in forge}
        body["source"]["bytes"] = digest.size
    manifest.unlink()
    files.write_part(target, "manifest", files.manifest_bytes(body), "json")
    return target


def as_stranger(folder: Path) -> None:
    """``folder`` and its files made another user's (the attacker's)."""
    if os.geteuid() != 0:
        pytest.skip("making files another user's needs root")
    for path in [folder, *folder.iterdir()]:
        os.chown(path, STRANGER, STRANGER)


@pytest.mark.parametrize(
    ("who", "forge"),
    [
        ("me", ()),  # this user's own folder: the head and tail tell the files apart
        ("stranger", ()),
        ("stranger", ("quick",)),  # another user, the victim's head and tail forged: every byte is read
        ("writable", ("quick",)),  # this user's files in a folder others may write
    ],
)
def test_a_planted_entry_is_rejected_and_the_trace_loaded_from_its_file(
    private_cache: Path, tmp_path: Path, who: str, forge: tuple[str, ...]
) -> None:
    """The attack as made: in a shared cache folder an entry made from another trace, put under a
    trace's key with its identity, made that trace report the other's data."""
    victim, other = copy(SMALL, tmp_path / "victim.json.gz"), copy(OTHER, tmp_path / "other.json.gz")
    truth = tracetui.load(victim)
    stored(other)
    planted = plant(victim, other, forge)
    if who == "stranger":
        as_stranger(planted)
    elif who == "writable":
        planted.chmod(0o777)
    trace = tracetui.load(victim)
    assert not trace.from_cache  # before: from the cache, with the other trace's tables
    assert trace.events.equals(truth.events) and summary_data(trace) == summary_data(truth)
    if who == "stranger":  # another user's entry: never removed
        assert planted.exists() and planted.stat().st_uid == STRANGER


def test_another_users_entry_made_from_the_same_bytes_is_used(private_cache: Path, tmp_path: Path) -> None:
    """A shared cache still shares: an entry of another user's is used once every byte of the file
    matches its digest; its results too, and this user never writes into it or removes it."""
    path = copy(OTHER, tmp_path / "t.json.gz")
    first = stored(path)
    entry = cache.entry_for(path)
    assert entry is not None
    as_stranger(entry)
    checked = list(cache._whole_checked)
    again = tracetui.load(path)
    assert again.from_cache and again.events.equals(first.events)
    assert summary_data(again) == json.loads(json.dumps(summary_data(first)))
    assert len(cache._whole_checked) > len(checked)  # read whole: not trusted on its identity alone
    assert entry.stat().st_uid == STRANGER and all(p.stat().st_uid == STRANGER for p in entry.iterdir())


def test_a_result_planted_in_another_users_entry_is_rejected(private_cache: Path, tmp_path: Path) -> None:
    """A summary part of another trace's, named for this trace's summary: not used."""
    victim, other = copy(SMALL, tmp_path / "victim.json.gz"), copy(OTHER, tmp_path / "other.json.gz")
    truth = summary_data(stored(victim))
    stored(other)
    source, target = cache.entry_for(other), cache.entry_for(victim)
    assert source is not None and target is not None
    stem = files.kind_stem("summary")
    for part in files.parts(target, stem, "parts"):
        part.unlink()
    (part,) = files.parts(source, stem, "parts")
    found = files.unpack(part.read_bytes())
    found[".identity"] = cache.identity(victim).encode()  # type: ignore[union-attr]
    files.write_part(target, stem, files.pack(found), "parts")
    as_stranger(target)
    trace = tracetui.load(victim)
    assert trace.from_cache  # the tables are good (every byte matched), the planted summary is not used
    assert summary_data(trace) == json.loads(json.dumps(truth))


@pytest.mark.parametrize("planted", ["fifo", "link"])
@pytest.mark.parametrize("stem", ["manifest", "events"])
def test_a_planted_fifo_or_link_is_neither_waited_on_nor_followed(
    private_cache: Path, tmp_path: Path, planted: str, stem: str
) -> None:
    """A FIFO in place of an entry's file made every open wait for a writer, for ever; a link read
    whatever it points at."""
    path = copy(SMALL, tmp_path / "t.json.gz")
    truth = stored(path)
    entry = cache.entry_for(path)
    assert entry is not None
    (part,) = files.parts(entry, stem, "json" if stem == "manifest" else "arrow")
    moved = part.rename(tmp_path / part.name)
    if planted == "fifo":
        os.mkfifo(part)
    else:
        part.symlink_to(moved)  # the very bytes, through a link
    loaded: list[tracetui.Trace] = []
    worker = threading.Thread(target=lambda: loaded.append(tracetui.load(path)), daemon=True)
    worker.start()
    worker.join(60)
    assert loaded, "the load waited on the planted FIFO"
    assert not loaded[0].from_cache and loaded[0].events.equals(truth.events)


# ---- failures: counted, told once ---------------------------------------------------------------------
def run_child(script: str, root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = dict(os.environ, TRACETUI_CACHE_DIR=str(root), TRACETUI_CACHE_MIN_BYTES="0")
    environ.pop("TRACETUI_NO_CACHE", None)
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", script, *args], env=environ, capture_output=True, text=True, timeout=120
    )


BROKEN = """
import json, sys, tracetui
from tracetui.trace import cache
def broken(*args, **kwargs):
    raise RuntimeError("a bug in the cache")
setattr(getattr(cache, sys.argv[1].split(".")[0]), sys.argv[1].split(".")[1], broken) if "." in sys.argv[1] \\
    else setattr(cache, sys.argv[1], broken)
for path in sys.argv[2:]:
    trace = tracetui.load(path)
    cache.settle()
    assert trace.events.height
print(json.dumps(cache.counts()))
"""


@pytest.mark.parametrize(
    ("broken", "doing"), [("EntryTables", "reading an entry"), ("_checked_manifest", "reading an entry")]
)
def test_a_bug_reading_the_cache_is_counted_and_told_once(
    private_cache: Path, tmp_path: Path, broken: str, doing: str
) -> None:
    """Before, every exception was swallowed: a bug in the cache silently made every open a cold load."""
    paths = [copy(SMALL, tmp_path / f"t{i}.json.gz") for i in range(2)]
    for path in paths:
        stored(path)
    done = run_child(BROKEN, private_cache, broken, *map(str, paths))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["failures"] == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"tracetui: the trace cache failed {doing} (RuntimeError: a bug in the cache)")
    assert "TRACETUI_DEBUG=1" in line
    debug = run_child(BROKEN, private_cache, broken, *map(str, paths), TRACETUI_DEBUG="1")
    assert debug.returncode == 0 and debug.stderr.count("Traceback (most recent call last)") == 2


def test_a_bug_writing_the_cache_is_counted_and_the_load_goes_on(private_cache: Path, tmp_path: Path) -> None:
    path = copy(SMALL, tmp_path / "t.json.gz")
    script = BROKEN.replace(
        "import json, sys, tracetui", "import json, sys, tracetui\nimport tracetui.trace.model"
    )
    done = run_child(
        script.replace("setattr(getattr(cache", "setattr(getattr(tracetui.trace.model"),
        private_cache,
        "Trace.stored_facts",
        str(path),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["failures"] == 1
    assert "the trace cache failed writing an entry (RuntimeError" in done.stderr


def test_expected_conditions_are_not_failures(private_cache: Path, tmp_path: Path) -> None:
    """No entry, a damaged one, a full or read-only cache: misses, rejections, never failures."""
    path = copy(SMALL, tmp_path / "t.json.gz")
    start = cache.counts()
    stored(path)
    (events,) = files.parts(cache.entry_for(path), "events", "arrow")  # type: ignore[arg-type]
    events.write_bytes(events.read_bytes()[:-1])
    assert not tracetui.load(path).from_cache
    cache.settle()
    assert tracetui.load(path).from_cache
    end = cache.counts()
    assert end["failures"] == start["failures"]
    assert [end[k] - start[k] for k in ("hits", "misses", "rejected")] == [1, 1, 1]


def test_summary_json_says_what_the_cache_did(private_cache: Path, tmp_path: Path) -> None:
    path = copy(SMALL, tmp_path / "t.json.gz")
    script = "import sys; from tracetui.cli import main; sys.argv = ['tracetui', *sys.argv[1:]]; main()"
    runs = [run_child(script, private_cache, "summary", "--json", str(path)) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    cold, warm = (json.loads(run.stdout)["cache"] for run in runs)
    assert cold == {"enabled": True, "hits": 0, "misses": 1, "rejected": 0, "failures": 0}
    assert warm == {"enabled": True, "hits": 1, "misses": 0, "rejected": 0, "failures": 0}
    off = run_child(script, private_cache, "summary", "--json", str(path), TRACETUI_NO_CACHE="1")
    assert json.loads(off.stdout)["cache"]["enabled"] is False


# ---- the property ---------------------------------------------------------------------------------
NAMES = st.sampled_from(
    [
        "a",
        "notes.txt",
        "ab" * 16,  # a key's name
        "0" * 32,
        ".staging-999999999-abc",  # a dead process's leftover, by its name
        f".staging-{os.getpid()}-0d",
        ".tmp-999999999-abc",
        ".hidden",
        "CACHEDIR.TAG",
        "manifest.00000000.json",
        "entry.00000000.mark",
        "events.00000000.arrow",
        "trace.json.gz",
    ]
)
TREES = st.recursive(
    st.binary(max_size=64),
    lambda children: st.dictionaries(NAMES, children, max_size=4),
    max_leaves=12,
)


def build(folder: Path, tree: dict[str, Any]) -> None:
    for name, child in tree.items():
        if isinstance(child, dict):
            (folder / name).mkdir()
            build(folder / name, child)
        else:
            (folder / name).write_bytes(child)


OPERATIONS = st.lists(
    st.sampled_from(["load 0", "load 1", "load 2", "cap 1K", "cap 20K", "cap 4G", "damage"]), max_size=6
)


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    tree=st.dictionaries(NAMES | st.just(files.STORE), TREES, max_size=5),
    in_store=st.none() | st.dictionaries(NAMES.filter(lambda name: name != files.TAG), TREES, max_size=4),
    operations=OPERATIONS,
)
def test_the_cache_folder_keeps_whatever_it_held(
    tmp_path_factory: pytest.TempPathFactory,
    tree: dict[str, Any],
    in_store: dict[str, Any] | None,
    operations: list[str],
) -> None:
    """Whatever folders and files are in the cache folder before (its traces among them), the same
    are there after any loads, results and evictions, and the cache wrote only in its store (nothing
    where a file or folder of the store's name was there before)."""
    root = tmp_path_factory.mktemp("cache")
    build(root, tree)
    if in_store is not None and files.STORE not in tree:  # files put in a store the cache made before
        store = files.store(root, create=True)
        assert store is not None
        build(store, in_store)
    traces = [copy(name, root / f"t{i}.json.gz") for i, name in enumerate((SMALL, OTHER, SMALL))]
    before = snapshot(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TRACETUI_NO_CACHE", raising=False)
        patch.delenv("TRACETUI_CACHE_MAX", raising=False)
        patch.setenv("TRACETUI_CACHE_DIR", str(root))
        patch.setenv("TRACETUI_CACHE_MIN_BYTES", "0")
        for operation in operations:
            what, _, value = operation.partition(" ")
            if what == "load":
                summary_data(tracetui.load(traces[int(value)]))
                cache.settle()
            elif what == "cap":
                patch.setenv("TRACETUI_CACHE_MAX", value)
            else:
                damage_one(root)
        after = snapshot(root)
    gone = {name for name in before if name not in after}
    # the one thing of the cache's naming it removes without its marker: an empty folder of its own
    # store named as its write in progress (one killed before it wrote the marker)
    assert all(before[name] == "folder" and files.stale(root / name, 0) for name in gone)
    assert all(
        Path(name).parent == Path(files.STORE) and Path(name).name.startswith(".staging-") for name in gone
    )
    assert not any(other.startswith(name + os.sep) for name in gone for other in before)
    assert {name: after[name] for name in before if name not in gone} == {
        name: value for name, value in before.items() if name not in gone
    }  # nothing else removed, renamed or changed
    new = set(after) - set(before)
    assert all(cache_wrote(name) for name in new)
    if files.STORE in tree:  # a file or a folder of someone else's has the store's name: not used
        assert not new
    shutil.rmtree(root)


def damage_one(root: Path) -> None:
    """Flip a byte of one file of one of the cache's own entries (the next read removes it)."""
    for entry in files.entries(root / files.STORE):
        for part in files.parts(entry, "events", "arrow"):
            data = bytearray(part.read_bytes())
            data[len(data) // 2] ^= 1
            part.write_bytes(bytes(data))
            return


def test_settle_stops_the_writes_it_waited_for_and_no_other(tmp_path: Path) -> None:
    """A write still running past settle's timeout is stopped and its staging folder removed; a
    write begun after settle looked (not among those it waited for) keeps its folder; with every
    write done in time, settle removes nothing."""
    import threading

    from tracetui.trace import cache
    from tracetui.trace import cache_files as files

    store = files.store(tmp_path, create=True)
    assert store is not None
    release = threading.Event()
    slow = threading.Thread(target=cache._abort.wait, args=(10.0,))  # stops when told
    later = threading.Thread(target=release.wait, args=(10.0,))
    slow.start()
    ours, theirs = files.new_folder(store), files.new_folder(store)
    try:
        with cache._writers_lock:
            cache._writers[store / "slow"] = slow
            cache._staging[ours] = slow
        real_set = cache._abort.set

        def begun_meanwhile() -> None:  # a write that starts as settle stops the late ones
            later.start()
            with cache._writers_lock:
                cache._staging[theirs] = later
            real_set()

        cache._abort.set = begun_meanwhile  # type: ignore[method-assign]
        try:
            cache.settle(timeout=0.05)
        finally:
            cache._abort.set = real_set  # type: ignore[method-assign]
        assert not ours.exists() and theirs.exists()
    finally:
        release.set()
        slow.join()
        later.join()
        with cache._writers_lock:
            cache._writers.pop(store / "slow", None)
            cache._staging.pop(ours, None)
            cache._staging.pop(theirs, None)
    kept = files.new_folder(store)
    with cache._writers_lock:
        cache._staging[kept] = threading.current_thread()  # a write of this thread, in progress
    try:
        cache.settle(timeout=0.05)  # no write left to wait for: nothing stopped, nothing removed
        assert kept.exists()
    finally:
        with cache._writers_lock:
            cache._staging.pop(kept, None)
