"""Helpers for the workload and capture tests: run the CLI in a subprocess, read what it wrote."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tracetui.workloads

TINY_MLP = ["--batch", "4", "--seq", "2", "--dim", "8", "--hidden", "16"]
TINY_LINEAR = ["--batch", "4", "--in-dim", "8", "--out-dim", "16"]
TINY_RANKS = ["--batch", "2", "--seq", "4", "--dim", "16", "--hidden", "32"]
STRAGGLER_MS = 60.0  # the tests' straggler, 40-80 ms a step: far above a busy machine's noise
# From the installed package (workloads/expect/ in the repository), so the tests run against a wheel too.
DISTRIBUTED_EXPECT = Path(tracetui.workloads.__file__).parent / "expect" / "distributed.toml"


@dataclass
class Run:
    """A finished ``tracetui`` subprocess."""

    returncode: int
    stdout: str
    stderr: str
    cwd: Path


def cli_env(*, cpu: bool = True) -> dict[str, str]:
    """Environment for a child ``python -m tracetui`` (the installed tracetui: editable or not),
    warnings off, CPU-only if asked."""
    env = {k: v for k, v in os.environ.items() if k != "TRACETUI_DEBUG"}
    env["PYTHONWARNINGS"] = "ignore"
    if cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def popen_cli(args: list[str], cwd: Path, *, cpu: bool = True) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tracetui", *args],
        cwd=cwd,
        env=cli_env(cpu=cpu),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], cwd: Path, timeout: float = 300) -> Run:
    out, err = proc.communicate(timeout=timeout)
    return Run(proc.returncode, out, err, cwd)


def run_cli(*args: str, cwd: Path, cpu: bool = True) -> Run:
    """Run ``python -m tracetui ARGS`` in ``cwd`` and wait for it."""
    return finish(popen_cli(list(args), cwd, cpu=cpu), cwd)


def read_trace(path: Path) -> dict[str, Any]:
    """The JSON object of a (gzipped) Chrome trace."""
    with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as f:
        return json.load(f)


def complete_names(trace: dict[str, Any], cat: str | None = None) -> list[str]:
    """Names of the complete ("X") events, optionally of one category."""
    return [
        e["name"] for e in trace["traceEvents"] if e.get("ph") == "X" and (cat is None or e.get("cat") == cat)
    ]
