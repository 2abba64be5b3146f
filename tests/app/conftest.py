"""Fixtures for the explorer's tests: real traces, synthetic ones, and a way to wait for the app."""

from __future__ import annotations

import asyncio
import gzip
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.app import synthetic
from tracetui.app.app import TraceApp
from tracetui.app.settle import settle
from tracetui.app.widgets.dispatch_tree import DispatchTree

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WIDE = (140, 40)


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots need the default theme and colours."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests on a fresh event loop (no async plugin needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


def fixture(name: str) -> Path:
    return FIXTURES / f"{name}.json.gz"


def keys(*presses: str) -> Callable[[Pilot[int]], Awaitable[None]]:
    """A ``run_before`` that settles, presses ``presses`` (settling after each), and settles."""

    async def run(pilot: Pilot[int]) -> None:
        await settle(pilot)
        for key in presses:
            await pilot.press(key)
            await settle(pilot)

    return run


def tree_of(app: TraceApp) -> DispatchTree:
    return app.screen.query_one(DispatchTree)


async def goto(pilot: Pilot[int], name: str, nth: int = 0) -> None:
    """Put the cursor on the ``nth`` event named exactly ``name``."""
    tree = tree_of(pilot.app)
    assert tree.model is not None
    assert tree.reveal_event(tree.model.find(name, exact=True)[nth])
    await settle(pilot)


@pytest.fixture
def markup_path(tmp_path: Path) -> Path:
    return synthetic.markup_trace(tmp_path / "markup.json")


@pytest.fixture
def truncated_path(tmp_path: Path) -> Path:
    source = gzip.decompress(fixture("mlp_eager").read_bytes())
    return synthetic.truncated_trace(tmp_path / "mlp_eager_truncated.json", source)


# Guesses about tests/fixtures/mlp_eager.json.gz, one of them wrong (aten::t launches nothing):
# 7 of 8 checks pass, and the failing one points at the first aten::t call.
EXPECT_TOML = """\
[[expect]]
annotation = "mlp_fwd"
calls = 3
kernels_per_call = 5

[[expect]]
op = "aten::t"
launches_kernels = true
note = "wrong on purpose: a transpose only rewrites strides"

[[expect]]
op = "aten::mm"
per = "mlp_fwd"
count = 3

[[expect]]
kernel = "nvjet_*"
per = "mlp_fwd"
count = 3

[[expect]]
kernel = "triton_*"
count = 0

[[expect]]
op = "aten::gelu"
launches_kernels = true

[[expect]]
annotation = "mlp_fwd"
max_gpu_us = 300
"""


@pytest.fixture
def expect_path(tmp_path: Path) -> Path:
    path = tmp_path / "mlp_guesses.toml"
    path.write_text(EXPECT_TOML)
    return path


def app_with_checks(trace: Path, expect: Path) -> TraceApp:
    """``tracetui open TRACE --expect FILE`` (the file read as the command reads it)."""
    from tracetui.compare.expectations import load_expectations

    return TraceApp(trace, expect=(expect, load_expectations(expect)))
