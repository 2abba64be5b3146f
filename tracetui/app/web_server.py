"""textual-serve's ``Server`` on a socket tracetui has already bound, printing nothing of its own,
letting in only its own page with the token (:mod:`tracetui.app.web_access`), and at most
``max_sessions`` explorers at once.

What it changes of textual-serve 1.1.3 (``textual_serve/server.py``): every request passes
:meth:`Access.refusal` (403 otherwise); the page names the websocket and its files by the Host the
browser used (a tunnel to another port works), and says so plainly when every session is taken
(503); the websocket session holds a slot until its explorer has stopped; a message from the
browser that is not what the page sends is one line in the log, never a traceback; the terminal
size asked for is bounded.

Imported only by ``tracetui serve`` (textual-serve is the optional extra ``serve``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp_jinja2
from aiohttp import WSMsgType, web
from aiohttp.helpers import content_disposition_header
from textual_serve.app_service import AppService
from textual_serve.server import Server

from tracetui.app.web_access import Access
from tracetui.app.web_downloads import DownloadStalled, PatientDownloads
from tracetui.safetext import shown

log = logging.getLogger("tracetui.serve")

MAX_CELLS = 1000  # a terminal's width or height asked for by the browser, at most
STOP_WAIT_S = 10.0  # how long a closed tab's explorer has to quit before it is killed
FULL = (
    "tracetui serve: all {n} sessions are in use (--max-sessions {n}); each browser tab runs its own "
    "explorer. Close a tab of this server, then reload this page.\n"
)
REFUSED = "tracetui serve: refused. Open the address tracetui serve printed (it holds the token).\n"


class Malformed(ValueError):
    """A websocket message that is not one the page sends."""


class TraceServer(Server):
    """Serves ``command`` (one process per browser tab, ``max_sessions`` at once) on ``sock`` to
    the requests ``access`` lets in."""

    download_manager: PatientDownloads

    def __init__(
        self, command: str, sock: socket.socket, access: Access, title: str, max_sessions: int = 4
    ) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(command, host=host, port=port, title=title)
        self.sock = sock
        self.access = access
        self.max_sessions = max_sessions
        self.sessions = 0
        self.download_manager = PatientDownloads()

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Let in only what :attr:`access` allows (else 403 and one log line); the page sets the
        cookie that carries the token to the rest."""
        reason = self.access.refusal(request)
        if reason is not None:
            log.warning("refused %s %s: %s", request.method, shown(request.path, 80), shown(reason, 120))
            return web.Response(status=403, text=REFUSED)
        response = await handler(request)
        if request.match_info.route.name == "index":
            response.headers["Referrer-Policy"] = "no-referrer"
            response.headers["X-Frame-Options"] = "DENY"
            if response.status == 200:
                self.access.keep(response)
        return response

    async def handle_index(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        """The page (textual-serve's template), its links by the Host the browser used; 503 with a
        line that says why when every session is taken."""
        if self.sessions >= self.max_sessions:
            return web.Response(status=503, text=FULL.format(n=self.max_sessions))
        router = request.app.router
        base = f"http://{request.host}"  # checked by the guard: this server's own
        context = {
            "font_size": _bounded(request.query.get("fontsize"), 16, 4, 64),
            "app_websocket_url": f"ws://{request.host}{router['websocket'].url_for()}",
            "config": {
                "static": {"url": f"{base}{router['static'].url_for(filename='/')}".rstrip("/") + "/"}
            },
            "application": {"name": self.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    async def handle_websocket(  # type: ignore[override]  # a refusal is a plain response
        self, request: web.Request
    ) -> web.StreamResponse:
        """One explorer for one tab while a slot is free (else 503); the slot is held until the
        explorer has stopped, even where this handler is cancelled first (a dropped connection)."""
        if self.sessions >= self.max_sessions:
            log.warning("refused a new tab: all %d sessions are in use (--max-sessions)", self.max_sessions)
            return web.Response(status=503, text=FULL.format(n=self.max_sessions))
        self.sessions += 1
        session = asyncio.ensure_future(self._session(request))
        session.add_done_callback(self._ended)
        return await asyncio.shield(session)

    def _ended(self, _: asyncio.Future[web.WebSocketResponse]) -> None:
        self.sessions -= 1

    async def _session(self, request: web.Request) -> web.WebSocketResponse:
        """textual-serve's session (``Server.handle_websocket``), its errors one line each."""
        websocket = web.WebSocketResponse(heartbeat=15)
        width = _bounded(request.query.get("width"), 80, 1, MAX_CELLS)
        height = _bounded(request.query.get("height"), 24, 1, MAX_CELLS)
        app_service: AppService | None = None
        try:
            await websocket.prepare(request)
            app_service = AppService(
                self.command,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,  # type: ignore[arg-type]  # as textual-serve passes it
                download_manager=self.download_manager,
                debug=self.debug,
            )
            await app_service.start(width, height)
            await self._process_messages(websocket, app_service)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as exc:
            log.warning("a session ended on an error: %s: %s", type(exc).__name__, shown(str(exc), 200))
        finally:
            if app_service is not None:
                await _stopped(app_service)
        return websocket

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService) -> None:
        """Pass the page's messages on to the explorer; one that is not what the page sends is
        one line in the log, and ignored."""
        async for message in websocket:
            if message.type == WSMsgType.ERROR:  # a broken frame, one too big: the socket closes
                log.warning("the browser's websocket failed: %s", shown(str(websocket.exception()), 200))
                continue
            try:
                if message.type != WSMsgType.TEXT:
                    raise Malformed("not text")
                kind, data = parsed(message.data)
            except Malformed as exc:
                log.warning(
                    "ignored a malformed message from the browser (%s): %s", exc, _sample(message.data)
                )
                continue
            if kind == "stdin":
                await app_service.send_bytes(data.encode("utf-8"))
            elif kind == "resize":
                await app_service.set_terminal_size(*data)
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

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


def parsed(text: str) -> tuple[str, Any]:
    """``(kind, data)`` of a message the page sends (``["stdin", "keys"]``, ``["resize", {"width":
    W, "height": H}]``: ``(W, H)``, ``["ping", "t"]``, ``["blur"]``, ``["focus"]``), else
    :class:`Malformed` saying what is wrong."""
    try:
        envelope = json.loads(text)
    except (ValueError, RecursionError):
        raise Malformed("not JSON") from None
    if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
        raise Malformed("not a list that starts with its kind")
    kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
    if kind in ("stdin", "ping"):
        if not isinstance(data, str):
            raise Malformed(f"{kind} without its text")
        return kind, data
    if kind == "resize":
        size = [data.get(key) if isinstance(data, dict) else None for key in ("width", "height")]
        if not all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_CELLS for n in size):
            raise Malformed(f"resize without a width and height of 1 to {MAX_CELLS} cells")
        return kind, tuple(size)
    if kind in ("blur", "focus"):
        return kind, None
    raise Malformed(f"unknown kind {shown(kind, 40)!r}")


def _sample(data: object) -> str:
    """The start of a message, as the log shows it."""
    text = data if isinstance(data, str) else repr(data)
    return shown(text, 80)


def _bounded(text: str | None, default: int, low: int, high: int) -> int:
    """A number from the URL's query, ``default`` when it is none, kept within ``low``..``high``."""
    try:
        value = int(text) if text is not None else default
    except ValueError:
        value = default
    return min(max(value, low), high)


async def _stopped(app_service: AppService) -> None:
    """Stop a tab's explorer (textual-serve tells it to quit) and wait for its process to end; one
    still running after :data:`STOP_WAIT_S` is killed. When this returns, its memory is free."""
    process = app_service._process
    try:
        await asyncio.wait_for(app_service.stop(), STOP_WAIT_S)
        if process is not None:
            await asyncio.wait_for(process.wait(), STOP_WAIT_S)
    except asyncio.TimeoutError:
        log.warning("an explorer did not quit within %g s of its tab closing: killed", STOP_WAIT_S)
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    if process is not None:  # its pipes, now (asyncio's Process has no close of its own)
        process._transport.close()  # type: ignore[attr-defined]


def _quiet(*_: Any) -> None:
    """aiohttp's start-up lines: tracetui has printed the URL already."""
