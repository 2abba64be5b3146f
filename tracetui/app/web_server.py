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
from aiohttp.helpers import content_disposition_header
from textual_serve.server import Server

from tracetui.app.web_downloads import DownloadStalled, PatientDownloads
from tracetui.safetext import shown

log = logging.getLogger("tracetui.serve")


class TraceServer(Server):
    """Serves ``command`` (one process per browser tab) on ``sock``; the page's links use ``url``."""

    download_manager: PatientDownloads

    def __init__(self, command: str, sock: socket.socket, url: str, title: str) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(command, host=host, port=port, title=title, public_url=url)
        self.sock = sock
        self.download_manager = PatientDownloads()

    async def handle_download(self, request: web.Request) -> web.StreamResponse:
        """Stream a download (textual-serve's handler; the file name, which the explorer sent, quoted
        in its header); one that stalls is broken off with one line on stderr, so the browser says
        it failed and nothing half-written looks whole."""
        key = request.match_info["key"]
        try:
            wanted = await self.download_manager.get_download_metadata(key)
        except KeyError:
            raise web.HTTPNotFound(text="no such download") from None
        response = web.StreamResponse()
        response.content_type = wanted.mime_type
        if wanted.encoding:
            response.charset = wanted.encoding
        disposition = "inline" if wanted.open_method == "browser" else "attachment"
        response.headers["Content-Disposition"] = content_disposition_header(
            disposition, filename=wanted.file_name
        )
        await response.prepare(request)
        try:
            async for chunk in self.download_manager.download(key):
                await response.write(chunk)
        except DownloadStalled as exc:
            log.warning("%s; the browser shows it failed", shown(str(exc)))
            if request.transport is not None:
                request.transport.abort()
            return response
        await response.write_eof()
        return response

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
