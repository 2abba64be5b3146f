"""Saved views and exports from inside the explorer: ctrl+s (SVG of the screen), ``tracetui render``
(byte-identical across processes), E on a table and on the tree (the dialog, the files, formula
escaping, atomic writes). Pilot tests and snapshots."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from textual.widgets import Input, Static

from tests.app.conftest import WIDE, fixture, goto, settle, tree_of
from tracetui.app.app import TraceApp
from tracetui.app.screens.export_dialog import ExportDialog
from tracetui.app.screens.tables import TablesScreen
from tracetui.sample_traces import default_trace
from tracetui.views.subtree import subtree_frame
from tracetui.views.table_spec import Column
from tracetui.views.tables import filter_rows


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder is ``~/work`` of a home folder under ``tmp_path``: files land there and the
    notifications name it the same way in every run."""
    home = tmp_path / "home"
    work = home / "work"
    work.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return work


def notes(app: TraceApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


# ---- ctrl+s ----------------------------------------------------------------------------------------


async def test_ctrl_s_saves_the_screen_and_says_where(in_tmp: Path) -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+s")
        await pilot.press("ctrl+s")  # a second picture does not overwrite the first
        await pilot.press("2")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        saved = sorted(p.name for p in in_tmp.iterdir())
        assert saved == [
            "tracetui_mlp_eager_kernels.svg",
            "tracetui_mlp_eager_tree-2.svg",
            "tracetui_mlp_eager_tree.svg",
        ]
        assert notes(app)[:3] == [
            "Saved the screen as tracetui_mlp_eager_tree.svg in ~/work",
            "Saved the screen as tracetui_mlp_eager_tree-2.svg in ~/work",
            "Saved the screen as tracetui_mlp_eager_kernels.svg in ~/work",
        ]
        svg = (in_tmp / "tracetui_mlp_eager_tree.svg").read_text()
        assert svg.startswith("<svg") and "nvjet&#160;gemm&#160;bf16" in svg
        assert not [p for p in in_tmp.iterdir() if p.name.endswith(".tmp")]


async def test_ctrl_s_is_in_the_palette_and_textuals_own_screenshot_is_not() -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Save SVG" in titles and "Screenshot" not in titles
        assert "Export subtree" in titles and "Slowest calls" in titles


def test_snapshot_save_svg_notification(snap_compare, in_tmp: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("ctrl+s")
        await pilot.pause()

    assert snap_compare(TraceApp(fixture("mlp_eager")), terminal_size=WIDE, run_before=run_before)


# ---- tracetui render ----------------------------------------------------------------------------


def render(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracetui", "render", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--view", "tree"],
        ["--view", "timeline", "--node", "aten::gelu"],
        ["--view", "tables", "--table", "kernels", "--size", "150x20"],
    ],
    ids=["tree", "timeline", "tables"],
)
def test_render_is_byte_identical_across_processes(tmp_path: Path, args: list[str]) -> None:
    """Two separate processes, in two different folders: the same bytes, no clock, no path."""
    trace = fixture("mlp_eager")
    outputs = []
    for run in ("one", "two"):
        folder = tmp_path / run
        folder.mkdir()
        done = render([str(trace), *args, "-o", "view.svg"], folder)
        assert done.returncode == 0, done.stderr
        assert done.stdout == done.stderr == ""
        outputs.append((folder / "view.svg").read_bytes())
    assert outputs[0] == outputs[1]
    text = outputs[0].decode()
    assert text.startswith("<svg") and str(tmp_path) not in text and str(trace.parent) not in text
    if "tables" not in args:
        assert "mlp_eager.json.gz" in text  # the header names the file


def test_render_views_show_what_they_say(tmp_path: Path) -> None:
    trace = str(fixture("mlp_eager"))
    assert render([trace, "--node", "aten::gelu", "-o", "a.svg"], tmp_path).returncode == 0
    assert "Distribution&#160;of&#160;6&#160;calls" not in (tmp_path / "a.svg").read_text()  # gelu is an op
    table = render(
        [trace, "--view", "tables", "--table", "steps", "--size", "120x16", "-o", "b.svg"], tmp_path
    )
    assert table.returncode == 0 and "ProfilerStep#2" in (tmp_path / "b.svg").read_text()


REPO = Path(__file__).resolve().parents[2]
README_PICTURES = {  # as README.md says they are made
    "explorer.svg": ["--size", "130x34"],
    "kernels_table.svg": ["--view", "tables", "--table", "kernels", "--size", "152x12"],
    "timeline.svg": ["--view", "timeline", "--node", "aten::gelu", "--size", "130x30"],
}


@pytest.mark.parametrize("name", README_PICTURES)
def test_readme_pictures_are_current(tmp_path: Path, name: str) -> None:
    """The README shows docs/screenshots/NAME, and it is what `tracetui render` draws today (after a
    change to the screen: run the README's render commands again)."""
    readme = (REPO / "README.md").read_text()
    assert f"](docs/screenshots/{name})" in readme
    args = README_PICTURES[name]
    assert " ".join(args[-2:]) in readme  # the command line the README gives
    sample = default_trace()  # the installed sample (tests also run against the built wheel)
    assert sample.name == "mlp_eager.json.gz"
    done = render([str(sample), *args, "-o", name], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / name).read_bytes() == (REPO / "docs" / "screenshots" / name).read_bytes()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--node", "no_such_op"], "tracetui: no event named 'no_such_op' in mlp_eager.json.gz\n"),
        (["--size", "10x5"], "Invalid value for '--size'"),
        (["--view", "tables", "--node", "nope"], "tracetui: no row named 'nope' in the kernels table\n"),
    ],
)
def test_render_errors_are_one_line(tmp_path: Path, args: list[str], error: str) -> None:
    done = render([str(fixture("mlp_eager")), *args, "-o", "x.svg"], tmp_path)
    assert done.returncode == 2 and error in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "x.svg").exists()


def test_render_of_a_bad_trace_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"hello": "world"}')
    done = render(["notes.json", "-o", "x.svg"], tmp_path)
    assert (
        done.returncode == 2
        and done.stderr.startswith("tracetui: notes.json: ")
        and done.stderr.count("\n") == 1
    )
    assert not (tmp_path / "x.svg").exists()


# ---- export from a table ------------------------------------------------------------------------------


async def test_export_the_sorted_table_to_csv_and_parquet(in_tmp: Path) -> None:
    app = TraceApp(fixture("mlp_train_tbhandler_stack_memory.pt.trace"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        for key in ("1", "left", "left", "left", "s"):  # ops by calls, most first
            await pilot.press(key)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablesScreen)
        shown = [screen.table.row(i)["name"] for i in range(screen.table.row_count)]
        await pilot.press("E")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        assert dialog.query_one(Input).value == "tracetui_mlp_train_tbhandler_stack_memory_ops.csv"
        assert str(dialog.title_content).startswith("Export the Ops table: ") and "sorted by calls ▼" in str(
            dialog.title_content
        )
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TablesScreen)
        csv = pl.read_csv(in_tmp / "tracetui_mlp_train_tbhandler_stack_memory_ops.csv")
        assert csv["name"].to_list() == shown
        assert csv.columns == [c.key for c in screen.table.columns]
        assert notes(app)[-1].startswith("Wrote the Ops table (") and notes(app)[-1].endswith(" in ~/work")
        # Parquet by the suffix, same rows
        await pilot.press("E")
        await settle(pilot)
        field = app.screen.query_one(Input)
        field.value = "ops.parquet"
        await pilot.press("enter")
        await settle(pilot)
        assert pl.read_parquet(in_tmp / "ops.parquet")["name"].to_list() == shown


async def test_export_the_sorted_and_filtered_table(in_tmp: Path) -> None:
    """F keeps the rows containing a text (any text column, any case); E writes exactly those rows,
    in the table's sort; the filter stays with its table when another is shown."""
    app = TraceApp(fixture("mlp_train_tbhandler_stack_memory.pt.trace"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        for key in ("1", "left", "left", "left", "s"):  # ops by calls, most first
            await pilot.press(key)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablesScreen)
        every = screen.table.row_count
        await pilot.press("F")
        await pilot.press(*"BACKWARD")  # typed keys reach the field, not the screen's bindings
        await pilot.press("enter")
        await settle(pilot)
        kept = [screen.table.row(i) for i in range(screen.table.row_count)]
        ops = screen.tables["ops"].frame
        expected = ops.filter(ops["name"].str.to_lowercase().str.contains("backward", literal=True))
        assert 0 < len(kept) == expected.height < every
        assert all("backward" in row["name"].lower() for row in kept)
        calls = [row["calls"] for row in kept]
        assert calls == sorted(calls, reverse=True)
        hint = str(screen.query_one("#tables-hint", Static).render())
        assert f"“BACKWARD”: {len(kept)} of {every} rows" in hint
        await pilot.press("E")
        await settle(pilot)
        title = str(app.screen.title_content)  # type: ignore[attr-defined]
        assert f"{len(kept)} rows containing “BACKWARD”, sorted by calls ▼" in title
        await pilot.press("enter")
        await settle(pilot)
        csv = pl.read_csv(in_tmp / "tracetui_mlp_train_tbhandler_stack_memory_ops.csv")
        assert csv["name"].to_list() == [row["name"] for row in kept]
        assert csv["calls"].to_list() == calls
        # Another table and back: the filter and the sort are where they were left.
        await pilot.press("2")
        await settle(pilot)
        assert screen.table.filter_text == "" and screen.table.row_count > 0
        await pilot.press("1")
        await settle(pilot)
        assert screen.table.filter_text == "BACKWARD" and screen.table.row_count == len(kept)
        # Re-sorting keeps the filter; an empty filter shows every row again.
        await pilot.press("s")
        await settle(pilot)
        assert screen.table.row_count == len(kept) and screen.table.sort_descending is False
        await pilot.press("F", "enter")  # the field opens with the filter in it: Enter keeps it
        await settle(pilot)
        assert screen.table.row_count == len(kept)
        await pilot.press("F")
        app.screen.query_one("#table-filter", Input).value = ""
        await pilot.press("enter")
        await settle(pilot)
        assert screen.table.row_count == every and screen.table.filter_text == ""
        await pilot.press("F", "z", "escape")  # Esc: the field closes, the filter is unchanged
        await settle(pilot)
        assert isinstance(app.screen, TablesScreen) and screen.table.row_count == every


def test_filter_rows_reads_every_shown_text_column() -> None:
    columns = [Column("name", "name", 0, "left"), Column("ops", "ops", 0, "left"), Column("n", "n", 5)]
    frame = pl.DataFrame(
        {"name": ["GEMM a", "relu", None, "x"], "ops": [["aten::mm"], ["aten::relu"], ["aten::MM"], []]}
    ).with_columns(n=pl.Series([3, 2, 1, 0]), hidden=pl.Series(["mm", "mm", "mm", "mm"]))
    assert filter_rows(frame, columns, "mm")["n"].to_list() == [3, 1]  # any case; a list by its items
    assert filter_rows(frame, columns, "  gemm ")["n"].to_list() == [3]
    assert filter_rows(frame, columns, "")["n"].to_list() == [3, 2, 1, 0]
    assert filter_rows(frame, columns, ".*")["n"].to_list() == []  # literal, not a pattern
    assert filter_rows(frame, [Column("n", "n", 5)], "3").height == 0  # no text column: no row


async def test_export_escapes_formulas_like_the_export_command(tmp_path: Path, in_tmp: Path) -> None:
    """A trace name that a spreadsheet would run: the same escaping as `tracetui export`."""
    doc = json.loads(gzip.decompress(fixture("mlp_eager").read_bytes()))
    for event in doc["traceEvents"]:
        if event.get("name") == "aten::gelu":
            event["name"] = '=HYPERLINK("http://x","y")'
    trace = tmp_path / "formula.json"
    trace.write_text(json.dumps(doc))
    app = TraceApp(trace)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        for key in ("1", "E", "enter"):
            await pilot.press(key)
            await settle(pilot)
    text = (in_tmp / "tracetui_formula_ops.csv").read_text()
    assert "'=HYPERLINK(" in text and "\n=HYPERLINK" not in text and ",=HYPERLINK" not in text
    cli = subprocess.run(
        [sys.executable, "-m", "tracetui", "export", str(trace), "--table", "ops"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "'=HYPERLINK(" in cli.stdout


async def test_export_errors_and_escape(in_tmp: Path) -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("2", "E")
        await settle(pilot)
        app.screen.query_one(Input).value = "kernels.xlsx"
        await pilot.press("enter")
        await settle(pilot)
        assert "kernels.xlsx: end the name with .csv, .parquet or .json" in notes(app)[-1]
        await pilot.press("E")
        await settle(pilot)
        app.screen.query_one(Input).value = "no/such/folder/k.csv"
        await pilot.press("enter")
        await settle(pilot)
        assert notes(app)[-1].startswith("no/such/folder/k.csv: cannot write:")
        await pilot.press("E", "escape")
        await settle(pilot)
        assert isinstance(app.screen, TablesScreen)
    assert list(in_tmp.iterdir()) == []  # nothing written, no temporary file left


# ---- export the subtree -------------------------------------------------------------------------------


async def test_export_the_subtree_under_the_cursor(in_tmp: Path) -> None:
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await goto(pilot, "aten::linear", nth=2)
        tree = tree_of(app)
        key = tree.cursor_key
        assert tree.model is not None and isinstance(key, int)
        await pilot.press("E")
        await settle(pilot)
        assert app.screen.query_one(Input).value == "tracetui_mlp_eager_aten_linear.json"
        await pilot.press("enter")
        await settle(pilot)
        records = json.loads((in_tmp / "tracetui_mlp_eager_aten_linear.json").read_text())
        expected, truncated = subtree_frame(tree.model, key, app.screen.trace.t0_ns)  # type: ignore[attr-defined]
        assert not truncated and records == expected.to_dicts()
        assert records[0]["event_id"] == key and records[0]["parent"] is None and records[0]["depth"] == 0
        names = [r["label"] for r in records]
        assert names[:4] == ["aten::linear", "aten::t", "aten::transpose", "aten::as_strided"]
        assert any(r["kind"] == "kernel" for r in records)
        for record in records[1:]:  # preorder: a parent comes before its children, one level up
            parent = records[record["parent"]]
            assert parent["index"] < record["index"] and parent["depth"] == record["depth"] - 1
        assert notes(app)[-1].startswith(f"Wrote the subtree ({len(records)} rows) to tracetui_mlp_eager")


def test_subtree_of_a_deep_stack_does_not_recurse(deep_path: Path) -> None:
    """3 000 nested python frames export like a flat list (no recursion)."""
    import tracetui
    from tracetui.views.tree import TreeModel

    trace = tracetui.load(deep_path)
    model = TreeModel(trace)
    top = model.tops()[0]
    frame, truncated = subtree_frame(model, top, trace.t0_ns)
    assert not truncated and frame["depth"].max() >= 3000
    cut, truncated = subtree_frame(model, top, trace.t0_ns, limit=10)
    assert truncated and cut.height == 10


async def steady_cursor(pilot) -> None:
    """The dialog's field without its blinking cursor: on a loaded machine the picture could be taken
    in either half of a blink."""
    pilot.app.screen.query_one(Input).cursor_blink = False
    await pilot.pause()


def test_snapshot_export_dialog(snap_compare, in_tmp: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await goto(pilot, "aten::mm")
        await pilot.press("E")
        await settle(pilot)
        await steady_cursor(pilot)

    assert snap_compare(TraceApp(fixture("mlp_eager")), terminal_size=WIDE, run_before=run_before)


def test_snapshot_filtered_table(snap_compare, in_tmp: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("2", "F", *"gemm", "enter")
        await settle(pilot)

    assert snap_compare(TraceApp(fixture("mlp_eager")), terminal_size=WIDE, run_before=run_before)


def test_snapshot_table_export_dialog_at_80x24(snap_compare, in_tmp: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in ("2", "E"):
            await pilot.press(key)
            await settle(pilot)
        await steady_cursor(pilot)

    assert snap_compare(TraceApp(fixture("mlp_eager")), terminal_size=(80, 24), run_before=run_before)
