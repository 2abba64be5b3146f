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
time.sleep(0.3)
epoch, size, dirty = ctypes.c_uint64(1), ctypes.c_size_t(8), ctypes.c_size_t()
mallctl(b"epoch", None, None, ctypes.byref(epoch), 8)
mallctl(b"stats.arenas.4096.pdirty", ctypes.byref(dirty), ctypes.byref(size), None, 0)
print(json.dumps({"on": on, "thread": allocator._thread is not None, "dirty": dirty.value * mmap.PAGESIZE}))
"""


def _child(budget: int, **env: str) -> dict[str, Any]:
    environ = {k: v for k, v in os.environ.items() if k not in ("_RJEM_MALLOC_CONF", "TRACETUI_KEEP_FREED")}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(budget)],
        env=environ | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


linux_only = pytest.mark.skipif(not LINUX, reason="polars' allocator is reached on Linux only")


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
    seen = _child(1 << 40, _RJEM_MALLOC_CONF=allocator.AT_ONCE)
    assert seen["on"] and seen["thread"]
    assert seen["dirty"] > 50 << 20


@linux_only
def test_over_the_budget_freed_memory_is_handed_back() -> None:
    seen = _child(1, _RJEM_MALLOC_CONF=allocator.AT_ONCE)
    assert seen["on"] and seen["thread"]
    assert seen["dirty"] < 1 << 20


@linux_only
def test_without_a_budget_the_cli_setting_hands_back_at_once() -> None:
    seen = _child(1 << 40, _RJEM_MALLOC_CONF=allocator.AT_ONCE, TRACETUI_KEEP_FREED="0")
    assert not seen["on"] and not seen["thread"]
    assert seen["dirty"] < 1 << 20


@linux_only
def test_the_users_own_setting_is_left_alone() -> None:
    seen = _child(1, _RJEM_MALLOC_CONF="dirty_decay_ms:5000,muzzy_decay_ms:0")
    assert not seen["on"] and not seen["thread"]
    assert seen["dirty"] > 50 << 20  # kept, as the user asked, though the budget is 1 byte


def test_the_cli_setting_is_told_from_the_users() -> None:
    polars_first = "dirty_decay_ms:500,muzzy_decay_ms:1000,"  # polars puts its own first
    assert allocator._own(allocator.AT_ONCE)
    assert allocator._own(polars_first + allocator.AT_ONCE)
    assert not allocator._own(polars_first.rstrip(","))
    assert not allocator._own(polars_first + allocator.AT_ONCE + ",narenas:2")
    assert not allocator._own("")


def test_a_library_without_the_function_gives_none(tmp_path: Path) -> None:
    not_elf = tmp_path / "lib.so"
    not_elf.write_bytes(b"MZ" + bytes(100))
    assert allocator._find_function(not_elf, allocator.SYMBOL) is None
    python = Path(os.path.realpath(sys.executable))
    if python.read_bytes()[:6] == b"\x7fELF\x02\x01":
        assert allocator._find_function(python, b"no_such_function_anywhere") is None


@linux_only
def test_code_that_is_not_the_files_is_never_called(monkeypatch: pytest.MonkeyPatch) -> None:
    import polars  # noqa: F401

    real = allocator._find_function

    def moved(path: Path, name: bytes) -> tuple[int, bytes] | None:
        found = real(path, name)
        assert found is not None
        return found[0] + 16, found[1]  # another address than the function's

    allocator._mallctl.cache_clear()
    monkeypatch.setattr(allocator, "_find_function", moved)
    try:
        assert allocator._mallctl() is None
    finally:
        allocator._mallctl.cache_clear()


def test_the_load_sets_half_its_json_as_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_NO_CACHE", "1")
    budgets: list[int] = []
    monkeypatch.setattr(allocator, "keep_freed_below", budgets.append)
    trace = FIXTURES / "mlp_eager.json.gz"
    loader.load_now(trace)
    import gzip

    assert budgets == [len(gzip.decompress(trace.read_bytes())) // 2]
