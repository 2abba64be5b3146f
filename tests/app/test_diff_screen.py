"""Pilot tests: the comparison screen's aligned rows as plain data after key presses, and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.pilot import Pilot

from tests.app import synthetic
from tests.app.conftest import fixture, settle
from tests.as_data import cursor_as_data, rows_as_data
from tracetui.app import launch
from tracetui.app.diff_app import DiffApp
from tracetui.app.screens.diff import DiffScreen
from tracetui.app.screens.error import ErrorScreen
from tracetui.app.screens.help import HelpScreen
from tracetui.app.widgets.diff_tree import DiffTree
from tracetui.cli import cli
from tracetui.commands import diff as diff_module

SIZE = (140, 40)
MM = (" ", "aten::mm", "aten::mm")
CHAIN = [
    ("−", "aten::linear", ""),
    ("−", "aten::t", ""),
    ("−", "aten::matmul", ""),
    ("−", "aten::reshape", ""),
]
GEMM = "nvjet gemm bf16 256x128 coopA TNT"


def mlp_app() -> DiffApp:
    return DiffApp(fixture("mlp_eager"), fixture("mlp_compiled"))


def tree_of(app: DiffApp) -> DiffTree:
    return app.screen.query_one(DiffTree)


async def press(pilot: Pilot[int], *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def go_to(pilot: Pilot[int], row: tuple[str, str, str]) -> None:
    """Put the cursor on the first shown row equal to ``row``."""
    tree = tree_of(pilot.app)
    assert tree.model is not None
    pid = tree._rows[rows_as_data(tree).index(row)]
    assert tree.reveal(tree.model.path_of(pid))
    await settle(pilot)
    assert cursor_as_data(tree) == row


async def test_start_aligns_the_hot_forward_pass() -> None:
    app = mlp_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, DiffScreen)
        tree = tree_of(app)
        rows = rows_as_data(tree)
        assert rows[:4] == [
            ("~", "ProfilerStep#2", "ProfilerStep#2"),
            ("~", "ProfilerStep#3", "ProfilerStep#3"),
            ("~", "ProfilerStep#4", "ProfilerStep#4"),
            ("~", "mlp_fwd", "mlp_fwd"),
        ]
        body = rows[4:]
        assert body[:4] == CHAIN  # eager's aten::linear → aten::matmul → aten::mm …
        assert body[9] == MM  # … beside compiled's bare aten::mm
        assert body.count(MM) == 3  # the three GEMMs, aligned as identical
        assert ("−", "aten::gelu", "") in body and ("−", "aten::mul", "") in body
        assert ("+", "", "triton_poi_fused__unsafe_view_gelu_mul_0") in body
        # the hottest GEMM is open down to its kernel, byte-identical on both sides
        assert cursor_as_data(tree) == (" ", GEMM, GEMM)
        headlines = str(app.screen.query_one("#diff-headlines").render())
        assert "kernels 5 → 4" in headlines and "GPU time 233.7 µs → 206.4 µs" in headlines
        assert "replaced by 1 Inductor kernel" in headlines
        details = str(app.screen.query_one("#diff-details").render())
        assert "in both" in details and "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT" in details


async def test_fused_kernel_only_in_b_and_gelu_only_in_a() -> None:
    app = mlp_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        await go_to(pilot, ("+", "", "triton_poi_fused__unsafe_view_gelu_mul_0"))
        await press(pilot, "e")
        assert cursor_as_data(tree) == ("+", "", "inductor poi _unsafe_view+gelu+mul #0")
        await go_to(pilot, ("−", "aten::gelu", ""))
        gelu = tree.cursor_row
        await press(pilot, "right")
        rows = rows_as_data(tree)
        assert rows[gelu + 1 : gelu + 2] == [("−", "cudaLaunchKernel", "")]
        await press(pilot, "e")
        assert cursor_as_data(tree) == ("−", "elementwise gelu ×8", "")


async def test_keys_move_expand_and_collapse_both_sides() -> None:
    app = mlp_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        start = len(rows_as_data(tree))
        await press(pilot, "left", "left")  # collapse the launch call, then go to it
        assert cursor_as_data(tree) == (" ", "cuLaunchKernelEx", "cuLaunchKernelEx")
        assert len(rows_as_data(tree)) == start - 1
        await press(pilot, "left", "left")  # on aten::mm: collapse both sides of the pair
        assert cursor_as_data(tree) == MM
        assert not tree.is_expanded(tree.cursor_key)
        await press(pilot, "e")
        assert cursor_as_data(tree) == (" ", GEMM, GEMM)
        await press(pilot, "c")
        assert rows_as_data(tree) == [
            ("~", "ProfilerStep#2", "ProfilerStep#2"),
            ("~", "ProfilerStep#3", "ProfilerStep#3"),
            ("~", "ProfilerStep#4", "ProfilerStep#4"),
            (" ", "outside steps", "outside steps"),
        ]
        assert cursor_as_data(tree) == ("~", "ProfilerStep#4", "ProfilerStep#4")
        await press(pilot, "home", "right", "down", "right")
        assert rows_as_data(tree)[2] == ("−", "aten::linear", "")
        assert tree.side == "a"
        await press(pilot, "tab")
        assert tree.side == "b"
        assert "B" in str(app.screen.query_one("#diff-details").render())


async def test_n_and_N_walk_the_differences_and_help_lists_the_keys() -> None:
    app = mlp_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        seen = []
        for _ in range(4):
            await press(pilot, "n")
            seen.append(cursor_as_data(tree))
        assert seen == [
            ("−", "aten::_unsafe_view", ""),
            ("+", "", "triton_poi_fused__unsafe_view_gelu_mul_0"),
            ("−", "aten::_unsafe_view", ""),
            ("~", "ProfilerStep#2", "ProfilerStep#2"),  # wrapped: step 2 opens as needed
        ]
        await press(pilot, "n", "n")
        assert cursor_as_data(tree) == ("−", "aten::linear", "")
        assert rows_as_data(tree)[:3] == [
            ("~", "ProfilerStep#2", "ProfilerStep#2"),
            ("~", "mlp_fwd", "mlp_fwd"),
            ("−", "aten::linear", ""),
        ]
        await press(pilot, "n")
        assert cursor_as_data(tree) == ("+", "", "TorchDynamo Cache Lookup")
        await press(pilot, "N", "N")
        assert cursor_as_data(tree) == ("~", "mlp_fwd", "mlp_fwd")
        await press(pilot, "f1")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("#help-text").render())
        for words in ("Comparison", "Switch side", "Next difference", "Open chain", "Quit"):
            assert words in text
        # issue 14 item 15: the comparison has no timeline and no tables: its help lists no such mouse use
        assert "timeline" not in text and "table header" not in text and "double-click" not in text
        assert "the side clicked" in text
        await press(pilot, "escape", "q")
    assert app.return_code == 0


async def test_trace_text_is_never_markup(markup_path: Path, orphan_path: Path) -> None:
    app = DiffApp(markup_path, orphan_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = tree_of(app)
        await press(pilot, "home", "right")
        rendered = "".join(tree.render_line(y).text for y in range(1, 1 + tree.row_count))
        assert "[bold red]x[/]" in rendered and "[@click=app.quit]quit[/]" in rendered
        assert "\x1b" not in rendered
        for row in range(min(6, tree.row_count)):
            await pilot.click(tree, offset=(20 + 70 * (row % 2), row + 1))
            await settle(pilot)
        assert app.is_running and isinstance(app.screen, DiffScreen)
        assert any(
            name in rows_as_data(tree)[i][1] for i in range(tree.row_count) for name in synthetic.MARKUP_NAMES
        )


async def test_a_trace_that_cannot_load_shows_the_cli_line(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": "world"}')
    app = DiffApp(fixture("mlp_eager"), bad)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen) and "notes.json" in app.screen.line
        await pilot.press("q")
    assert app.return_code == 2


def test_diff_opens_the_screen_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[tuple[Path, Path]] = []

    def fake_open(a: Path, b: Path, max_inflate: float | None = None) -> int:
        opened.append((a, b))
        return 0

    monkeypatch.setattr(diff_module, "open_diff", fake_open)
    runner = CliRunner()
    eager, compiled = str(fixture("mlp_eager")), str(fixture("mlp_compiled"))
    monkeypatch.setattr(diff_module, "on_terminal", lambda: True)
    for args in (["--report"], ["--json"]):
        result = runner.invoke(cli, ["diff", eager, compiled, *args], catch_exceptions=False)
        assert result.exit_code == 0 and result.output and not opened
    result = runner.invoke(cli, ["diff", eager, compiled], catch_exceptions=False)
    assert opened == [(Path(eager), Path(compiled))] and result.exit_code == 0


def test_open_diff_checks_both_files_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracetui.errors import TraceError

    monkeypatch.setattr(DiffApp, "run", lambda self: pytest.fail("the app must not start"))
    with pytest.raises(TraceError, match="no such file"):
        launch.open_diff(fixture("mlp_eager"), tmp_path / "missing.json")
