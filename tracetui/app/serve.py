"""The explorer in a web browser (``tracetui serve``), served by textual-serve.

textual-serve (the Textual project's own server, extra ``serve``) starts one ``tracetui open``
process per browser tab and relays its terminal over a websocket. tracetui adds what a tool that
serves a file needs: the socket is bound before anything else (a taken port is one line, exit 2, and
``--port 0`` picks a free port), localhost by default, the URL printed on one line, and the trace
path handed to the shell command line quoted (:func:`command_line`), so that no file name can run
anything. The page's title holds only the file's name, control characters neutralised (the page
template escapes HTML).
"""

from __future__ import annotations

import errno
import shlex
import socket
import sys
from pathlib import Path

import click

from tracetui.errors import TraceError
from tracetui.safetext import shown
from tracetui.trace.source import check_readable

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
EVERY_INTERFACE = ("0.0.0.0", "::", "")


def command_line(trace: Path | None, python: str = sys.executable, max_inflate: float | None = None) -> str:
    """The shell command textual-serve runs for each browser tab: ``tracetui open`` on ``trace``
    (with ``--max-inflate`` when given: the child gets it on its command line).

    Every word is quoted for the POSIX shell (``shlex.join``), and ``--`` ends the options, so a
    file named ``x; rm -rf ~``, ``$(reboot)``, ``'quoted'`` or ``--expect`` stays one file name."""
    inflate = [] if max_inflate is None else ["--max-inflate", f"{max_inflate:g}"]
    words = [python, "-m", "tracetui", *inflate, "open"]
    if trace is not None:
        words += ["--", str(trace)]
    return shlex.join(words)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``port`` 0: any free one), or a one-line error."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise TraceError(None, f"cannot listen on {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise TraceError(None, f"port {port} on {host} is taken; pick another with --port N") from None
        raise TraceError(None, f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    """The address a browser opens: the bound one (the machine's name when bound to every interface)."""
    port = sock.getsockname()[1]
    address = socket.gethostname() if host in EVERY_INTERFACE else host
    if ":" in address:  # an IPv6 address
        address = f"[{address}]"
    return f"http://{address}:{port}"


def serve(trace: Path | None, host: str, port: int, max_inflate: float | None = None) -> None:
    """Serve the explorer of ``trace`` (``None``: the bundled sample) until interrupted."""
    try:
        from tracetui.app.web_server import TraceServer
    except ImportError:
        raise TraceError(None, "serve needs textual-serve: pip install 'tracetui[serve]'") from None
    if trace is not None:
        check_readable(trace)
        trace = trace.resolve()
    sock = bind(host, port)
    url = url_of(sock, host)
    name = shown(trace.name if trace is not None else "the bundled sample")
    server = TraceServer(command_line(trace, max_inflate=max_inflate), sock, url, title=f"tracetui · {name}")
    click.echo(f"tracetui: serving {name} at {url} (Ctrl+C stops)")
    if host in EVERY_INTERFACE:
        click.echo("tracetui: listening on every interface: anyone who can reach this machine can open it")
    sys.stdout.flush()
    server.serve()
