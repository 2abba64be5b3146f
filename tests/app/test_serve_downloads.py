"""``tracetui serve``'s downloads (a saved screen) from an explorer that answers slowly, not at all, or
closes: whole, or broken off so the browser says it failed; never cut short as if whole."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

pytest.importorskip("textual_serve", reason="tracetui[serve] is not installed")

import aiohttp
from aiohttp.test_utils import TestClient, TestServer
from textual_serve import download_manager as upstream

from tests.app.test_serve_access import released
from tracetui.app.serve import bind
from tracetui.app.web_access import Access
from tracetui.app.web_downloads import PatientDownloads
from tracetui.app.web_server import TraceServer

KEY = "k1"
PARTS = ["<svg>", "x" * 70_000, "</svg>"]


class Explorer:
    """A tab's explorer as the download manager sees it: answers each chunk request with the next
    part of the file after ``delay`` seconds (an empty part at the end); only the first ``answers``
    requests (None: every one)."""

    app_service_id = "tab-1"

    def __init__(self, manager: upstream.DownloadManager, delay: float, answers: int | None = None) -> None:
        self.manager, self.delay, self.answers = manager, delay, answers
        self.parts = list(PARTS)
        self.asked = 0

    async def send_meta(self, data: dict[str, object]) -> bool:
        self.asked += 1
        if self.answers is None or self.asked <= self.answers:
            part = self.parts.pop(0) if self.parts else ""
            asyncio.get_running_loop().call_later(
                self.delay, lambda: asyncio.ensure_future(self.manager.chunk_received(str(data["key"]), part))
            )
        return True


async def offer(
    manager: upstream.DownloadManager, explorer: Explorer, name: str = "tracetui_mlp_eager_tree.svg"
) -> None:
    await manager.create_download(
        app_service=explorer,  # type: ignore[arg-type]  # the two methods the manager calls
        delivery_key=KEY,
        file_name=name,
        open_method="download",
        mime_type="image/svg+xml",
        encoding="utf-8",
    )


@pytest.fixture
def server() -> Iterator[TraceServer]:
    sock = bind("127.0.0.1", 0)
    try:
        yield TraceServer("true", sock, Access.new(sock.getsockname()[1]), title="tracetui · test")
    finally:
        sock.close()


async def fetch(server: TraceServer) -> tuple[int, dict[str, str], bytes | None]:
    """GET the download: status, headers, and the body (``None``: the connection was broken off)."""
    async with TestClient(TestServer(await server._make_app(), port=released(server))) as client:
        response = await client.get(f"/download/{KEY}", params={"token": server.access.token})
        try:
            body: bytes | None = await response.read()
        except aiohttp.ClientPayloadError:
            body = None
        return response.status, dict(response.headers), body


async def test_textual_serves_own_manager_cancels_a_slow_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why tracetui has its own: textual-serve 1.1.3's manager fails on a chunk later than its
    timeout (4 s; 0.05 s here) with ``ValueError`` (textual-serve issue #29)."""
    monkeypatch.setattr(upstream, "DOWNLOAD_TIMEOUT", 0.05)
    manager = upstream.DownloadManager()
    await offer(manager, Explorer(manager, delay=0.3))
    with pytest.raises(ValueError, match="task_done"):
        async for _ in manager.download(KEY):
            pass


async def test_a_slow_explorer_still_delivers_the_whole_file(server: TraceServer) -> None:
    server.download_manager.chunk_wait_s = 5.0
    explorer = Explorer(server.download_manager, delay=0.3)
    await offer(server.download_manager, explorer)
    status, headers, body = await fetch(server)
    assert status == 200
    assert headers["Content-Disposition"] == 'attachment; filename="tracetui_mlp_eager_tree.svg"'
    assert headers["Content-Type"] == "image/svg+xml; charset=utf-8"
    assert body == "".join(PARTS).encode()
    assert explorer.asked == len(PARTS) + 1  # three parts, then the empty last one
    assert server.download_manager._active_downloads == {}


async def test_an_explorer_that_never_answers_breaks_the_download_off(
    server: TraceServer, caplog: pytest.LogCaptureFixture
) -> None:
    assert isinstance(server.download_manager, PatientDownloads)
    server.download_manager.chunk_wait_s = 0.2
    await offer(server.download_manager, Explorer(server.download_manager, delay=0, answers=0))
    with caplog.at_level(logging.WARNING, logger="tracetui.serve"):
        status, _, body = await fetch(server)
    assert status == 200 and body is None  # headers went out; the body never ended: a failed download
    lines = [r.getMessage() for r in caplog.records if r.name == "tracetui.serve"]
    stalled = "download tracetui_mlp_eager_tree.svg: no data from its explorer for 0.2 s"
    assert lines == [f"{stalled}; the browser shows it failed"]
    assert server.download_manager._active_downloads == {}


async def test_a_tab_closed_mid_download_is_not_a_whole_file(server: TraceServer) -> None:
    """textual-serve cancels a closing tab's downloads: the browser's copy fails instead of ending at
    what had arrived."""
    manager = server.download_manager  # waits 60 s for a chunk: the tab closes well before
    explorer = Explorer(manager, delay=0.05, answers=1)  # the first part, then the tab closes
    await offer(manager, explorer)

    async def close_tab() -> None:
        await asyncio.sleep(0.3)
        await manager.cancel_app_downloads(explorer.app_service_id)

    closing = asyncio.ensure_future(close_tab())
    status, _, body = await fetch(server)
    await closing
    assert status == 200 and body is None
    assert manager._active_downloads == {}


async def test_a_hostile_file_name_is_quoted_in_the_header_and_neutralised_in_the_log(
    server: TraceServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The name comes from the explorer's process: in the header it stays one quoted parameter, on
    stderr its control characters are shown, not obeyed."""
    server.download_manager.chunk_wait_s = 0.2
    name = 'a"; b=\x1b[31m\r\nSet-Cookie: x.svg'
    await offer(server.download_manager, Explorer(server.download_manager, delay=0, answers=0), name)
    with caplog.at_level(logging.WARNING, logger="tracetui.serve"):
        status, headers, body = await fetch(server)
    assert status == 200 and body is None and "Set-Cookie" not in headers
    assert (
        headers["Content-Disposition"]
        == 'attachment; filename="a%22%3B%20b%3D%1B%5B31m%0D%0ASet-Cookie%3A%20x.svg"'
    )
    (line,) = [r.getMessage() for r in caplog.records if r.name == "tracetui.serve"]
    assert "\x1b" not in line and "\r" not in line and "\n" not in line and "Set-Cookie" in line


def test_a_missing_download_is_404(server: TraceServer) -> None:
    status, _, body = asyncio.run(fetch(server))
    assert status == 404 and body == b"no such download"
