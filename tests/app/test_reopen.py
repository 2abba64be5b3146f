"""Pilot tests: the explorer reopened from the trace cache shows the tree it showed cold, its first
frame drawn from the entry's kept first frame."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from tests.app.conftest import fixture, settle, tree_of
from tests.as_data import tree_as_data, visible_labels
from tracetui.app.app import TraceApp
from tracetui.trace import cache
from tracetui.trace import cache_files as files
from tracetui.views import tree_frame


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("TRACETUI_NO_CACHE", raising=False)
    monkeypatch.setenv("TRACETUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRACETUI_CACHE_MIN_BYTES", "0")
    return tmp_path / "cache"


async def shown(path: Path) -> dict[str, Any]:
    """What the explorer shows once settled: the tree as data, its rows, the cursor, the details."""
    app = TraceApp(path)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        assert tree.model is not None
        result = {
            "tree": tree_as_data(tree),
            "rows": visible_labels(tree),
            "nodes": [tree.model.node(key) for key in tree._rows],
            "cursor": tree.cursor_key,
            "details": str(app.screen.query_one("#details", Static).content),
            "from_cache": tree.model.trace.from_cache,
            "kept": tree.model._first is not None,
        }
    cache.settle()
    return result


@pytest.mark.parametrize("name", ["mlp_eager", "mlp_train_tbhandler_stack_memory.pt.trace"])
async def test_the_reopened_explorer_shows_the_cold_tree(
    private_cache: Path, tmp_path: Path, name: str
) -> None:
    path = tmp_path / f"{name}.json.gz"
    shutil.copy(fixture(name), path)
    cold = await shown(path)
    assert not cold["from_cache"] and not cold["kept"]
    entry = cache.entry_for(path)
    assert entry is not None and files.parts(entry, files.kind_stem(tree_frame.KIND), "parts")
    listed = sorted(os.listdir(entry))
    reopened = await shown(path)
    # drawn from the kept first frame (what the entry held, and the cache's counts, if not)
    why = (reopened["from_cache"], reopened["kept"], listed, cache.counts())
    assert reopened["from_cache"] and reopened["kept"], why
    for what in ("tree", "rows", "nodes", "cursor", "details"):
        assert reopened[what] == cold[what], what
