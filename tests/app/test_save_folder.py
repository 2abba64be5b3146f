"""The explorer writes only in its save folder (``open --save-dir``, each tab of ``tracetui serve``),
and never over a file that exists without a yes (issue 35, item 1).

Before: the served explorer's ``E`` took any path the client typed, absolute, ``..`` or ``~``, and
replaced the file there (a client overwrote ``config.json`` with trace data).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import polars as pl
import pytest
from textual.widgets import Input

from tests.app.conftest import WIDE, fixture, settle
from tracetui.app.app import TraceApp
from tracetui.app.save_folder import SaveFolder
from tracetui.app.screens.export_dialog import ExportDialog
from tracetui.app.screens.replace_dialog import ReplaceDialog
from tracetui.app.screens.tables import TablesScreen
from tracetui.errors import TraceError


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """``(save folder, outside)``: the save folder under a home folder, which holds a file worth
    keeping (``~/config.json``), and a folder outside it that a link in the save folder points to."""
    home = tmp_path / "home"
    saves = home / "saves"
    outside = tmp_path / "outside"
    for folder in (saves, outside):
        folder.mkdir(parents=True)
    (home / "config.json").write_text('{"keep": true}')
    (outside / "config.json").write_text('{"keep": true}')
    (saves / "out").symlink_to(outside)  # a folder link out
    (saves / "link.csv").symlink_to(outside / "config.json")  # a file link out
    (saves / "sub").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    return saves, outside


OUTSIDE = {  # what a client typed, and the line it gets
    "../x.csv": "../x.csv: give a name in the save folder {saves} (no ..)",
    "sub/../../x.csv": "sub/../../x.csv: give a name in the save folder {saves} (no ..)",
    "{tmp}/x.csv": "{tmp}/x.csv: give a name in the save folder {saves}, not an absolute path",
    "/tmp/x.csv": "/tmp/x.csv: give a name in the save folder {saves}, not an absolute path",
    "~/x.csv": "~/x.csv: give a name in the save folder {saves} (no ~)",
    "~/config.json": "~/config.json: give a name in the save folder {saves} (no ~)",
    "out/x.csv": "out/x.csv: leads out of the save folder {saves}: not written",
    "link.csv": "link.csv: is a link: not written through",
    "nowhere/x.csv": "nowhere/x.csv: no such folder in the save folder {saves}",
}


@pytest.mark.parametrize("typed", OUTSIDE)
def test_a_name_outside_the_save_folder_is_refused(places: tuple[Path, Path], typed: str) -> None:
    saves, _ = places
    tmp = saves.parent.parent
    with pytest.raises(TraceError) as refused:
        SaveFolder.only(saves).target(typed.format(tmp=tmp))
    assert str(refused.value) == OUTSIDE[typed].format(saves=saves, tmp=tmp)


def test_names_inside_the_save_folder(places: tuple[Path, Path]) -> None:
    saves, _ = places
    folder = SaveFolder.only(saves)
    assert folder.target("x.csv") == saves / "x.csv"
    assert folder.target("sub/x.csv") == saves / "sub" / "x.csv"
    assert folder.target("./sub//x.csv") == saves / "sub" / "x.csv"
    with pytest.raises(TraceError, match="not a regular file"):
        folder.target("sub")
    # a save folder reached through a link is the folder it resolves to
    (saves.parent / "via").symlink_to(saves)
    assert SaveFolder.only(saves.parent / "via").target("x.csv") == saves / "x.csv"
    assert SaveFolder.here().target("~/x.csv") == saves.parent / "x.csv"  # a terminal's: any path


async def export_as(app: TraceApp, pilot, typed: str) -> None:  # type: ignore[no-untyped-def]
    """E on the kernels table, ``typed`` as the name, Enter."""
    if not isinstance(app.screen, TablesScreen):
        await pilot.press("2")
        await settle(pilot)
    await pilot.press("E")
    await settle(pilot)
    assert isinstance(app.screen, ExportDialog)
    app.screen.query_one(Input).value = typed
    await pilot.press("enter")
    await settle(pilot)


def _state(path: Path) -> tuple[int, int] | None:
    """A file's size and time of change (None: no file)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return info.st_size, info.st_mtime_ns


def every_file(*folders: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes()
        for folder in folders
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


async def test_the_served_explorer_writes_nothing_outside_its_folder(places: tuple[Path, Path]) -> None:
    """Each name of :data:`OUTSIDE` typed into E, as a client did: a notification, nothing written
    anywhere; a plain name lands in the save folder."""
    saves, _ = places
    tmp = saves.parent.parent
    before = every_file(tmp)
    in_tmp = _state(Path("/tmp/x.csv"))
    app = TraceApp(fixture("mlp_eager"), save_folder=SaveFolder.only(saves))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        for typed in OUTSIDE:
            await export_as(app, pilot, typed.format(tmp=tmp))
            said = [str(n.message) for n in app._notifications][-1]
            assert said == OUTSIDE[typed].format(saves=saves, tmp=tmp)
            assert every_file(tmp) == before, typed
        assert _state(Path("/tmp/x.csv")) == in_tmp
        await export_as(app, pilot, "kernels.csv")
    assert pl.read_csv(saves / "kernels.csv").height > 0
    assert set(every_file(tmp)) - set(before) == {str(saves / "kernels.csv")}


async def test_an_existing_file_is_replaced_only_after_a_yes(places: tuple[Path, Path]) -> None:
    saves, _ = places
    kept = saves / "config.json"
    kept.write_text('{"keep": true}')
    app = TraceApp(fixture("mlp_eager"), save_folder=SaveFolder.only(saves))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await export_as(app, pilot, "config.json")
        assert isinstance(app.screen, ReplaceDialog)
        assert str(app.screen.question) == "config.json exists in ~/saves. Replace it?"
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, TablesScreen)
        assert kept.read_text() == '{"keep": true}'
        assert [str(n.message) for n in app._notifications][-1] == "Kept config.json: nothing written"
        await export_as(app, pilot, "config.json")
        await pilot.press("escape")
        await settle(pilot)
        assert kept.read_text() == '{"keep": true}'
        await export_as(app, pilot, "config.json")
        await pilot.press("y")
        await settle(pilot)
        assert kept.read_text().startswith("[{") and "nvjet" in kept.read_text()
    assert sorted(p.name for p in saves.iterdir()) == [
        "config.json",
        "link.csv",
        "out",
        "sub",
    ]  # no temporary


async def test_a_file_that_appears_meanwhile_is_not_replaced(places: tuple[Path, Path]) -> None:
    """Between the question (none: the name was free) and the write, another process makes the
    file: the write fails, the file stays."""
    saves, _ = places
    app = TraceApp(fixture("mlp_eager"), save_folder=SaveFolder.only(saves))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        screen_type = TablesScreen
        original = screen_type._export_to

        def racing(self: TablesScreen, target: Path, replace: bool) -> None:
            target.write_text("theirs")
            original(self, target, replace)

        screen_type._export_to = racing  # type: ignore[method-assign]
        try:
            await export_as(app, pilot, "race.json")
        finally:
            screen_type._export_to = original  # type: ignore[method-assign]
        assert [str(n.message) for n in app._notifications][
            -1
        ] == f"{saves}/race.json: exists already: not replaced"
    assert (saves / "race.json").read_text() == "theirs"


async def test_a_terminal_explorer_asks_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.csv").write_text("mine")
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await export_as(app, pilot, "k.csv")
        assert isinstance(app.screen, ReplaceDialog)
        await pilot.press("n")
        await settle(pilot)
    assert (tmp_path / "k.csv").read_text() == "mine"


@pytest.mark.parametrize("size", [WIDE, (80, 24)], ids=["wide", "80x24"])
def test_snapshot_replace_dialog(snap_compare, places: tuple[Path, Path], size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    saves, _ = places
    (saves / "tracetui_mlp_eager_kernels.csv").write_text("x")

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await export_as(pilot.app, pilot, "tracetui_mlp_eager_kernels.csv")

    app = TraceApp(fixture("mlp_eager"), save_folder=SaveFolder.only(Path("saves")))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def test_a_served_explorer_without_a_save_folder_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tracetui serve`` without ``--save-dir``: each name typed into E, a path outside too, goes
    to the browser as a download of its last part; nothing is written on the machine."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.json").write_text("mine")
    sent: list[tuple[str, bytes]] = []

    def deliver(self: TraceApp, binary: io.BytesIO, **options: object) -> None:
        sent.append((str(options["save_filename"]), binary.getvalue()))

    monkeypatch.setattr(TraceApp, "is_web", property(lambda self: True))
    monkeypatch.setattr(TraceApp, "deliver_binary", deliver)
    before = every_file(tmp_path)
    app = TraceApp(fixture("mlp_eager"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        said = []
        for typed in (
            "kernels.csv",
            "../../config.json",
            "~/k.parquet",
            str(tmp_path / "config.json"),
            "k.txt",
        ):
            await export_as(app, pilot, typed)
            said.append([str(n.message) for n in app._notifications][-1])  # each: they expire
    assert every_file(tmp_path) == before
    assert [name for name, _ in sent] == ["kernels.csv", "config.json", "k.parquet", "config.json"]
    assert said[0] == (
        "Sent the Kernels table (5 rows) to the browser as kernels.csv (your downloads folder)"
    ), said
    assert said[-1] == "k.txt: end the name with .csv, .parquet or .json"
    assert pl.read_csv(io.BytesIO(sent[0][1])).height == 5
    assert pl.read_parquet(io.BytesIO(sent[2][1])).height == 5
    assert "nvjet" in sent[1][1].decode()
