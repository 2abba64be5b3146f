"""polars' freed memory is kept for reuse under the load's budget and handed back over it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tracetui.trace import allocator, loader

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LINUX = sys.platform.startswith("linux")

# frees ~200 MB of polars buffers under 8 MiB each (the threads' arenas), then tells how much
# jemalloc holds dirty (freed, not handed back)
CHILD = """
import ctypes, json, mmap, sys, time
import polars as pl
from tracetui.trace import allocator
on = allocator.keep_freed_below(int(sys.argv[1]))
mallctl = allocator._mallctl()
frames = [pl.Series(range(500_000), dtype=pl.Int64) * 2 for _ in range(50)]
del frames
time.sleep(0.1)
epoch, size, dirty = ctypes.c_uint64(1), ctypes.c_size_t(8), ctypes.c_size_t()
mallctl(b"epoch", None, None, ctypes.byref(epoch), 8)
mallctl(b"stats.arenas.4096.pdirty", ctypes.byref(dirty), ctypes.byref(size), None, 0)
print(json.dumps({"on": on, "thread": allocator._thread is not None, "dirty": dirty.value * mmap.PAGESIZE}))
"""


def _child(budget: int, **env: str) -> dict[str, Any]:
    return _run(CHILD, str(budget), **env)


def _run(script: str, *args: str, **env: str) -> dict[str, Any]:
    """What ``script`` prints (JSON), run in a new process with the allocator's settings ``env`` only."""
    ours = (allocator.OPTIONS, allocator.SET_BY_US, "TRACETUI_KEEP_FREED")
    environ = {k: v for k, v in os.environ.items() if k not in ours}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=environ | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


linux_only = pytest.mark.skipif(not LINUX, reason="polars' allocator is reached on Linux only")
CLI = {allocator.OPTIONS: allocator.AT_ONCE, allocator.SET_BY_US: "1"}  # as the CLI sets them


@linux_only
def test_polars_mallctl_is_found_and_answers() -> None:
    import ctypes

    import polars  # noqa: F401  (the library it is found in)

    mallctl = allocator._mallctl()
    assert mallctl is not None
    version, size = ctypes.c_char_p(), ctypes.c_size_t(ctypes.sizeof(ctypes.c_char_p))
    assert mallctl(b"version", ctypes.byref(version), ctypes.byref(size), None, 0) == 0
    assert version.value is not None and version.value.startswith(b"5.")


@linux_only
def test_under_the_budget_freed_memory_is_kept() -> None:
    seen = _child(1 << 40, **CLI)
    assert seen["on"] and seen["thread"]
    assert seen["dirty"] > 50 << 20


@linux_only
def test_over_the_budget_freed_memory_is_handed_back() -> None:
    seen = _child(1, **CLI)
    assert seen["on"] and seen["thread"]
    assert seen["dirty"] < 1 << 20


@linux_only
def test_without_a_budget_the_cli_setting_hands_back_at_once() -> None:
    seen = _child(1 << 40, **CLI, TRACETUI_KEEP_FREED="0")
    assert not seen["on"] and not seen["thread"]
    assert seen["dirty"] < 1 << 20


@linux_only
def test_the_users_own_setting_is_left_alone() -> None:
    seen = _child(1, _RJEM_MALLOC_CONF="dirty_decay_ms:5000,muzzy_decay_ms:0")
    assert not seen["on"] and not seen["thread"]
    assert seen["dirty"] > 50 << 20  # kept, as the user asked, though the budget is 1 byte
    # the user's options, though the same as the CLI's: left alone (decay 0, nothing kept)
    seen = _child(1 << 40, _RJEM_MALLOC_CONF=allocator.AT_ONCE)
    assert not seen["on"] and not seen["thread"]
    assert seen["dirty"] < 1 << 20


def test_the_cli_sets_the_options_only_where_the_user_set_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(allocator.OPTIONS, raising=False)
    monkeypatch.delenv(allocator.SET_BY_US, raising=False)
    import polars  # noqa: F401

    allocator.hand_back_at_once()  # too late: polars' allocator has read its options
    assert allocator.OPTIONS not in os.environ and allocator.SET_BY_US not in os.environ
    monkeypatch.delitem(sys.modules, "polars")  # as before polars starts
    allocator.hand_back_at_once()
    assert {k: os.environ[k] for k in CLI} == CLI
    monkeypatch.setenv(allocator.OPTIONS, "narenas:2")
    monkeypatch.delenv(allocator.SET_BY_US)
    allocator.hand_back_at_once()
    assert os.environ[allocator.OPTIONS] == "narenas:2" and allocator.SET_BY_US not in os.environ


def test_the_cli_setting_is_told_from_the_users() -> None:
    polars_first = "dirty_decay_ms:500,muzzy_decay_ms:1000,"  # polars puts its own first
    mark = {allocator.SET_BY_US: "1"}
    assert allocator._own(CLI)
    assert allocator._own(mark | {allocator.OPTIONS: polars_first + allocator.AT_ONCE})
    assert allocator._own(mark | {allocator.OPTIONS: polars_first + "thp:always," + allocator.AT_ONCE})
    assert not allocator._own(mark | {allocator.OPTIONS: polars_first.rstrip(",")})
    assert not allocator._own(mark | {allocator.OPTIONS: polars_first + allocator.AT_ONCE + ",narenas:2"})
    assert not allocator._own(mark | {allocator.OPTIONS: polars_first + "x" + allocator.AT_ONCE})
    assert not allocator._own({allocator.OPTIONS: polars_first + allocator.AT_ONCE})  # the user's
    assert not allocator._own({})


def test_a_library_without_the_function_gives_none(tmp_path: Path) -> None:
    not_elf = tmp_path / "lib.so"
    not_elf.write_bytes(b"MZ" + bytes(100))
    assert allocator._find_function(not_elf, allocator.SYMBOL) is None
    import polars  # noqa: F401

    library = Path(os.path.realpath(sys.modules["polars._plr"].__file__ or ""))
    if library.read_bytes()[:6] == b"\x7fELF\x02\x01":
        assert allocator._find_function(library, allocator.SYMBOL) is not None
        assert allocator._find_function(library, b"no_such_function_anywhere") is None


@linux_only
def test_another_mapping_of_the_library_is_not_taken_for_its_code() -> None:
    import ctypes
    import mmap

    import polars  # noqa: F401

    library = os.path.realpath(sys.modules["polars._plr"].__file__ or "")
    code = ctypes.cast(allocator._mallctl(), ctypes.c_void_p).value
    allocator._mallctl_in.cache_clear()
    with open(library, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ):
        # a read-only mapping of the whole file, the same bytes at another address
        assert ctypes.cast(allocator._mallctl(), ctypes.c_void_p).value == code


FORK = """
import ctypes, json, os, sys
import polars as pl
from tracetui.trace import allocator
assert allocator.keep_freed_below(1 << 40)
child = os.fork()
if child == 0:
    decay, size = ctypes.c_ssize_t(), ctypes.c_size_t(ctypes.sizeof(ctypes.c_ssize_t))
    allocator._mallctl()(b"arenas.dirty_decay_ms", ctypes.byref(decay), ctypes.byref(size), None, 0)
    state = {"thread": allocator._thread is None, "statm": allocator._statm is None, "decay": decay.value}
    state["lock"] = allocator._lock.acquire(timeout=5)
    print(json.dumps(state), flush=True)
    os._exit(0)
os.waitpid(child, 0)
"""


@linux_only
def test_a_forked_child_hands_back_at_once_with_nothing_of_its_parents() -> None:
    assert _run(FORK, **CLI) == {"thread": True, "statm": True, "decay": 0, "lock": True}


@linux_only
def test_code_that_is_not_the_files_is_never_called(monkeypatch: pytest.MonkeyPatch) -> None:
    import polars  # noqa: F401

    real = allocator._find_function

    def moved(path: Path, name: bytes) -> tuple[int, bytes] | None:
        found = real(path, name)
        assert found is not None
        return found[0] + 16, found[1]  # another place than the function's

    allocator._mallctl_in.cache_clear()
    monkeypatch.setattr(allocator, "_find_function", moved)
    try:
        assert allocator._mallctl() is None
    finally:
        allocator._mallctl_in.cache_clear()


def test_the_load_sets_half_its_json_as_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_NO_CACHE", "1")
    budgets: list[int] = []
    monkeypatch.setattr(allocator, "keep_freed_below", budgets.append)
    trace = FIXTURES / "mlp_eager.json.gz"
    loader.load_now(trace)
    import gzip

    assert budgets == [len(gzip.decompress(trace.read_bytes())) // 2]
