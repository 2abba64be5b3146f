"""``tracetui serve`` in a child process for tests: started on a free port, always stopped."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

URL = re.compile(r"http://\S+")
START_TIMEOUT_S = 120  # a loaded 2-core CI machine: importing textual-serve and aiohttp can be slow


def first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The server's first stdout line, or a failure naming what it said, within ``timeout``: never a
    test that hangs on a server that neither starts nor exits."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise AssertionError(f"tracetui serve printed no URL within {timeout:.0f} s")
    line = process.stdout.readline()
    if not line:  # it exited: say why
        process.wait(timeout=10)
        stderr = process.stderr.read() if process.stderr else ""
        raise AssertionError(f"tracetui serve exited ({process.returncode}): {stderr.strip()}")
    return line


@contextlib.contextmanager
def served(trace: Path, *extra: str) -> Iterator[tuple[str, str]]:
    """``(url, first line)`` of ``tracetui serve TRACE --port 0`` while it runs (the URL with its
    token), in a temporary working folder (where its default save folder goes); its process group
    (the server and every explorer it started) is stopped afterwards. On a failure inside, what the
    server said is printed to stderr, which pytest shows with the failure: its stderr (one-line
    warnings: a stalled download, an explorer that stopped) and the rest of its stdout (where it
    passes on the explorers' own stderr)."""
    with tempfile.TemporaryDirectory(prefix="tracetui-serve-test-") as folder:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tracetui",
                "serve",
                str(trace),
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            cwd=folder,
        )
        try:
            line = first_line(process, START_TIMEOUT_S)
            found = URL.search(line)
            assert found, f"no URL in {line!r}"
            yield found.group(0), line
        except BaseException:
            _stop(process)
            for name, stream in (("stderr", process.stderr), ("stdout", process.stdout)):
                said = _rest_of(stream, timeout=10).strip() if stream else ""
                print(f"tracetui serve said on {name}: {said or '(nothing)'}", file=sys.stderr)
            raise
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    """Stop the server's process group (SIGTERM, then SIGKILL after 20 s); once stopped, nothing."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _rest_of(stream: IO[str], timeout: float) -> str:
    """What is left to read of a stopped process's pipe, up to its end or ``timeout`` (a process it
    started may still hold it open)."""
    chunks, deadline = [], time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0 and selector.select(left):
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")
