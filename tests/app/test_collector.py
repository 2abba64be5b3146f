"""The explorer's garbage-collector policy: full collections only while the user is idle."""

from __future__ import annotations

import gc
import time

from tests.app.conftest import fixture, settle
from tracetui.app.app import TraceApp
from tracetui.app.collector import NEVER


async def test_full_collections_wait_for_idle_time() -> None:
    saved = gc.get_threshold()
    try:
        app = TraceApp(fixture("mlp_eager"), freeze_gc=True)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            assert gc.get_threshold()[2] == NEVER  # no automatic full collections
            assert gc.get_freeze_count() > 0  # the loaded trace and model are frozen

            gc.collect(1)  # something reached the old generation
            await pilot.press("down")  # the user is busy: the timer leaves it
            app._collect_if_idle()
            assert gc.get_count()[2] > 0

            app._last_input = time.monotonic() - 10  # idle for a while: the timer collects
            app._collect_if_idle()
            assert gc.get_count()[2] == 0
    finally:
        gc.set_threshold(*saved)
        gc.unfreeze()
