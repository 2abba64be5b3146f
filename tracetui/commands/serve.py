"""``tracetui serve [TRACE]``: the explorer in a web browser (:mod:`tracetui.app.serve`)."""

from __future__ import annotations

from pathlib import Path

import click

from tracetui.app.serve import DEFAULT_HOST, DEFAULT_PORT, serve
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
def serve_command(trace: Path | None, host: str, port: int) -> None:
    """Explore TRACE in a web browser (the same explorer as `tracetui open`).

    Listens on 127.0.0.1 (this machine only) unless --host says otherwise, and prints the URL
    to open. Over SSH: `ssh -L 8000:127.0.0.1:8000 gpu-box`, then open the URL on your laptop.
    Each browser tab runs its own explorer. Without TRACE: the bundled sample.
    """
    serve(trace, host, port, max_inflate())
