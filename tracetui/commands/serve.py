"""``tracetui serve [TRACE]``: the explorer in a web browser (:mod:`tracetui.app.serve`)."""

from __future__ import annotations

from pathlib import Path

import click

from tracetui.app.serve import DEFAULT_HOST, DEFAULT_PORT, MAX_DEFAULT_SESSIONS, serve
from tracetui.commands import max_inflate


@click.command("serve")
@click.argument("trace", required=False, type=click.Path(path_type=Path, dir_okay=True))
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on (0: any free port; the URL says which).",
)
@click.option(
    "--save-dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="The one folder the explorers write exports in (made if missing). Without it nothing is "
    "written on this machine: exports go to the browser's downloads.",
)
@click.option(
    "--max-sessions",
    type=click.IntRange(1, 64),
    default=None,
    metavar="N",
    help=f"Explorers (browser tabs) at once; a tab beyond them gets a page that says so. Default: "
    f"one per GiB of memory available at start, 1 to {MAX_DEFAULT_SESSIONS}.",
)
def serve_command(
    trace: Path | None, host: str, port: int, save_dir: Path | None, max_sessions: int | None
) -> None:
    """Explore TRACE in a web browser (the same explorer as `tracetui open`).

    Listens on 127.0.0.1 (this machine only) unless --host says otherwise (any address that is
    not loopback is warned about), and prints the URL to open: it holds a secret token, new each
    start, without which the server refuses the page and the connection, as it refuses other
    sites' pages. Over SSH: `ssh -L 8000:127.0.0.1:8000 gpu-box`, then open the URL on your
    laptop. Each browser tab runs its own explorer; its exports (E) go in --save-dir only
    (without it: to the browser's downloads, nothing written here), a saved screen (ctrl+s) to
    the browser's downloads. Without TRACE: the bundled sample.
    """
    serve(trace, host, port, save_dir, max_sessions, max_inflate())
