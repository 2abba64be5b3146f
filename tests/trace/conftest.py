"""Fixtures of the trace tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of the test's own (in ``tmp_path / "cache"``), on, storing traces of any size."""
    monkeypatch.delenv("TRACETUI_NO_CACHE", raising=False)
    monkeypatch.delenv("TRACETUI_CACHE_MAX", raising=False)
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRACETUI_CACHE_MIN_BYTES", "0")
    return tmp_path / "cache"
