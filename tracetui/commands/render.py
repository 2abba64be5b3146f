"""``tracetui render TRACE --view tree|timeline|tables|why -o FILE.svg``: a view of the explorer as an SVG
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


def parse_window(
    _ctx: click.Context | None, _param: click.Parameter | None, text: str | None
) -> tuple[float, float] | None:
    """``--window``: ``"12.5:14"`` (ms from the trace's first event) → ``(12.5, 14.0)``."""
    if text is None:
        return None
    parts = text.split(":")
    try:
        start, end = (float(part) for part in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        start = end = None
    if start is None or end is None or not start < end or start != start or end != end:
        raise click.BadParameter(f"{text!r} is not START_MS:END_MS with START < END (e.g. 12.5:14)")
    return start, end


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
    "--window",
    default=None,
    callback=parse_window,
    help="With --view timeline: the time range, START_MS:END_MS from the trace's first event.",
)
@click.option(
    "--lanes",
    default=None,
    help="With --view timeline: the lanes to draw, in order: kinds (cpu, gpu, memory, rank) or label "
    "patterns ('GPU 0 s7', 'CPU pt_*'), comma-separated; a trailing + shows one expanded.",
)
@click.option(
    "--size", default="160x48", show_default=True, callback=parse_size, help="Terminal size, WIDTHxHEIGHT."
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The SVG file."
)
def render_command(
    trace: Path,
    view: str,
    node: str | None,
    table: str,
    window: tuple[float, float] | None,
    lanes: str | None,
    size: tuple[int, int],
    output: Path,
) -> None:
    """Save a view of the explorer on TRACE as an SVG picture (for CI reports, bug reports, docs).

    tree: the explorer as it opens (the hottest chain open to its kernel, the details, the timeline);
    timeline: the timeline full screen, over the whole trace, --window, or zoomed to --node, with
    --lanes; tables: one of the tables; why: the Why view of the step of --node (else of the
    hottest chain's). The same trace and options give a byte-identical file.
    """
    if (window is not None or lanes is not None) and view != "timeline":
        raise click.UsageError("--window and --lanes go with --view timeline")
    render(trace, output, Request(view, node, table, window, lanes), size, max_inflate())
