"""``tracetui open TRACE --expect FILE``: the pass/fail panel, its key, and jumps to what broke a check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.app.conftest import app_with_checks, fixture, settle, tree_of
from tracetui.app import launch
from tracetui.app.app import TraceApp
from tracetui.app.screens.help import HelpScreen
from tracetui.app.widgets.expect_panel import ExpectPanel

SIZE = (140, 40)


def panel_of(app: TraceApp) -> ExpectPanel:
    return app.screen.query_one(ExpectPanel)


async def press(pilot: Pilot[int], *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def test_panel_shows_every_check_and_jumps_to_the_failing_node(expect_path: Path) -> None:
    app = app_with_checks(fixture("mlp_eager"), expect_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = panel_of(app)
        assert panel.display and panel.option_count == 8
        header = str(app.screen.query_one("TraceHeader").render())
        assert "expectations: 7/8 pass" in header
        assert panel.border_title == "expectations: 7/8 pass · mlp_guesses.toml"
        rows = [str(panel.get_option_at_index(i).prompt) for i in range(panel.option_count)]
        assert rows[2].split()[:2] == ["FAIL", "8"] and "op aten::t: launches_kernels = true" in rows[2]
        assert "none of 9 op calls launched GPU work" in rows[2]
        assert all(row.split()[0] == "pass" for i, row in enumerate(rows) if i != 2)
        assert panel.highlighted == 2  # the first failing check
        tree = tree_of(app)
        assert tree.has_focus
        await press(pilot, "x")  # shown, not focused: focus it
        assert panel.has_focus
        await press(pilot, "enter")
        result = panel.checks.results[2]
        assert tree.has_focus and tree.cursor_node.event_id == result.event_id
        assert (
            tree.cursor_node.name == "aten::t"
            and tree.model.step_of(tree.cursor_key) == tree.model.step_ids[0]
        )
        await press(pilot, "x", "x")  # focus, then hide
        assert not panel.display and tree.has_focus
        await press(pilot, "x")  # show and focus
        assert panel.display and panel.has_focus
        await press(pilot, "escape")
        assert tree.has_focus and panel.display
        await press(pilot, "f1")
        text = str(app.screen.query_one("#help-text").render())
        assert "Expectations panel" in text and "Go to the node that broke the check" in text


async def test_whole_trace_checks_and_filtered_nodes_say_why_there_is_no_jump(tmp_path: Path) -> None:
    path = tmp_path / "whole.toml"
    path.write_text(
        '[[expect]]\nkernel = "nvjet_*"\ncount = 3\n\n[[expect]]\nop = "aten::t"\nlaunches_kernels = true\n'
    )
    app = app_with_checks(fixture("mlp_eager"), path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = panel_of(app)
        assert [r.passed for r in panel.checks.results] == [False, False]
        assert panel.checks.results[0].event_id is None
        tree = tree_of(app)
        before = tree.cursor_key
        await press(pilot, "x", "enter")
        assert tree.cursor_key == before and panel.has_focus
        assert any("whole trace" in str(n.message) for n in app._notifications)
        await press(pilot, "escape", "k", "x", "down", "enter")  # kernels only hides aten::t
        assert any("hidden by the current filters" in str(n.message) for n in app._notifications)


async def test_without_expect_there_is_no_panel_and_no_key() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.screen.query(ExpectPanel)
        assert "x" not in app.screen.active_bindings
        await press(pilot, "x")  # nothing happens
        assert tree_of(app).has_focus
        await press(pilot, "f1")
        assert isinstance(app.screen, HelpScreen)
        assert "Expectations" not in str(app.screen.query_one("#help-text").render())


def test_open_trace_reads_the_expectations_first(expect_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[TraceApp] = []

    def fake_run(self: TraceApp) -> None:
        started.append(self)
        self._return_code = 0

    monkeypatch.setattr(TraceApp, "run", fake_run)
    assert launch.open_trace(fixture("mlp_eager"), expect_path) == 0
    path, expectations = started[0].expect
    assert path == expect_path and len(expectations) == 7


def test_bad_expectations_file_is_one_line_exit_2_before_the_app(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[expect]]\nannotation = "mlp_fwd"\nkernel_per_call = 5\n')
    trace = str(fixture("mlp_eager"))
    done = subprocess.run(
        [sys.executable, "-m", "tracetui", "open", trace, "--expect", "bad.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    check = subprocess.run(
        [sys.executable, "-m", "tracetui", "check", trace, "--expect", "bad.toml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == check.returncode == 2
    assert done.stderr == check.stderr
    assert done.stderr.startswith("tracetui: bad.toml: line 3:") and done.stderr.count("\n") == 1


async def test_panel_title_shows_the_file_name_as_text(expect_path: Path, tmp_path: Path) -> None:
    odd = tmp_path / "[red]guesses[on blue].toml"
    odd.write_text(expect_path.read_text())
    app = app_with_checks(fixture("mlp_eager"), odd)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert panel_of(app)._border_title.plain.endswith("· [red]guesses[on blue].toml")
