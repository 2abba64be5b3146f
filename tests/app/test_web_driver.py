"""The served explorer's driver writes each packet whole: a download's chunks (written by the input
thread) and the screen's updates (the app's thread) never interleave on the pipe to textual-serve."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import pytest
from textual import constants
from textual.drivers import web_driver
from textual.drivers.web_driver import WebDriver

from tracetui.app.app import TracetuiApp
from tracetui.app.web_driver import WholePacketsDriver

binary_load = pytest.importorskip(
    "textual_serve._binary_encode", reason="tracetui[serve] is not installed"
).load
TEXTUALS_WEB_DRIVER = "textual.drivers.web_driver:WebDriver"  # what textual-serve sets in TEXTUAL_DRIVER

CHUNK = 64 * 1024  # textual-serve's download chunk
ROUNDS = 60
SCREEN = "\x1b[H" + "x" * 3000
LARGEST = 2 * CHUNK  # a packet's size beyond any this test writes: the stream is misframed


@pytest.fixture(autouse=True)
def _no_stdin_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drivers' input reader polls stdin, which a test's is not (nothing here reads input)."""
    monkeypatch.setattr(web_driver, "InputReader", lambda: None)


async def _made(driver_class: type[WebDriver]) -> WebDriver:
    """A driver (it takes the running event loop), not started."""
    return driver_class(TracetuiApp(), size=(80, 24))


def _chunk(round_: int) -> bytes:
    return bytes([round_ % 200 + 1]) * CHUNK


def _packets_through_a_pipe(driver_class: type[WebDriver]) -> list[tuple[bytes, object]]:
    """Two threads write through one driver, as a served explorer does during a download: one a
    download's 64 KiB chunks (``write_binary_encoded``, as the driver answers textual-serve), the
    other small screen updates (``write``). The driver writes to a pipe where stdout was when it
    was made. The packets the pipe's reader frames, in order: ``(b"D", text)``, ``(b"P", what
    textual-serve decodes, or None)``; a stream that no longer frames ends with ``(b"?", None)``."""
    read_end, write_end = os.pipe()
    with pytest.MonkeyPatch.context() as patch, open(write_end, "wb", closefd=False) as stdout:
        patch.setattr(sys, "__stdout__", stdout)  # the driver takes stdout's descriptor as it is made
        driver = asyncio.run(_made(driver_class))
    got: list[tuple[bytes, object]] = []

    def read() -> None:
        with os.fdopen(read_end, "rb") as pipe:
            while header := pipe.read(5):
                kind, size = header[:1], int.from_bytes(header[1:], "big")
                if kind not in (b"D", b"P") or size > LARGEST:
                    got.append((b"?", None))
                    while pipe.read(CHUNK):  # the writers go on: drained, not framed
                        pass
                    return
                payload = pipe.read(size)
                if kind == b"D":
                    got.append((kind, payload.decode(errors="replace")))
                    continue
                try:
                    got.append((kind, binary_load(payload)))
                except Exception:  # what textual-serve cannot decode
                    got.append((kind, None))

    def chunks() -> None:
        for round_ in range(ROUNDS):
            driver.write_binary_encoded(("deliver_chunk", "key", _chunk(round_)))

    def screen() -> None:
        for _ in range(ROUNDS * 20):
            driver.write(SCREEN)

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=chunks), threading.Thread(target=screen)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    os.close(write_end)
    reader.join()
    return got


def _whole(got: list[tuple[bytes, object]]) -> bool:
    """Whether every packet came, whole and in order, as textual-serve reads them."""
    chunks = [packet for kind, packet in got if kind == b"P"]
    screens = [packet for kind, packet in got if kind == b"D"]
    return (
        len(got) == len(chunks) + len(screens)
        and chunks == [("deliver_chunk", "key", _chunk(n)) for n in range(ROUNDS)]
        and screens == [SCREEN] * (ROUNDS * 20)
    )


def test_packets_from_two_threads_arrive_whole() -> None:
    assert _whole(_packets_through_a_pipe(WholePacketsDriver))


def test_textuals_own_driver_interleaves_them() -> None:
    """What the driver mends: Textual's own (8.2) lets the screen's writes land inside a chunk (in
    44 runs of 50 with the cores busy here: up to 20 runs are tried). If
    this fails, Textual writes whole packets itself and :mod:`tracetui.app.web_driver` can go."""
    assert any(not _whole(_packets_through_a_pipe(WebDriver)) for _ in range(20))


def test_the_apps_take_it_under_textual_serve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert constants.DRIVER is None  # no driver named from outside (the tests run headless)
    monkeypatch.setattr(constants, "DRIVER", TEXTUALS_WEB_DRIVER)
    assert TracetuiApp().get_driver_class() is WholePacketsDriver
    monkeypatch.setattr(constants, "DRIVER", "textual.drivers.headless_driver:HeadlessDriver")
    assert TracetuiApp().get_driver_class().__name__ == "HeadlessDriver"
