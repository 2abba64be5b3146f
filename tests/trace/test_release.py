"""The load gives the C heap's free pages back to the system as each stage begins."""

from __future__ import annotations

import ctypes
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
