"""``tracetui capture``'s stages: plain lines when stderr is piped, a bar on a terminal; and no NumPy
warning from torch when numpy is missing."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tracetui.capture.progress import Stages

from .helpers import TINY_LINEAR, Run, cli_env

STAGE_LINES = [
    "warming up mlp on cpu: step 1/3",
    "warming up mlp on cpu: step 2/3",
    "warming up mlp on cpu: step 3/3",
    "profiler step 1/5 (wait)",
    "profiler step 2/5 (profiler warm-up)",
    "profiler step 3/5 (recording 1/3)",
    "profiler step 4/5 (recording 2/3)",
    "profiler step 5/5 (recording 3/3)",
    "exporting the trace",
]


def test_piped_capture_prints_one_plain_line_per_stage(cpu_captures: dict[str, Run]) -> None:
    run = cpu_captures["mlp"]
    assert run.returncode == 0, run.stderr
    done = re.findall(r"^(.*)… done in [\d.]+ s$", run.stderr, flags=re.MULTILINE)
    assert done == STAGE_LINES
    assert "\r" not in run.stderr and "\x1b" not in run.stderr  # no bar, no escape codes
    assert "━" not in run.stderr


def test_a_terminal_gets_a_bar_under_the_finished_stages() -> None:
    out = io.StringIO()
    with Stages(3, stream=out, live=True) as stages:
        for what in ("warming up", "profiler step 1/1 (recording 1/1)", "exporting the trace"):
            with stages.stage(what):
                pass
    text = out.getvalue()
    for what in ("warming up", "profiler step 1/1 (recording 1/1)", "exporting the trace"):
        assert f"{what}… done in 0.0 s" in text
    assert "━" in text  # the bar was drawn


@pytest.mark.slow  # a capture under a pty (~13 s)
def test_capture_on_a_terminal_draws_the_bar(tmp_path: Path) -> None:
    """The real command with its stderr on a pseudo-terminal: the bar (``━``, ``N/M``) is drawn and
    each finished stage is listed above it."""
    import os
    import pty

    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "tracetui", "capture", "linear", *TINY_LINEAR, "--steps", "1"],
            cwd=tmp_path,
            env=cli_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=follower,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal (Linux: EIO)
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=300) == 0
    finally:
        os.close(leader)
    text = b"".join(chunks).decode(errors="replace")
    assert "━" in text and re.search(r"\d/\d", text)  # the bar and its count
    listed = re.findall(r"(?:^|\x1b\[2K|\n)([a-z][^\r\n\x1b]*?)… done in [\d.]+ s", text)
    assert listed[-1] == "exporting the trace" and any(s.startswith("profiler step") for s in listed)


def test_a_failed_stage_says_so() -> None:
    out = io.StringIO()
    with pytest.raises(RuntimeError), Stages(2, stream=out, live=True) as stages, stages.stage("compiling"):
        raise RuntimeError("boom")
    assert "compiling… failed" in out.getvalue()


@pytest.fixture
def without_numpy(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import numpy`` fails, as on a machine without numpy, and warnings
    are shown (the other capture tests hide them)."""
    fake = tmp_path / "no_numpy" / "numpy"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n"
    )
    env = cli_env()
    env.pop("PYTHONWARNINGS")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(fake.parent), env.get("PYTHONPATH")]))
    return env


@pytest.mark.slow
def test_torch_warns_about_numpy_in_that_environment(without_numpy: dict[str, str]) -> None:
    """The condition is real: torch itself prints the warning there."""
    out = subprocess.run(
        [sys.executable, "-c", "import torch"], env=without_numpy, capture_output=True, text=True, timeout=300
    )
    assert "Failed to initialize NumPy" in out.stderr


@pytest.mark.slow
def test_capture_does_not_show_the_numpy_warning(without_numpy: dict[str, str], tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracetui",
            "capture",
            "linear",
            *TINY_LINEAR,
            "--steps",
            "1",
            "-o",
            "t.json.gz",
        ],
        cwd=tmp_path,
        env=without_numpy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    # torch's own warning is hidden; the summary after the capture may say in one line that numpy (a
    # dependency of tracetui's analyses, missing from this faked environment) is not installed
    assert "Failed to initialize NumPy" not in out.stderr and "_ARRAY_API" not in out.stderr
    assert "Traceback" not in out.stderr
    assert "exporting the trace… done in" in out.stderr


def test_each_warm_up_step_is_a_stage_and_the_first_compile_says_so() -> None:
    """Issue 37 item 7: the warm-up was one stage, silent for 82 s on a CPU in bf16."""
    from tracetui.workloads.runner import WARMUP_STEPS, warmup_label

    what = "compiling mlp (torch.compile, mode default)"
    assert [warmup_label(what, n, True) for n in range(WARMUP_STEPS)] == [
        f"{what}: step 1/3 (compiles the graph)",
        f"{what}: step 2/3",
        f"{what}: step 3/3",
    ]
    assert warmup_label("warming up mlp on cpu", 0, False) == "warming up mlp on cpu: step 1/3"
