"""``settle`` (render's and the tests' wait) outlasts an exclusive worker cancelled by a newer one:
the explorer's details, timeline and overlays replace their workers as the cursor moves."""

from __future__ import annotations

import threading

from textual import work

from tests.app.conftest import fixture
from tracetui.app.app import TraceApp
from tracetui.app.settle import settle


async def test_settle_waits_past_a_cancelled_exclusive_worker() -> None:
    app = TraceApp(fixture("mlp_eager"))
    release = threading.Event()
    done: list[int] = []

    @work(thread=True, exclusive=True, group="probe")
    def probe(_screen: object, number: int) -> None:
        release.wait(5)
        done.append(number)

    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        probe(app.screen, 1)
        probe(app.screen, 2)  # cancels the first
        release.set()
        await settle(pilot)
        assert 2 in done
