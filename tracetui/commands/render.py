"""``tracetui render TRACE --view tree|timeline|tables -o FILE.svg``: a view of the explorer as an SVG
picture (:mod:`tracetui.app.render`)."""

from __future__ import annotations

from pathlib import Path

import click

from tracetui.app.render import TABLE_KEYS, VIEWS, Request, render
from tracetui.commands import max_inflate

SIZE_RANGE = (40, 500)


def parse_size(_ctx: click.Context | None, _param: click.Parameter | None, text: str) -> tuple[int, int]:
    """``--size``: ``"160x48"`` → ``(160, 48)``; a one-line usage error otherwise."""
    parts = text.lower().split("x")
    low, high = SIZE_RANGE
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise click.BadParameter(f"{text!r} is not WIDTHxHEIGHT (e.g. 160x48)")
    width, height = int(parts[0]), int(parts[1])
    if not (low <= width <= high and 10 <= height <= high):
        raise click.BadParameter(f"{text!r}: width {low}–{high}, height 10–{high}")
    return width, height


@click.command("render")
@click.argument("trace", type=click.Path(path_type=Path, dir_okay=True))
@click.option("--view", type=click.Choice(VIEWS), default="tree", show_default=True, help="What to draw.")
@click.option(
    "--node", default=None, help="Put the cursor on the first event named exactly NODE (its details show)."
)
@click.option(
    "--table",
    type=click.Choice(TABLE_KEYS),
    default="kernels",
    show_default=True,
    help="With --view tables: which table (--node then selects its row).",
)
@click.option(
    "--size", default="160x48", show_default=True, callback=parse_size, help="Terminal size, WIDTHxHEIGHT."
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The SVG file."
)
def render_command(
    trace: Path, view: str, node: str | None, table: str, size: tuple[int, int], output: Path
) -> None:
    """Save a view of the explorer on TRACE as an SVG picture (for CI reports, bug reports, docs).

    tree: the explorer as it opens (the hottest chain open to its kernel, the details, the timeline);
    timeline: the tree and the timeline (zoomed to --node when given); tables: one of the tables.
    The same trace and options give a byte-identical file.
    """
    render(trace, output, Request(view, node, table), size, max_inflate())
