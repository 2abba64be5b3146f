"""Snapshot tests: the comparison screen (SVGs in __snapshots__)."""

from __future__ import annotations

from tests.app.conftest import WIDE, fixture, keys, settle
from tracetui.app.diff_app import DiffApp


def mlp_diff() -> DiffApp:
    return DiffApp(fixture("mlp_eager"), fixture("mlp_compiled"))


def test_diff_screen_at_start(snap_compare) -> None:
    """Eager (A) vs compiled (B): headlines; linear → matmul → mm beside bare mm; GEMMs identical."""
    assert snap_compare(mlp_diff(), terminal_size=WIDE, run_before=settle)


def test_diff_screen_next_difference(snap_compare) -> None:
    """``n`` from the hot GEMM: the next hunk, A's ``_unsafe_view``, ``mul`` and the next chain."""
    assert snap_compare(mlp_diff(), terminal_size=WIDE, run_before=keys("n"))

