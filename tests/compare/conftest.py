"""Shared loaded traces for the compare tests (each real trace is loaded once per session)."""

from __future__ import annotations

import functools
from pathlib import Path

import tracetui.workloads
from tracetui.sample_traces import default_trace
from tracetui.trace import Trace, load

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
SAMPLES = default_trace().parent  # the installed files (from workloads/ and sample_traces/)
EXPECT = Path(tracetui.workloads.__file__).parent / "expect"


@functools.cache
def fixture(name: str) -> Trace:
    """A trace from ``tests/fixtures`` by file stem, loaded once."""
    return load(FIXTURES / f"{name}.json.gz")


@functools.cache
def sample(name: str) -> Trace:
    """A bundled sample trace by file stem, loaded once."""
    return load(SAMPLES / f"{name}.json.gz")
