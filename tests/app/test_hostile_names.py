"""The explorer shows outside text neutralised (issue 12, items 7, 8 and 10): no control, invisible
or direction character on the screen, each a visible escape; a huge name cut, the cut said."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.conftest import app_with_checks, goto, settle, tree_of
from tests.as_data import visible_labels
from tests.test_hostile_text import (
    EVIL_FILE,
    HUGE_LOADED,
    LOOKALIKE,
    RAW_CONTROL,
    RAW_INVISIBLE,
    hostile_events,
)
from tests.trace.synth import trace_doc, write
from tracetui.app.app import TraceApp
from tracetui.app.diff_app import DiffApp
from tracetui.app.widgets.details import describe
from tracetui.safetext import MAX_SHOWN
from tracetui.views.insight import Insight


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return write(tmp_path / EVIL_FILE, trace_doc(hostile_events()))


async def test_the_explorer_shows_outside_text_neutralised(hostile: Path) -> None:
    app = TraceApp(hostile)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await goto(pilot, LOOKALIKE)
        tree = tree_of(app)
        labels = visible_labels(tree)
        assert any(label.strip() == LOOKALIKE for label in labels)  # the model keeps it exactly
        screen = app.export_screenshot()
        for char in (*RAW_CONTROL, *RAW_INVISIBLE):
            assert char not in screen, f"raw {char!r} on the explorer's screen"
        assert "aten::mm\\u200b" in screen  # the tree row and the details pane
        assert "\\u202enosj.json" in screen  # the header's file name
        await goto(pilot, HUGE_LOADED)  # the 2 MB name as loaded: its first 64 KiB, marked
        assert "x" * 300 not in app.export_screenshot()
        await pilot.press("y")  # the Why view: its path's names, the advice's
        await settle(pilot)
        why = app.export_screenshot()
        assert "Why" in why
        for char in (*RAW_CONTROL, *RAW_INVISIBLE):
            assert char not in why, f"raw {char!r} on the Why view"
        model = tree.model
        assert model is not None
        details = describe(model.trace, model, tree.cursor_node.event_id, Insight()).plain
        assert f"…(+{len(HUGE_LOADED) - MAX_SHOWN:,} chars)" in details and len(details) < 10_000


def assert_screen_safe(screen: str) -> None:
    for char in (*RAW_CONTROL, *RAW_INVISIBLE):
        assert char not in screen, f"raw {char!r} on the screen"
    assert "x" * 300 not in screen


async def test_tables_expectations_and_comparison_show_outside_text_neutralised(
    hostile: Path, tmp_path: Path
) -> None:
    expect = tmp_path / "exp\u202eect.toml"
    expect.write_text('[[expect]]\nop = "aten::mm\u200b"\ncount = 2\nnote = "see \\u2066here"\n')
    app = app_with_checks(hostile, expect)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = app.export_screenshot()
        assert_screen_safe(screen)
        assert "exp\\u202eect.toml" in screen and "aten::mm\\u200b" in screen  # the panel
        await pilot.press("t")  # the tables: ops first
        await settle(pilot)
        screen = app.export_screenshot()
        assert_screen_safe(screen)
        assert "aten::mm\\u200b" in screen
    diff = DiffApp(hostile, hostile)
    async with diff.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        screen = diff.export_screenshot()
        assert_screen_safe(screen)
        assert "\\u202enosj.json" in screen
