"""The load gives the C heap's free pages back to the system as each stage begins."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracetui.trace import loader, release

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_hand_back_trims_on_glibc() -> None:
    trim = release._malloc_trim()
    if sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "malloc_trim"):
        assert trim is not None
    release.hand_back()  # nothing to check but that it runs: what it frees depends on the heap


def test_each_stage_of_a_load_hands_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_NO_CACHE", "1")
    seen: list[str] = []
    monkeypatch.setattr(loader, "hand_back", lambda: seen.append("trim"))
    loader.load_now(FIXTURES / "mlp_eager.json.gz", seen.append)
    stages = [s for s in seen if s != "trim"]
    assert stages[:3] == ["reading", "decoding", "tabulating"]
    # a trim before every stage, and one after the last
    assert seen == [x for stage in stages for x in ("trim", stage)] + ["trim"]


def test_the_cli_sets_polars_allocator_options_only_where_the_user_set_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(release.JEMALLOC_OPTIONS, raising=False)
    import polars  # noqa: F401

    release.hand_back_at_once()  # too late: polars' allocator has read its options
    assert release.JEMALLOC_OPTIONS not in os.environ
    monkeypatch.delitem(sys.modules, "polars")  # as before polars starts
    release.hand_back_at_once()
    assert os.environ[release.JEMALLOC_OPTIONS] == release.AT_ONCE
    monkeypatch.setenv(release.JEMALLOC_OPTIONS, "narenas:2")  # the user's
    release.hand_back_at_once()
    assert os.environ[release.JEMALLOC_OPTIONS] == "narenas:2"


def test_polars_allocator_reads_the_options_the_cli_sets() -> None:
    """jemalloc in polars' library reads ``_RJEM_MALLOC_CONF`` as it starts (here with its statistics
    printed at exit, which show the options in force)."""
    code = "import polars as pl; pl.DataFrame({'a': [1]})"
    env = {**os.environ, release.JEMALLOC_OPTIONS: release.AT_ONCE + ",stats_print:true"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "opt.dirty_decay_ms: 0 " in done.stderr and "opt.muzzy_decay_ms: 0 " in done.stderr, done.stderr
