"""textual-serve's ``Server`` on a socket tracetui has already bound, printing nothing of its own.

Imported only by ``tracetui serve`` (textual-serve is the optional extra ``serve``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from typing import Any

from aiohttp import web
from textual_serve.server import Server


class TraceServer(Server):
    """Serves ``command`` (one process per browser tab) on ``sock``; the page's links use ``url``."""

    def __init__(self, command: str, sock: socket.socket, url: str, title: str) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(command, host=host, port=port, title=title, public_url=url)
        self.sock = sock

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve prints a banner with the command line (as markup): tracetui printed the URL."""

    def initialize_logging(self) -> None:
        logging.basicConfig(level=logging.WARNING, format="tracetui serve: %(message)s")

    def serve(self, debug: bool = False) -> None:
        """Run until SIGINT or SIGTERM (then each tab's explorer is told to quit)."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self.request_exit)
        web.run_app(self._make_app(), sock=self.sock, handle_signals=False, loop=loop, print=_quiet)


def _quiet(*_: Any) -> None:
    """aiohttp's start-up lines: tracetui has printed the URL already."""
