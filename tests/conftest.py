"""Test-wide settings (no test reads or writes the user's trace cache) and synthetic traces shared by
the view-model and the widget tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests import hypothesis_budget
from tests.app import synthetic

os.environ["TRACETUI_NO_CACHE"] = "1"  # cache tests enable a private cache explicitly

# Property tests judge results, not speed: on a loaded 2-core CI machine one example of a polars
# pipeline can take longer than hypothesis' default 200 ms deadline, which would fail the run at random.
# The default run draws a quarter of each test's examples; CI's second step (.ci/run) passes
# --hypothesis-profile=thorough for all of them (tests/hypothesis_budget.py).
settings.register_profile("tracetui", deadline=None, max_examples=hypothesis_budget.DEFAULT)
settings.register_profile("thorough", deadline=None, max_examples=hypothesis_budget.FULL)
settings.load_profile("tracetui")


@pytest.fixture
def deep_path(tmp_path: Path) -> Path:
    return synthetic.deep_trace(tmp_path / "deep_stack.json")


@pytest.fixture
def orphan_path(tmp_path: Path) -> Path:
    return synthetic.orphan_trace(tmp_path / "orphans.json")
