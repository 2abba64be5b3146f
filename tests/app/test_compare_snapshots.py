"""Snapshot tests: the comparison screen and the expectations panel (SVGs in __snapshots__)."""

from __future__ import annotations

from pathlib import Path

from tests.app.conftest import WIDE, app_with_checks, fixture, keys, settle
from tracetui.app.diff_app import DiffApp


def mlp_diff() -> DiffApp:
    return DiffApp(fixture("mlp_eager"), fixture("mlp_compiled"))


def test_diff_screen_at_start(snap_compare) -> None:
    """Eager (A) vs compiled (B): headlines; linear → matmul → mm beside bare mm; GEMMs identical."""
    assert snap_compare(mlp_diff(), terminal_size=WIDE, run_before=settle)


def test_diff_screen_next_difference(snap_compare) -> None:
    """``n`` from the hot GEMM: the next hunk, A's ``_unsafe_view``, ``mul`` and the next chain."""
    assert snap_compare(mlp_diff(), terminal_size=WIDE, run_before=keys("n"))


def test_expectations_panel_with_a_failing_check(snap_compare, expect_path: Path) -> None:
    """7 of 8 guesses hold; the failing one (aten::t launches kernels) is highlighted."""
    app = app_with_checks(fixture("mlp_eager"), expect_path)
    assert snap_compare(app, terminal_size=WIDE, run_before=settle)


def test_expectations_jump_to_the_failing_node(snap_compare, expect_path: Path) -> None:
    """``x`` then Enter: the tree opens on the first aten::t call, which launched nothing."""
    app = app_with_checks(fixture("mlp_eager"), expect_path)
    assert snap_compare(app, terminal_size=WIDE, run_before=keys("x", "enter"))
