"""``tracetui serve``: the command line it hands the shell, the port, the page, and the explorer in a
real headless browser (Debian's chromium driven by Playwright)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import NoReturn

import pytest

from tests.app.conftest import fixture
from tests.app.serving import served
from tracetui import settings
from tracetui.app.serve import command_line

pytest.importorskip("textual_serve", reason="tracetui[serve] is not installed")

HOSTILE_NAMES = [
    "my trace.json.gz",
    'it\'s "quoted".json.gz',
    "a; touch PWNED; b.json.gz",
    "$(touch PWNED).json.gz",
    "`touch PWNED`.json.gz",
    "--expect.json.gz",
    "new\nline | & > < * ?.json.gz",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_command_line_keeps_a_hostile_file_name_one_word(tmp_path: Path, name: str) -> None:
    """The shell runs the command line textual-serve is given: the file name stays one argument
    after ``--`` and nothing in it runs."""
    trace = tmp_path / name
    trace.write_bytes(b"{}")
    saves = tmp_path / f"saved {name}"  # the save folder's name too
    echo = tmp_path / "argv.py"
    echo.write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    # The interpreter word swapped for a script that prints the arguments it was given.
    line = f"{sys.executable} {echo} " + command_line(trace, saves, python="PY").split(" ", 1)[1]
    out = subprocess.run(["sh", "-c", line], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["-m", "tracetui", "open", "--save-dir", str(saves), "--", str(trace)]
    assert not (tmp_path / "PWNED").exists()


def test_the_served_explorer_gets_max_inflate_on_its_command_line(tmp_path: Path) -> None:
    """``tracetui --max-inflate R serve``: each tab's ``tracetui open`` is given the option (before,
    through the environment the CLI wrote)."""
    trace = tmp_path / "t.json"
    assert (
        command_line(trace, python="PY", max_inflate=0.0) == f"PY -m tracetui --max-inflate 0 open -- {trace}"
    )
    assert command_line(trace, python="PY") == f"PY -m tracetui open -- {trace}"


def test_port_taken_is_one_line_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "tracetui", "serve", str(fixture("mlp_eager")), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode == 2
    assert out.stderr == f"tracetui: port {port} on 127.0.0.1 is taken; pick another with --port N\n"
    assert out.stdout == ""


def test_missing_trace_fails_before_listening(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tracetui", "serve", str(tmp_path / "nope.json"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "no such file or directory" in out.stderr


def test_page_title_and_url_line_neutralise_the_file_name(tmp_path: Path) -> None:
    """A file name with HTML and an escape byte: escaped on the page, replaced on the terminal; the
    server listens on localhost only."""
    name = "<img src=x onerror=alert(1)>\x1b[31mred.json.gz"
    trace = tmp_path / name
    shutil.copy(fixture("mlp_eager"), trace)
    with served(trace) as (url, line):
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        assert "\x1b" not in line and "\ufffd[31mred.json.gz" in line
        page = ""
        for _ in range(100):
            try:
                page = urllib.request.urlopen(url, timeout=5).read().decode()
                break
            except OSError:
                time.sleep(0.1)
    assert "tracetui · &lt;img src=x onerror=alert(1)&gt;\ufffd[31mred.json.gz" in page
    assert "<img src=x" not in page and "\x1b" not in page
    assert str(tmp_path) not in page  # the command line (with the absolute path) is not on the page


# ---- the real browser ------------------------------------------------------------------------------

CHROMIUM = str(settings.CHROMIUM.value())
# Generous on a loaded 2-core CI machine (each tab starts a `tracetui open` process); the test
# stops waiting as soon as the tree is on the page (about 6 s here).
BROWSER_TIMEOUT_S = 120
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # without these, this machine's closed network refuses
    "--disable-component-update",  # the browser's own connections and it stalls
    "--disable-sync",
]
# xterm.js draws on a canvas: the text is read from the page's terminal itself. textual-serve's page
# script keeps its terminal in ``this.terminal``; this hook (run before the page's scripts) sees that
# assignment and keeps the terminal where the test can read its screen.
TERMINAL_HOOK = """
Object.defineProperty(Object.prototype, 'terminal', {configurable: true, set(value) {
  Object.defineProperty(this, 'terminal', {value, writable: true, configurable: true, enumerable: true});
  if (value && value.buffer && value.buffer.active) {
    window.__terminals = (window.__terminals || []).concat([value]);
  }
}});
"""
SCREEN_TEXT = """() => {
  const terminal = (window.__terminals || [])[0];
  if (!terminal) return null;
  const buffer = terminal.buffer.active, lines = [];
  for (let y = 0; y < terminal.rows; y++) {
    const line = buffer.getLine(y);
    lines.push(line ? line.translateToString(true) : '');
  }
  return lines.join('\\n');
}"""


def artifacts(tmp_path: Path) -> Path:
    """Where the browser test keeps its screenshot: ``$TRACETUI_TEST_ARTIFACTS`` (CI), else pytest's
    temporary folder of the test."""
    folder = settings.TEST_ARTIFACTS.get() or tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def missing_browser(reason: str) -> NoReturn:
    """Skip, with the reason; where ``TRACETUI_REQUIRE_BROWSER`` is set (CI, which installs the
    browser), fail instead: there the browser test must run."""
    if settings.REQUIRE_BROWSER.value():
        pytest.fail(f"{reason}, and TRACETUI_REQUIRE_BROWSER is set", pytrace=False)
    pytest.skip(reason)


def test_explorer_in_a_real_browser(tmp_path: Path) -> None:
    """The sample trace's tree, as the explorer opens it, is on the page of a headless chromium; ctrl+s
    there sends the screen's SVG to the browser as a download."""
    try:
        from playwright import sync_api
    except ImportError:
        missing_browser("playwright is not installed (pip install -e '.[test]')")
    if not os.access(CHROMIUM, os.X_OK):
        missing_browser(f"no browser at {CHROMIUM} (apt-get install chromium, or set TRACETUI_CHROMIUM)")
    started = time.monotonic()
    screen, download = None, None
    with served(fixture("mlp_eager")) as (url, _), sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),  # a fresh user-data-dir
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 800},
            timeout=BROWSER_TIMEOUT_S * 1000,
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(BROWSER_TIMEOUT_S * 1000)
            page.add_init_script(TERMINAL_HOOK)
            page.goto(url, timeout=BROWSER_TIMEOUT_S * 1000)
            deadline = time.monotonic() + BROWSER_TIMEOUT_S
            while time.monotonic() < deadline:
                screen = page.evaluate(SCREEN_TEXT)
                if screen and "nvjet gemm bf16 256x128 coopA TNT" in screen and "Roofline" in screen:
                    break
                time.sleep(0.25)
            shot = artifacts(tmp_path) / "serve_mlp_eager.png"
            page.screenshot(path=str(shot))
            if screen is not None:
                page.evaluate("() => window.__terminals[0].focus()")  # keys go to the terminal
                with page.expect_download(timeout=BROWSER_TIMEOUT_S * 1000) as saved:
                    page.keyboard.press("Control+s")
                download = (saved.value.suggested_filename, Path(saved.value.path()).read_text())
        finally:
            browser.close()
    assert screen is not None, "the page's terminal was not found (textual-serve's page changed?)"
    lines = screen.splitlines()
    assert lines[0].split()[:2] == ["tracetui", "mlp_eager.json.gz"]
    # The hottest chain open down to its GEMM kernel, as in the terminal.
    chain = ("▼ ◆ ProfilerStep#4", "▼ ○ aten::mm", "▼ → cuLaunchKernelEx", "■ nvjet gemm bf16 256x128")
    for row in chain:
        assert any(row in line for line in lines), row
    assert any("aten::t" in line and "no kernel" in line for line in lines)
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert download is not None
    name, svg = download
    assert name == "tracetui_mlp_eager_tree.svg"
    assert svg.startswith("<svg") and "nvjet&#160;gemm&#160;bf16&#160;256x128" in svg
    print(f"browser test: {time.monotonic() - started:.1f} s, screenshot {shot}")
