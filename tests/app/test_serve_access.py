"""``tracetui serve`` lets in only its own page with its token, runs at most ``--max-sessions``
explorers, and logs a malformed message as one line (issue 35, items 1, 3 and 16).

Before: the websocket took any ``Origin`` and ``Host`` and needed no token, so a page on another
site (``Origin: http://evil.example.com``) drove an explorer and received the trace on screen; 20
connections started 20 explorers; a message that was not JSON printed a traceback.

These run the server's own application in this process (aiohttp's test server) with a stand-in for
the explorer (:data:`FAKE_EXPLORER`: it speaks textual-serve's packets and quits when told), so
that each attack is a plain websocket client, as it was made. ``test_serve_exposure.py`` runs the
real command.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

pytest.importorskip("textual_serve", reason="tracetui[serve] is not installed")

import aiohttp
from aiohttp.test_utils import TestClient, TestServer

from tracetui.app.serve import bind
from tracetui.app.web_access import Access
from tracetui.app.web_server import MAX_CELLS, TraceServer, parsed

# textual-serve's side of an explorer: the prelude line, then packets on stdin (kind, 4-byte size,
# payload) until the quit meta packet; every packet it got is a line in the file it is given.
FAKE_EXPLORER = """
import json, sys
print("__GANGLION__", flush=True)
with open(sys.argv[1], "a") as seen:
    stdin = sys.stdin.buffer
    while header := stdin.read(5):
        payload = stdin.read(int.from_bytes(header[1:], "big"))
        seen.write(header[:1].decode() + " " + payload.decode() + "\\n")
        seen.flush()
        if header[:1] == b"M" and json.loads(payload).get("type") == "quit":
            break
"""
EVIL = "http://evil.example.com"


@pytest.fixture
def explorer_log(tmp_path: Path) -> Path:
    return tmp_path / "seen.txt"


@pytest.fixture
def server(tmp_path: Path, explorer_log: Path) -> Iterator[TraceServer]:
    script = tmp_path / "explorer.py"
    script.write_text(FAKE_EXPLORER)
    sock = bind("127.0.0.1", 0)
    command = shlex.join([sys.executable, str(script), str(explorer_log)])
    try:
        yield TraceServer(command, sock, Access.new(sock.getsockname()[1]), "tracetui · test", max_sessions=2)
    finally:
        sock.close()


def released(server: TraceServer) -> int:
    """The server's port, its socket closed so that aiohttp's test server listens there (the Host
    a request names must carry the server's own port)."""
    server.sock.close()
    return server.access.port


@asynccontextmanager
async def client_of(server: TraceServer) -> AsyncIterator[TestClient]:
    async with TestClient(TestServer(await server._make_app(), port=released(server))) as client:
        yield client


def own(client: TestClient) -> str:
    """The origin of the page the server serves to this client (``http://127.0.0.1:PORT``)."""
    return f"http://{client.host}:{client.port}"


async def all_stopped(server: TraceServer) -> None:
    """Wait until every session's explorer has stopped (the slots are free)."""
    for _ in range(600):
        if server.sessions == 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{server.sessions} sessions still running")


async def handshake(client: TestClient, **kwargs: object) -> int:
    """The status of a websocket handshake (101: connected; then closed at once)."""
    try:
        socket = await client.ws_connect("/ws", **kwargs)  # type: ignore[arg-type]
    except aiohttp.WSServerHandshakeError as refused:
        return refused.status
    await socket.close()
    return 101


# ---- the attacks as they were made ------------------------------------------------------------------


async def test_a_foreign_origin_is_refused_even_with_the_token(
    server: TraceServer, caplog: pytest.LogCaptureFixture
) -> None:
    token = {"token": server.access.token}
    async with client_of(server) as client:
        with caplog.at_level(logging.WARNING, logger="tracetui.serve"):
            assert await handshake(client, origin=EVIL, params=token) == 403
            assert await handshake(client, origin="null", params=token) == 403
        assert server.sessions == 0
        assert await handshake(client, origin=own(client), params=token) == 101
        await all_stopped(server)
    said = [r.getMessage() for r in caplog.records if r.name == "tracetui.serve"]
    assert said[0] == "refused GET /ws: Origin 'http://evil.example.com' is not this server's page"
    assert len(said) == 2 and all(r.exc_info is None for r in caplog.records)


@pytest.mark.parametrize(
    "token", [None, "", "wrong", "x" * 43], ids=["none", "empty", "wrong", "same-length"]
)
async def test_no_token_or_a_wrong_one_is_refused(server: TraceServer, token: str | None) -> None:
    async with client_of(server) as client:
        params = {} if token is None else {"token": token}
        assert await handshake(client, origin=own(client), params=params) == 403
        for path in ("/", "/static/js/textual.js", "/download/some-key"):
            response = await client.get(path, params=params)
            assert response.status == 403, path
            assert "Open the address tracetui serve printed" in await response.text()
        cookie = {server.access.cookie: token or ""}
        assert (
            await handshake(
                client,
                origin=own(client),
                headers={"Cookie": "; ".join(f"{k}={v}" for k, v in cookie.items())},
            )
            == 403
        )


async def test_a_name_that_resolves_here_is_refused(server: TraceServer) -> None:
    """DNS rebinding: a page at ``evil.example.com:PORT`` whose name now resolves to 127.0.0.1 is
    same-origin with itself (Origin = Host), and would have the token only by luck; its Host is
    refused whatever it carries."""
    token = {"token": server.access.token}
    async with client_of(server) as client:
        rebound = f"evil.example.com:{client.port}"
        origin = f"http://{rebound}"
        assert await handshake(client, origin=origin, headers={"Host": rebound}, params=token) == 403
        assert (await client.get("/", headers={"Host": rebound}, params=token)).status == 403
        for host in (f"localhost:{client.port}", f"127.0.0.1:{client.port}", f"[::1]:{client.port}"):
            assert (await client.get("/", headers={"Host": host}, params=token)).status == 200, host


async def test_the_page_with_the_token_gives_the_cookie_the_websocket_uses(
    server: TraceServer, explorer_log: Path
) -> None:
    async with client_of(server) as client:
        page = await client.get("/", params={"token": server.access.token})
        assert page.status == 200
        cookie = page.cookies[server.access.cookie]
        assert cookie.value == server.access.token
        assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
        assert page.headers["Referrer-Policy"] == "no-referrer"
        html = await page.text()
        assert f'data-session-websocket-url="ws://127.0.0.1:{client.port}/ws"' in html
        assert server.access.token not in html  # the page carries it in the cookie only
        # the browser sends the cookie back with the websocket (the page's own origin)
        socket = await client.ws_connect("/ws", origin=own(client))
        await socket.send_json(["stdin", "q"])
        await socket.close()
        await all_stopped(server)
    assert "D q" in explorer_log.read_text().splitlines()


# ---- sessions ---------------------------------------------------------------------------------------


async def test_sessions_beyond_the_limit_get_a_page_that_says_so(server: TraceServer) -> None:
    token = {"token": server.access.token}
    async with client_of(server) as client:
        tabs = [await client.ws_connect("/ws", origin=own(client), params=token) for _ in range(2)]
        assert server.sessions == 2
        page = await client.get("/", params=token)
        assert page.status == 503
        assert await page.text() == (
            "tracetui serve: all 2 sessions are in use (--max-sessions 2); each browser tab runs its own "
            "explorer. Close a tab of this server, then reload this page.\n"
        )
        assert await handshake(client, origin=own(client), params=token) == 503
        await tabs[0].close()  # a tab closes: its explorer quits, and its slot is free
        for _ in range(200):
            if server.sessions < 2:
                break
            await asyncio.sleep(0.05)
        assert server.sessions == 1
        assert (await client.get("/", params=token)).status == 200
        tabs[0] = await client.ws_connect("/ws", origin=own(client), params=token)
        assert server.sessions == 2
        for tab in tabs:
            await tab.close()
        await all_stopped(server)


# ---- malformed messages -----------------------------------------------------------------------------

MALFORMED = [
    "not json",
    "{}",
    "[]",
    "[1]",
    '["stdin"]',
    '["stdin", 5]',
    '["resize", {"width": "80"}]',
    f'["resize", {{"width": {MAX_CELLS + 1}, "height": 24}}]',
    '["resize", {"width": true, "height": 24}]',
    '["ping", {"a": 1}]',
    '["nonsense", 1]',
    "[" * 100_000,
]


async def test_a_malformed_message_is_one_log_line_and_the_session_goes_on(
    server: TraceServer, explorer_log: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with client_of(server) as client:
        with caplog.at_level(logging.DEBUG):
            socket = await client.ws_connect("/ws", origin=own(client), params={"token": server.access.token})
            for text in MALFORMED:
                await socket.send_str(text)
            await socket.send_bytes(b"\x00binary")
            await socket.send_json(["resize", {"width": 100, "height": 30}])
            await socket.send_json(["ping", "7"])
            assert (await socket.receive_json(timeout=30)) == ["pong", "7"]
            await socket.close()
            await all_stopped(server)
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == len(MALFORMED) + 1
    assert all(r.name == "tracetui.serve" and r.exc_info is None for r in lines)
    messages = [r.getMessage() for r in lines]
    assert all(m.startswith("ignored a malformed message from the browser (") for m in messages)
    assert all("\n" not in m and len(m) < 300 for m in messages)
    seen = explorer_log.read_text()
    assert '"type": "resize", "width": 100, "height": 30' in seen and "nonsense" not in seen


def test_parsed_reads_what_the_page_sends() -> None:
    assert parsed('["stdin", "\\u001b[A"]') == ("stdin", "\x1b[A")
    assert parsed('["resize", {"width": 120, "height": 40}]') == ("resize", (120, 40))
    assert parsed('["ping", "1700000000"]') == ("ping", "1700000000")
    assert parsed('["focus"]') == ("focus", None) and parsed('["blur"]') == ("blur", None)


def test_host_names_the_server_knows() -> None:
    access = Access.new(8000, ["gpu-box", "gpu-box.example.org."])
    for host in (
        "127.0.0.1:8000",
        "localhost:8000",
        "LOCALHOST:8000",
        "[::1]:8000",
        "10.1.2.3:8000",
        "gpu-box:8000",
        "gpu-box.example.org:8000",
        "[fe80::1%eth0]:8000",
    ):
        assert access.knows(host), host
    for host in (
        "",
        "evil.example.com:8000",
        "127.0.0.1.nip.io:8000",
        "x@127.0.0.1:8000",
        "[gpu-box]:8000",
        "127.0.0.1:8000/x",
        "gpu-box.evil.com",
        "0x7f.1:8000",
        "127.0.0.1:9000",  # another port: another site (a page served by another local server)
        "localhost",  # no port: 80
        "[::1]:80",
    ):
        assert not access.knows(host), host
    assert Access.new(80).knows("localhost")
    assert Access.new(8000).token != Access.new(8000).token and len(Access.new(1).token) >= 40
