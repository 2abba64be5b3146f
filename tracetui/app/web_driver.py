"""Textual's web driver (an explorer served by ``tracetui serve``), writing each packet whole.

Textual's ``WebDriver`` (8.2) writes its packets to stdout with a bare ``os.write``, from two
threads: the screen's updates from the app's thread, a download's chunks (ctrl+s's SVG, up to
64 KiB each) from its input thread. A pipe keeps one write whole only up to ``PIPE_BUF`` (4 KiB),
so a screen update written meanwhile can land inside a chunk; textual-serve then reads a corrupt
packet (``DecodeError: More data expected``) and stops serving the tab; the download gets no more
data and is broken off after 60 s (:mod:`tracetui.app.web_downloads`), and the browser shows it
failed (CI saw it once, and 2 runs in 31 under load here). ``os.write`` may also write less than
it was given (a signal), and the rest was dropped.
:class:`WholePacketsDriver` writes each packet whole, one at a time.
"""

from __future__ import annotations

import os
import threading
from functools import partial
from typing import Any

from textual.drivers.web_driver import WebDriver


class WholePacketsDriver(WebDriver):
    """``WebDriver`` whose writes are whole and never interleave."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._write_lock = threading.Lock()
        # every packet goes through ``_write`` (a partial: the type Textual declares it with)
        self._write = partial(self._write_whole)

    def _write_whole(self, data: bytes) -> int:
        """Write all of ``data`` to stdout before any other packet (a partial write goes on)."""
        view = memoryview(data)
        with self._write_lock:
            while view:
                view = view[os.write(self.fileno, view) :]
        return len(data)
