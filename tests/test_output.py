"""Output that cannot be written (issue 12, item 4): a file is written whole or not at all; a
full stdout is one line and exit 2, a closed one a quiet exit; never "internal error" (exit 3).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tracetui.output import write_file

FIXTURES = Path(__file__).parent / "fixtures"
TRACE = str(FIXTURES / "mlp_eager.json.gz")
RANKS = str(FIXTURES / "ranks" / "gloo_4rank_mlp")
EXPECT_FAILS = '[[expect]]\nop = "aten::addmm"\ncount = 1000\n'
ENV = dict(os.environ, TRACETUI_NO_CACHE="1")


def tracetui(*args: str, **kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tracetui", *args],
        stderr=subprocess.PIPE,
        env=ENV,
        **kwargs,  # type: ignore[call-overload]
    )


def commands(tmp_path: Path) -> dict[str, list[str]]:
    expect = tmp_path / "fails.toml"
    expect.write_text(EXPECT_FAILS)
    return {
        "summary": ["summary", TRACE],
        "summary --json": ["summary", "--json", TRACE],
        "export": ["export", TRACE],
        "export -o -": ["export", TRACE, "--table", "events", "--format", "json", "-o", "-"],
        "diff": ["diff", "--report", TRACE, TRACE],
        "diff --json": ["diff", "--json", TRACE, TRACE],
        "check": ["check", TRACE, "--expect", str(expect)],
        "check --json": ["check", "--json", TRACE, "--expect", str(expect)],
        "summary RANKS": ["summary", RANKS],
        "summary --json RANKS": ["summary", "--json", RANKS],
        "export RANKS": ["export", RANKS, "--table", "ranks"],
    }


NAMES = (
    "summary",
    "summary --json",
    "export",
    "export -o -",
    "diff",
    "diff --json",
    "check",
    "check --json",
    "summary RANKS",
    "summary --json RANKS",
    "export RANKS",
)


@pytest.mark.parametrize("name", NAMES)
def test_a_full_stdout_is_one_line_and_exit_2(tmp_path: Path, name: str) -> None:
    with open("/dev/full", "wb") as full:
        child = tracetui(*commands(tmp_path)[name], stdout=full)
        err = child.communicate(timeout=120)[1].decode()
    assert child.returncode == 2, err
    assert err == "tracetui: cannot write to stdout: No space left on device\n"


@pytest.mark.parametrize("name", NAMES)
def test_a_closed_stdout_ends_quietly(tmp_path: Path, name: str) -> None:
    child = tracetui(*commands(tmp_path)[name], stdout=subprocess.PIPE)
    assert child.stdout is not None
    child.stdout.close()  # the reader is gone before the first byte (`| head -0`)
    err = child.communicate(timeout=120)[1].decode()
    assert err == ""
    assert child.returncode == (1 if name.startswith("check") else 0)  # check's verdict stands


def small_disk() -> None:
    """In the child: files may not grow past 4 KiB (a full disk, as far as writes can tell)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_on_a_full_disk_leaves_no_partial_file(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"events.{fmt}"
    args = ["export", TRACE, "--table", "events", "--format", fmt, "-o", str(out)]
    child = tracetui(*args, stdout=subprocess.PIPE, preexec_fn=small_disk)
    err = child.communicate(timeout=120)[1].decode()
    assert child.returncode == 2, err
    assert err.startswith(f"tracetui: {out}: cannot write: ") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # neither the file nor the temporary one

    out.write_text("the old export\n")
    child = tracetui(*args, stdout=subprocess.PIPE, preexec_fn=small_disk)
    child.communicate(timeout=120)
    assert child.returncode == 2
    assert out.read_text() == "the old export\n" and list(tmp_path.iterdir()) == [out]


def test_write_file_cleans_up_and_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "t.csv"
    target.write_text("old")
    target.chmod(0o640)

    def fails(path: Path) -> None:
        path.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_file(target, fails)
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]
    write_file(target, lambda path: path.write_text("new"))
    assert target.read_text() == "new" and target.stat().st_mode & 0o777 == 0o640
    fresh = tmp_path / "fresh.csv"
    write_file(fresh, lambda path: path.write_text("x"))
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.parametrize("links", [True, False], ids=["hard link", "no hard links"])
def test_write_file_without_replace_never_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, links: bool
) -> None:
    """``replace=False`` (the explorer's exports): a name that exists, or that another process takes
    while the file is written, keeps what it holds; no temporary file is left."""
    if not links:  # a file system without hard links: an exclusive copy instead

        def no_link(source: object, target: object) -> None:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_link)
    taken = tmp_path / "taken.csv"
    taken.write_text("theirs")
    with pytest.raises(FileExistsError):
        write_file(taken, lambda path: path.write_text("mine"), replace=False)
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):
        write_file(tmp_path / "dangling.csv", lambda path: path.write_text("mine"), replace=False)
    raced = tmp_path / "raced.csv"

    def meanwhile(path: Path) -> None:
        path.write_text("mine")
        raced.write_text("theirs")  # another process takes the name

    with pytest.raises(FileExistsError):
        write_file(raced, meanwhile, replace=False)
    fresh = tmp_path / "fresh.csv"
    write_file(fresh, lambda path: path.write_text("mine"), replace=False)
    assert [taken.read_text(), raced.read_text(), fresh.read_text()] == ["theirs", "theirs", "mine"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dangling.csv",
        "fresh.csv",
        "raced.csv",
        "taken.csv",
    ]
