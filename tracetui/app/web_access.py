"""Who may use a served explorer (``tracetui serve``): its own page, with the server's secret token.

Without this any web page the user visits could open a websocket to the server (browsers let a
page connect anywhere) and drive an explorer, and any local user could. Every request, the page,
its files, the websocket and the downloads, must pass three checks (:meth:`Access.refusal`):

- ``Host`` names this server and its port: an IP address, ``localhost``, or a name the server was
  given (the machine's own when it listens on every interface), with the port it listens on. A
  page under another name that resolves here (DNS rebinding) is refused, and so is another port
  (an SSH tunnel forwards the same port: ``ssh -L 8000:127.0.0.1:8000``).
- ``Origin``, which browsers send with a websocket and with any cross-site request, is the
  page's own: ``http://`` and that Host. A page elsewhere is refused.
- the token (``secrets.token_urlsafe``, new each start, compared in constant time): in the URL
  the server prints (``?token=…``, as Jupyter does), then in the cookie that page sets
  (``HttpOnly``, ``SameSite=Strict``: sent only by this site's own pages), which the browser sends
  with the websocket, the downloads and the page's files.

A refused request is answered 403 and logged on one line.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from aiohttp import hdrs, web

TOKEN = "token"  # the URL's query parameter
HOST = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+(?:%[\w.-]+)?)\]|(?P<name>[A-Za-z0-9.-]+))(?::(?P<port>[0-9]{1,5}))?"
)


@dataclass(frozen=True)
class Access:
    """``token``: the secret; ``cookie``: the name of the cookie that carries it; ``names``: the
    host names (besides IP addresses and ``localhost``) a request may call the server by;
    ``port``: the one it listens on."""

    token: str
    cookie: str
    names: frozenset[str]
    port: int

    @classmethod
    def new(cls, port: int, names: Iterable[str] = ()) -> Access:
        """A fresh token; the cookie is named for the port (two servers on one machine keep theirs)."""
        known = {"localhost", *(name.lower().rstrip(".") for name in names if name)}
        return cls(secrets.token_urlsafe(32), f"tracetui-{port}", frozenset(known), port)

    def refusal(self, request: web.BaseRequest) -> str | None:
        """Why ``request`` is refused, in a few words (None: it may go on)."""
        host = request.headers.get(hdrs.HOST, "")
        if not self.knows(host):
            return f"Host {host!r} is not this server"
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is not None and origin.lower() != f"http://{host.lower()}":
            return f"Origin {origin!r} is not this server's page"
        given = request.query.get(TOKEN) or request.cookies.get(self.cookie)
        if not given:
            return "no token"
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return "wrong token"
        return None

    def knows(self, host: str) -> bool:
        """Whether a ``Host`` header (``name[:port]``, ``[v6]:port``; no port: 80) names this server
        and its port."""
        match = HOST.fullmatch(host)
        if match is None or int(match.group("port") or 80) != self.port:
            return False
        name = match.group("v6") or match.group("name")
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return match.group("v6") is None and name.lower().rstrip(".") in self.names
        return True

    def keep(self, response: web.StreamResponse) -> None:
        """Set the cookie that carries the token on the page's response."""
        response.set_cookie(self.cookie, self.token, path="/", httponly=True, samesite="Strict")
