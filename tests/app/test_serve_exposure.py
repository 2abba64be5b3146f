"""``tracetui serve`` as run from the command line: a warning for every address that is not
loopback, the URL with its token, the save folder it names, and the attacks of issue 35 item 1
against the real command (a foreign page's websocket, no token, another name for the host).

Before: ``--host 0``, ``0x0`` and ``::0`` listened on every interface without the warning that
``0.0.0.0`` got (the check compared the text typed); the websocket let anyone in.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textual_serve", reason="tracetui[serve] is not installed")

import aiohttp

from tests.app.conftest import fixture
from tests.app.serving import START_TIMEOUT_S, URL, first_line, served
from tracetui.app.serve import bind, exposure, save_folder, url_of
from tracetui.app.web_access import TOKEN
from tracetui.errors import TraceError

EVERY = ["0", "0x0", "0.0.0.0", "", "::0", "::", "0:0:0:0:0:0:0:0"]
LOOPBACK = ["127.0.0.1", "127.0.0.2", "0x7f000001", "localhost", "::1", "::ffff:127.0.0.1"]


def bound(host: str) -> socket.socket:
    try:
        return bind(host, 0)
    except Exception as exc:  # no IPv6 here
        pytest.skip(f"cannot listen on {host!r} here: {exc}")


@pytest.mark.parametrize("host", EVERY)
def test_every_spelling_of_every_interface_warns(host: str) -> None:
    with bound(host) as sock:
        warning = exposure(sock)
        assert warning is not None and warning.startswith("listening on every interface (")
        assert warning.endswith(
            ", not this machine only: whoever can reach it and has the URL can use the "
            "explorer (plain http: the URL travels in clear)"
        )
        assert url_of(sock, host).startswith(f"http://{socket.gethostname()}:")


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_does_not_warn(host: str) -> None:
    with bound(host) as sock:
        assert exposure(sock) is None


def test_a_single_outside_address_warns() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: the route picks this machine's address
        except OSError:
            pytest.skip("no route off this machine")
        address = probe.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("only loopback here")
    with bound(address) as sock:
        warning = exposure(sock)
        assert warning is not None and warning.startswith(f"listening on {address}, not this machine only: ")


def test_serve_on_host_0x0_says_so(tmp_path: Path) -> None:
    """The command, as the issue ran it: the warning on stderr, the URL (with the machine's name
    and the token) on stdout's first line, where exports go on the second: without --save-dir,
    the browser's downloads, and nothing is made in the current folder."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracetui",
            "serve",
            str(fixture("mlp_eager")),
            "--host",
            "0x0",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        line = first_line(process, START_TIMEOUT_S)
        assert process.stdout is not None
        saved = process.stdout.readline()  # printed with the first (a select could miss it: buffered)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    found = URL.search(line)
    assert found and found.group(0).startswith(f"http://{socket.gethostname()}:")
    assert f"/?{TOKEN}=" in found.group(0)
    assert err.splitlines()[0] == (
        "tracetui: warning: listening on every interface (0.0.0.0), not this machine only: whoever can "
        "reach it and has the URL can use the explorer (plain http: the URL travels in clear)"
    )
    assert saved.startswith(
        "tracetui: exports go to the browser's downloads, nothing on this machine (--save-dir DIR: in DIR)"
    )
    assert list(tmp_path.iterdir()) == []  # nothing made or written here


def test_a_save_folder_given_is_made_and_kept(tmp_path: Path) -> None:
    folder = save_folder(tmp_path / "exports" / "here")
    assert folder == (tmp_path / "exports" / "here").resolve() and folder.is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(TraceError, match="file: cannot make the save folder"):
        save_folder(tmp_path / "file")


def test_the_real_server_refuses_a_foreign_page_and_a_missing_token() -> None:
    """The attack as it was made: a websocket client with ``Origin: http://evil.example.com``."""

    async def attack(url: str) -> dict[str, int]:
        base, token = url.split(f"/?{TOKEN}=")
        ws = base.replace("http://", "ws://") + "/ws"
        got: dict[str, int] = {}
        async with aiohttp.ClientSession() as session:
            for name, kwargs in {
                "foreign origin": {"origin": "http://evil.example.com", "params": {TOKEN: token}},
                "no token": {"origin": base},
                "wrong token": {"origin": base, "params": {TOKEN: token[::-1]}},
                "rebound host": {
                    "origin": "http://evil.example.com:" + base.rsplit(":", 1)[1],
                    "headers": {"Host": "evil.example.com:" + base.rsplit(":", 1)[1]},
                    "params": {TOKEN: token},
                },
                "another port": {  # a page of another server on this machine
                    "origin": "http://127.0.0.1:1",
                    "headers": {"Host": "127.0.0.1:1"},
                    "params": {TOKEN: token},
                },
            }.items():
                try:
                    socket = await session.ws_connect(ws, **kwargs)  # type: ignore[arg-type]
                except aiohttp.WSServerHandshakeError as refused:
                    got[name] = refused.status
                else:
                    await socket.close()
                    got[name] = 101
            async with session.get(base + "/") as page:
                got["page without the token"] = page.status
            async with session.get(url) as page:
                got["page with the token"] = page.status
        return got

    with served(fixture("mlp_eager")) as (url, _):
        got = asyncio.run(attack(url))
    assert got == {
        "foreign origin": 403,
        "no token": 403,
        "wrong token": 403,
        "rebound host": 403,
        "another port": 403,
        "page without the token": 403,
        "page with the token": 200,
    }
