"""``tracetui serve`` in a child process for tests: started on a free port, always stopped."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

URL = re.compile(r"http://\S+")


@contextlib.contextmanager
def served(trace: Path, *extra: str) -> Iterator[tuple[str, str]]:
    """``(url, first line)`` of ``tracetui serve TRACE --port 0`` while it runs; its process group
    (the server and every explorer it started) is stopped afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tracetui", "serve", str(trace), "--host", "127.0.0.1", "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = URL.search(line)
        assert found, f"no URL in {line!r}; stderr: {process.stderr.read() if process.stderr else ''}"
        yield found.group(0), line
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
