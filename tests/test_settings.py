"""The settings (``tracetui/settings.py``): every ``TRACETUI_*`` variable declared once, read at its use,
a bad value one line and exit 2; the one size parser's two unit families; the docs page is the table."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracetui import settings
from tracetui.cli import cli
from tracetui.formatting import parse_size
from tracetui.report import loading
from tracetui.settings import SettingError
from tracetui.trace import prefetch

REPO = Path(__file__).resolve().parents[1]
TRACE = str(REPO / "tests" / "fixtures" / "mlp_eager.json.gz")


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m tracetui ARGS`` with ``env`` over a clean environment of settings."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TRACETUI_", "_TRACETUI_", "_RJEM_"))}
    return subprocess.run(
        [sys.executable, "-m", "tracetui", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "TRACETUI_NO_CACHE": "1", **env},
        cwd=REPO,
    )


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        # issue 35 item 12 and issue 36: these ended in exit 3 (or a traceback at import)
        ("TRACETUI_CACHE_MIN_BYTES", "abc", "not a size (e.g. 8M, 2GiB)"),
        ("TRACETUI_CACHE_MAX", "1e400", "not a size (e.g. 8M, 2GiB)"),
        ("TRACETUI_SPILL_MIN_BYTES", "4 parsecs", "not a size (e.g. 8M, 2GiB)"),
        # issue 35 item 15: these removed the gzip-bomb cap without a word
        ("TRACETUI_MAX_INFLATE", "nan", "not a number of at least 0 (0: no cap)"),
        ("TRACETUI_MAX_INFLATE", "-1", "not a number of at least 0 (0: no cap)"),
        ("TRACETUI_MAX_INFLATE", "inf", "not a number of at least 0 (0: no cap)"),
        # these were ignored without a word (or, NO_CACHE=0, turned the cache off)
        ("TRACETUI_WORKERS", "many", "not a whole number of at least 1"),
        ("TRACETUI_NO_CACHE", "maybe", "not a flag (1 or 0)"),
        ("TRACETUI_DEBUG", "verbose", "not a flag (1 or 0)"),
        ("TRACETUI_TIMING", "2", "not a flag (1 or 0)"),
        ("TRACETUI_KEEP_FREED", "sometimes", "not a flag (1 or 0)"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(tmp_path: Path, name: str, value: str, expected: str) -> None:
    env = {name: value}
    if "CACHE" in name:  # the cache on, the trace worth caching: the cache's settings are used
        env = {
            "TRACETUI_NO_CACHE": "0",
            "TRACETUI_CACHE_DIR": str(tmp_path),
            "TRACETUI_CACHE_MIN_BYTES": "0",
        } | env
    run = REPO / "tests" / "fixtures" / "ranks" / "gloo_4rank_mlp"
    done = run_cli("summary", str(run if "WORKERS" in name else TRACE), **env)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"tracetui: {name}={value}: {expected}\n"
    assert done.stdout == ""


def test_good_settings_of_every_kind_are_read(tmp_path: Path) -> None:
    done = run_cli(
        "summary",
        "--json",
        TRACE,
        TRACETUI_NO_CACHE="no",
        TRACETUI_CACHE_DIR=str(tmp_path),
        TRACETUI_CACHE_MIN_BYTES="0",  # before: "8M" ended in "internal error: ValueError" at import
        TRACETUI_CACHE_MAX="2 GB",
        TRACETUI_MAX_INFLATE="50",
        TRACETUI_SPILL_MIN_BYTES="8M",
        TRACETUI_DEBUG="1",
    )
    assert done.returncode == 0, done.stderr
    assert '"schema": "tracetui.summary/1"' in done.stdout
    assert any(tmp_path.iterdir())  # the trace was cached: the cache's settings held


def test_importing_reads_no_setting() -> None:
    """A bad value is said where the setting is used, never when a module is imported."""
    code = "import tracetui.cli, tracetui.trace.cache, tracetui.trace.spill, tracetui.trace.source"
    env = {**os.environ, "TRACETUI_CACHE_MIN_BYTES": "abc", "TRACETUI_SPILL_MIN_BYTES": "abc"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr


def test_the_option_is_read_as_the_setting_is() -> None:
    done = run_cli("--max-inflate", "nan", "summary", TRACE)
    assert done.returncode == 2
    expected = "not a number of at least 0 (0: no cap)"
    assert done.stderr == f"tracetui: Invalid value for '--max-inflate': nan: {expected} (see --help)\n"
    assert run_cli("--max-inflate", "0", "summary", TRACE).returncode == 0


def test_get_reads_at_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACETUI_CACHE_MAX", raising=False)
    assert settings.CACHE_MAX.get() == 4 << 30
    monkeypatch.setenv("TRACETUI_CACHE_MAX", "  ")  # empty: the default
    assert settings.CACHE_MAX.get() == 4 << 30
    monkeypatch.setenv("TRACETUI_CACHE_MAX", "512MiB")
    assert settings.CACHE_MAX.get() == 512 << 20
    monkeypatch.setenv("TRACETUI_CACHE_MAX", "lots")
    with pytest.raises(SettingError, match=r"^TRACETUI_CACHE_MAX=lots: not a size \(e\.g\. 8M, 2GiB\)$"):
        settings.CACHE_MAX.get()
    monkeypatch.setenv("TRACETUI_WORKERS", "0")
    with pytest.raises(SettingError, match="not a whole number of at least 1"):
        settings.WORKERS.get()
    for text, value in (
        ("1", True),
        ("YES", True),
        ("on", True),
        ("0", False),
        ("False", False),
        ("off", False),
    ):
        monkeypatch.setenv("TRACETUI_NO_CACHE", text)
        assert settings.NO_CACHE.get() is value


@pytest.mark.parametrize(
    ("text", "size"),
    [
        # binary: the IEC units and the bare letters
        ("1KiB", 1 << 10),
        ("8M", 8 << 20),
        ("8 m", 8 << 20),
        ("2GiB", 2 << 30),
        ("2G", 2 << 30),
        ("1.5 T", 3 << 39),
        ("1 tib", 1 << 40),
        # decimal: the SI units
        ("1kB", 1000),
        ("8 MB", 8 * 10**6),
        ("2GB", 2 * 10**9),
        ("2 gb", 2 * 10**9),
        ("1TB", 10**12),
        # bytes
        ("512 B", 512),
        ("4096", 4096),
    ],
)
def test_sizes_read_both_unit_families_as_written(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_every_variable_is_declared_once_and_the_docs_are_the_table() -> None:
    names = [s.name for s in settings.SETTINGS]
    assert len(names) == len(set(names))
    used: set[str] = set()
    for folder in ("tracetui", "workloads", "benchmarks", "tests", ".ci"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix in ("", ".py", ".sh", ".toml") and path != Path(__file__):
                used |= set(re.findall(r"\bTRACETUI_[A-Z_]+[A-Z]", path.read_text(errors="replace")))
    assert used <= set(names), f"declare in tracetui/settings.py: {sorted(used - set(names))}"
    page = (REPO / "docs" / "settings.md").read_text()
    assert page == settings.markdown(), "write it again: python -m tracetui.settings > docs/settings.md"


def test_given_hands_on_the_settings_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for setting in settings.SETTINGS:
        monkeypatch.delenv(setting.name, raising=False)
    monkeypatch.setenv("TRACETUI_WORKERS", "3")
    monkeypatch.setenv("TRACETUI_" + "UNDECLARED", "x")
    assert settings.given() == {"TRACETUI_WORKERS": "3"}


def test_max_inflate_reaches_the_load_as_a_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--max-inflate`` is handed to the load; the CLI writes no variable (before: it set
    ``TRACETUI_MAX_INFLATE`` for the load to read)."""
    monkeypatch.delenv("TRACETUI_MAX_INFLATE", raising=False)
    seen: list[float | None] = []
    monkeypatch.setattr(prefetch, "start", lambda path, max_inflate=None, *_: seen.append(max_inflate))
    real = loading.load_with_progress
    monkeypatch.setattr(
        loading, "load_with_progress", lambda path, ratio=None, workers=None: seen.append(ratio) or real(path)
    )
    result = CliRunner().invoke(cli, ["--max-inflate", "7", "summary", TRACE], catch_exceptions=False)
    assert result.exit_code == 0 and seen == [7.0, 7.0]
    assert "TRACETUI_MAX_INFLATE" not in os.environ
