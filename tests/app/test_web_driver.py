"""The served explorer's driver writes each packet whole: a download's chunks (written by the input
thread) and the screen's updates (the app's thread) never interleave on the pipe to textual-serve."""

from __future__ import annotations

import asyncio
import os
import threading
from functools import partial

import pytest
from textual import constants
from textual.drivers import web_driver
from textual.drivers.web_driver import WebDriver

from tracetui.app.app import TEXTUALS_WEB_DRIVER, TracetuiApp
from tracetui.app.web_driver import WholePacketsDriver

CHUNK = 64 * 1024  # textual-serve's download chunk
ROUNDS = 60


@pytest.fixture(autouse=True)
def _no_stdin_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drivers' input reader polls stdin, which a test's is not (nothing here reads input)."""
    monkeypatch.setattr(web_driver, "InputReader", lambda: None)


async def _made(driver_class: type[WebDriver]) -> WebDriver:
    """A driver (it takes the running event loop), not started."""
    return driver_class(TracetuiApp(), size=(80, 24))


def _packets_through_a_pipe(driver_class: type[WebDriver]) -> list[tuple[bytes, bytes]]:
    """Two threads write through one driver, as a served explorer does during a download: one
    64 KiB packed chunks, the other small screen updates. The packets the pipe's reader frames
    (type byte, 4-byte size, payload), in order."""
    read_end, write_end = os.pipe()
    driver = asyncio.run(_made(driver_class))
    driver.fileno = write_end  # stdout's, as the driver took it
    if driver_class is WebDriver:  # Textual's writes stdout through a function it made of it
        driver._write = partial(os.write, write_end)
    got: list[tuple[bytes, bytes]] = []

    def read() -> None:
        with os.fdopen(read_end, "rb") as pipe:
            while header := pipe.read(5):
                got.append((header[:1], pipe.read(int.from_bytes(header[1:], "big"))))

    def chunks() -> None:
        for round_ in range(ROUNDS):
            driver._write(b"P" + CHUNK.to_bytes(4, "big") + bytes([round_ % 200 + 1]) * CHUNK)

    def screen() -> None:
        for _ in range(ROUNDS * 20):
            driver.write("\x1b[H" + "x" * 3000)

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


def test_packets_from_two_threads_arrive_whole() -> None:
    got = _packets_through_a_pipe(WholePacketsDriver)
    chunks = [payload for kind, payload in got if kind == b"P"]
    screens = [payload for kind, payload in got if kind == b"D"]
    assert len(chunks) == ROUNDS and len(screens) == ROUNDS * 20
    assert all(chunk == bytes([n % 200 + 1]) * CHUNK for n, chunk in enumerate(chunks))
    assert set(screens) == {b"\x1b[H" + b"x" * 3000}
    assert len(got) == len(chunks) + len(screens)


def test_textuals_own_driver_interleaves_them() -> None:
    """What the driver mends: Textual's own (8.2) lets the screen's writes land inside a chunk (in
    every run on an idle machine here, 85 in 100 with the cores busy: up to 20 runs are tried). If
    this fails, Textual writes whole packets itself and :mod:`tracetui.app.web_driver` can go."""

    def interleaved() -> bool:
        got = _packets_through_a_pipe(WebDriver)
        whole = [payload == payload[:1] * CHUNK for kind, payload in got if kind == b"P"]
        return len(got) != ROUNDS * 21 or not all(whole)

    assert any(interleaved() for _ in range(20))


def test_the_apps_take_it_under_textual_serve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert constants.DRIVER != TEXTUALS_WEB_DRIVER  # the tests run under Textual's headless driver
    monkeypatch.setattr(constants, "DRIVER", TEXTUALS_WEB_DRIVER)
    assert TracetuiApp().get_driver_class() is WholePacketsDriver
    monkeypatch.setattr(constants, "DRIVER", "textual.drivers.headless_driver:HeadlessDriver")
    assert TracetuiApp().get_driver_class().__name__ == "HeadlessDriver"
