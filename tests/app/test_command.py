"""``tracetui open``: the CLI's one-line errors, the bundled sample, and ``open_trace``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tracetui import sample_traces
from tracetui.app import launch
from tracetui.app.app import TraceApp
from tracetui.errors import TraceError


def run_cli(*args: str, cwd: Path) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "tracetui", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    return done.returncode, done.stderr


def test_missing_file_is_one_line_exit_2(tmp_path: Path) -> None:
    assert run_cli("open", "nope.json", cwd=tmp_path) == (
        2,
        "tracetui: nope.json: no such file or directory\n",
    )


def test_empty_file_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_bytes(b"")
    assert run_cli("open", "empty.json", cwd=tmp_path) == (2, "tracetui: empty.json: empty file\n")


def test_no_argument_opens_the_bundled_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[TraceApp] = []

    def fake_run(self: TraceApp) -> None:
        started.append(self)
        self._return_code = 0

    monkeypatch.setattr(TraceApp, "run", fake_run)
    assert launch.open_trace(None) == 0
    assert started[0].path == sample_traces.default_trace() and started[0].sample


def test_open_trace_passes_the_apps_exit_code(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_run(self: TraceApp) -> None:
        self._return_code = 2

    monkeypatch.setattr(TraceApp, "run", fake_run)
    assert launch.open_trace(sample_traces.default_trace()) == 2


def test_check_readable_raises_the_loaders_messages(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file or directory"):
        launch.check_readable(tmp_path / "missing.json")
    with pytest.raises(TraceError, match="directory holds no trace"):
        launch.check_readable(tmp_path)
    (tmp_path / "empty.json").write_bytes(b"")
    with pytest.raises(TraceError, match="empty file"):
        launch.check_readable(tmp_path / "empty.json")
    (tmp_path / "host.1.pt.trace.json").write_bytes(b"{")
    launch.check_readable(tmp_path)  # the directory's newest trace is readable
