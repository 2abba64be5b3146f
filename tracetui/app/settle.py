"""Wait until the explorer (or the comparison) has drawn what it is computing: ``tracetui render``
and the tests drive the app headless and must not take a picture of a half-loaded screen."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot

from tracetui.app.screens.diff import DiffScreen
from tracetui.app.screens.explorer import ExplorerScreen
from tracetui.app.screens.loading import LoadingScreen

ROUNDS = 1000


async def settle(pilot: Pilot[Any]) -> None:
    """Wait for the trace to load, then until no worker, debounce timer or result is outstanding."""

    app = pilot.app
    for _ in range(ROUNDS):
        await app.workers.wait_for_complete()
        await pilot.pause()
        main = next((s for s in app.screen_stack if isinstance(s, (ExplorerScreen, DiffScreen))), None)
        loading = isinstance(app.screen, LoadingScreen)
        if not loading and (main is None or main.settled):
            break
        await pilot.pause(0.01)
    await pilot.pause()
