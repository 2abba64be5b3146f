"""The explorer in a web browser (``tracetui serve``), served by textual-serve.

textual-serve (the Textual project's own server, extra ``serve``) starts one ``tracetui open``
process per browser tab and relays its terminal over a websocket. tracetui adds what a tool that
serves a file needs: the socket is bound before anything else (a taken port is one line, exit 2, and
``--port 0`` picks a free port), localhost by default and a warning for any address that is not
loopback, the URL printed on one line with the server's secret token in it (only that page, from
its own origin, gets in: :mod:`tracetui.app.web_access`), at most ``--max-sessions`` explorers at
once, each writing on this machine only in the save folder ``--save-dir`` names (without one:
nowhere, exports go to the browser's downloads), and the trace path
handed to the shell command line quoted (:func:`command_line`), so that no file name can run
anything. The page's title holds only the file's name, control characters neutralised (the page
template escapes HTML).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
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
SESSION_MEMORY = 1 << 30  # what one tab's explorer may take, for the default --max-sessions
MAX_DEFAULT_SESSIONS = 4


def command_line(
    trace: Path | None,
    save_dir: Path | None = None,
    python: str = sys.executable,
    max_inflate: float | None = None,
) -> str:
    """The shell command textual-serve runs for each browser tab: ``tracetui open`` on ``trace``,
    writing only in ``save_dir`` (with ``--max-inflate`` when given: the child gets it on its
    command line).

    Every word is quoted for the POSIX shell (``shlex.join``), and ``--`` ends the options, so a
    file named ``x; rm -rf ~``, ``$(reboot)``, ``'quoted'`` or ``--expect`` stays one file name."""
    inflate = [] if max_inflate is None else ["--max-inflate", f"{max_inflate:g}"]
    words = [python, "-m", "tracetui", *inflate, "open"]
    if save_dir is not None:
        words += ["--save-dir", str(save_dir)]
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


def bound_address(sock: socket.socket) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address ``sock`` listens on (an IPv4 address mapped into IPv6 as itself)."""
    address = ipaddress.ip_address(sock.getsockname()[0].split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def exposure(sock: socket.socket) -> str | None:
    """The warning for a socket that listens beyond this machine (None: loopback only)."""
    address = bound_address(sock)
    if address.is_loopback:
        return None
    where = f"every interface ({address})" if address.is_unspecified else str(address)
    return (
        f"listening on {where}, not this machine only: whoever can reach it and has the URL can use "
        "the explorer (plain http: the URL travels in clear)"
    )


def host_names(host: str, sock: socket.socket) -> list[str]:
    """The names a browser may call the server by (IP addresses are always let in): the one it was
    given, and the machine's own when it listens on every interface."""
    names = [host]
    if bound_address(sock).is_unspecified:
        names += [socket.gethostname(), socket.getfqdn()]
    return names


def url_of(sock: socket.socket, host: str) -> str:
    """The address a browser opens: the name given, or the bound address (the machine's name when
    bound to every interface)."""
    port = sock.getsockname()[1]
    address = bound_address(sock)
    if address.is_unspecified:
        name = socket.gethostname()
    else:
        try:
            ipaddress.ip_address(host)
        except ValueError:
            name = host  # a name (localhost): as given
        else:
            name = str(address)
    if ":" in name:  # an IPv6 address
        name = f"[{name}]"
    return f"http://{name}:{port}"


def default_sessions() -> int:
    """One explorer per :data:`SESSION_MEMORY` of the memory available now, 1 to
    :data:`MAX_DEFAULT_SESSIONS`."""
    available = _available_memory()
    if available is None:
        return MAX_DEFAULT_SESSIONS
    return max(1, min(MAX_DEFAULT_SESSIONS, available // SESSION_MEMORY))


def _available_memory() -> int | None:
    """Bytes of memory available (Linux: ``MemAvailable``), else the machine's, else None."""
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as info:
        for line in info:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return None


def save_folder(save_dir: Path) -> Path:
    """The one folder the tabs write in (``--save-dir``), made if missing, as it resolves now."""
    try:
        save_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TraceError(save_dir, f"cannot make the save folder: {exc.strerror or exc}") from None
    if not save_dir.is_dir():
        raise TraceError(save_dir, "not a folder (--save-dir)")
    return save_dir.resolve()


def serve(
    trace: Path | None,
    host: str,
    port: int,
    save_dir: Path | None = None,
    max_sessions: int | None = None,
    max_inflate: float | None = None,
) -> None:
    """Serve the explorer of ``trace`` (``None``: the bundled sample) until interrupted."""
    try:
        from tracetui.app.web_access import TOKEN, Access
        from tracetui.app.web_server import TraceServer
    except ImportError:
        raise TraceError(None, "serve needs textual-serve: pip install 'tracetui[serve]'") from None
    if trace is not None:
        check_readable(trace)
        trace = trace.resolve()
    sessions = default_sessions() if max_sessions is None else max_sessions
    sock = bind(host, port)
    folder = None if save_dir is None else save_folder(save_dir)
    access = Access.new(sock.getsockname()[1], host_names(host, sock))
    url = f"{url_of(sock, host)}/?{TOKEN}={access.token}"
    name = shown(trace.name if trace is not None else "the bundled sample")
    command = command_line(trace, folder, max_inflate=max_inflate)
    server = TraceServer(command, sock, access, title=f"tracetui · {name}", max_sessions=sessions)
    warning = exposure(sock)
    if warning is not None:
        click.echo(f"tracetui: warning: {warning}", err=True)
    click.echo(f"tracetui: serving {name} at {url} (Ctrl+C stops)")
    where = (
        "to the browser's downloads, nothing on this machine (--save-dir DIR: in DIR)"
        if folder is None
        else f"in {shown(str(folder))} only (--save-dir)"
    )
    click.echo(f"tracetui: exports go {where}; at most {sessions} tabs at once (--max-sessions)")
    sys.stdout.flush()
    server.serve()
