"""`tracetui diff` / `tracetui check` through the CLI: output, JSON and exit codes (0, 1, 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.compare.conftest import EXPECT, FIXTURES, REPO
from tracetui.cli import cli
from tracetui.commands.capture import _after
from tracetui.commands.check import run_check
from tracetui.errors import TraceError

EAGER = str(FIXTURES / "mlp_eager.json.gz")
COMPILED = str(FIXTURES / "mlp_compiled.json.gz")
EAGER_EXPECT = str(EXPECT / "mlp_eager.toml")


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACETUI_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["COLUMNS"] = "160"
    return subprocess.Popen(
        [sys.executable, "-m", "tracetui", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str, str, Path]]:
    """The real ``main`` (it ends the process), run side by side in subprocesses."""
    cwd = tmp_path_factory.mktemp("cli")
    bad = cwd / "bad.toml"
    bad.write_text('[[expect]]\nannotation = "mlp_fwd"\nkernel_per_call = 5\n')
    commands = {
        "pass": ["check", EAGER, "--expect", EAGER_EXPECT],
        "fail": ["check", COMPILED, "--expect", EAGER_EXPECT, "--json"],
        "bad_file": ["check", EAGER, "--expect", str(bad)],
        "capture_bad_file": ["capture", "mlp", "--expect", str(bad)],
    }
    procs = {name: _start(args, cwd) for name, args in commands.items()}
    results = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        results[name] = (proc.returncode, out, err, cwd)
    return results


def test_check_passes_with_exit_0(runs: dict[str, tuple[int, str, str, Path]]) -> None:
    code, out, err, _ = runs["pass"]
    assert code == 0, err
    assert "check mlp_eager.json.gz against mlp_eager.toml" in out
    assert "annotation mlp_fwd: kernels_per_call = 5" in out and "5 in each of 3 calls" in out
    assert "all 22 checks passed" in out and "FAIL" not in out


def test_check_failure_exits_1_and_json_says_where(runs: dict[str, tuple[int, str, str, Path]]) -> None:
    code, out, err, _ = runs["fail"]
    assert code == 1, err
    data = json.loads(out)
    assert data["schema"] == "tracetui.check/1" and data["passed"] is False
    assert data["counts"]["failed"] > 0 and data["counts"]["checks"] == len(data["results"]) == 22
    assert set(data["results"][0]) == {
        "index",
        "line",
        "subject",
        "target",
        "per",
        "note",
        "label",
        "check",
        "key",
        "quantity",
        "comparison",
        "expected",
        "passed",
        "actual",
        "value",
        "event_id",
    }
    kernels = next(
        r for r in data["results"] if r["key"] == "kernels_per_call" and r["subject"] == "annotation"
    )
    assert (kernels["passed"], kernels["value"], kernels["actual"]) == (False, 4, "4 in each of 3 calls")
    assert kernels["line"] == 9 and kernels["event_id"] is not None


def test_bad_expectations_exit_2_on_one_line(runs: dict[str, tuple[int, str, str, Path]]) -> None:
    code, out, err, _ = runs["bad_file"]
    assert code == 2 and out == ""
    assert err.strip().endswith(
        "bad.toml: line 3: unknown key 'kernel_per_call' (did you mean 'kernels_per_call'?);"
        " see docs/compare.md for the keys"
    )
    assert len(err.strip().splitlines()) == 1


def test_bad_trace_is_a_trace_error(tmp_path: Path) -> None:
    # The CLI wrapper prints a TraceError on one line and exits 2 (tests/trace/test_bad_input.py).
    with pytest.raises(TraceError, match=r"missing\.json"):
        run_check(tmp_path / "missing.json", Path(EAGER_EXPECT))


def test_capture_reads_expectations_before_profiling(runs: dict[str, tuple[int, str, str, Path]]) -> None:
    code, _, err, cwd = runs["capture_bad_file"]
    assert code == 2 and "line 3: unknown key 'kernel_per_call'" in err
    assert not list(cwd.glob("*.json.gz")), "a trace was captured despite a bad expectations file"


def test_capture_after_step_returns_the_check_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert _after(Path(EAGER), open_=False, expect=Path(EAGER_EXPECT)) == 0
    assert _after(Path(COMPILED), open_=False, expect=Path(EAGER_EXPECT)) == 1
    out = capsys.readouterr().out
    assert "Annotations (per call)" in out  # the summary still prints first
    assert "all 22 checks passed" in out and "checks failed" in out


def test_diff_command_text_and_json() -> None:
    runner = CliRunner()
    text = runner.invoke(cli, ["diff", EAGER, COMPILED], catch_exceptions=False)
    assert text.exit_code == 0
    assert "What changed" in text.output and "replaced by 1 Inductor kernel" in text.output
    as_json = runner.invoke(cli, ["diff", EAGER, COMPILED, "--json"], catch_exceptions=False)
    data = json.loads(as_json.output)
    assert data["schema"] == "tracetui.diff/1" and data["a"]["name"] == "mlp_eager.json.gz"


def test_help_names_the_options() -> None:
    runner = CliRunner()
    check = runner.invoke(cli, ["check", "--help"]).output
    assert "--expect" in check and "Exit code 0" in check and "--json" in check
    diff = runner.invoke(cli, ["diff", "--help"]).output
    assert "Compare trace A (before) with trace B (after)" in diff and "--json" in diff
    capture = runner.invoke(cli, ["capture", "--help"]).output
    assert "--expect" in capture
