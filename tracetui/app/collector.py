"""The garbage collector's policy for an explorer process: full collections only while the user is idle.

Textual's rendering makes cyclic garbage all the time; CPython's automatic full (generation 2)
collections then scan every live object, and on a big trace that took 50–270 ms each, landing in
the middle of key presses (the slowest presses of ``benchmarks/bench_app.py``). Once a trace is
loaded, :meth:`IdleCollection.start_idle_collection` freezes what exists (``gc.freeze``: the trace,
the model and the modules are never scanned again) and turns automatic full collections off;
young generations are still collected as usual, and a timer runs the full collection when no key
or mouse input came for :data:`IDLE_S` seconds. For a process that runs one app (``tracetui
open``, ``tracetui diff``): the thresholds are process-wide.
"""

from __future__ import annotations

import gc
import time

from textual import events
from textual.app import App

IDLE_S = 1.0  # seconds without input before a full collection may run
CHECK_S = 2.0  # how often the timer looks
NEVER = 1_000_000  # a generation-2 threshold no session reaches


class IdleCollection(App[int]):
    """Mixin for the apps: call :meth:`start_idle_collection` once the trace is loaded."""

    _last_input = 0.0

    def start_idle_collection(self, freeze: bool = True) -> None:
        """Freeze what exists and defer full collections to idle time (thread-safe: a loader
        worker calls it; the timer starts on the UI thread). ``freeze=False`` for an app whose
        trace is replaced later (a run's ranks): frozen objects would never be collected."""
        if freeze:
            gc.freeze()
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, NEVER)
        self._last_input = time.monotonic()
        self.call_from_thread(self.set_interval, CHECK_S, self._collect_if_idle)

    def _collect_if_idle(self) -> None:
        if gc.get_count()[2] and time.monotonic() - self._last_input >= IDLE_S:
            gc.collect()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown | events.MouseScrollDown | events.MouseScrollUp):
            self._last_input = time.monotonic()
        await super().on_event(event)
