"""Test-wide settings (no test reads or writes the user's trace cache) and synthetic traces shared by
the view-model and the widget tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.app import synthetic

os.environ["TRACETUI_NO_CACHE"] = "1"  # cache tests enable a private cache explicitly


@pytest.fixture
def deep_path(tmp_path: Path) -> Path:
    return synthetic.deep_trace(tmp_path / "deep_stack.json")


@pytest.fixture
def orphan_path(tmp_path: Path) -> Path:
    return synthetic.orphan_trace(tmp_path / "orphans.json")
