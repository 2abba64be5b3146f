"""The CLI's commands, one module per command: the click command and its options, calling into the
packages that own the work (:mod:`tracetui.cli` imports each lazily).

A command that loads a trace starts :mod:`tracetui.trace.prefetch` first and imports its work after
it (the scan runs on another core while polars, rich or textual are imported): that import, in the
command's body, is this package's one lazy seam.
"""

from __future__ import annotations

import click

WORKERS = click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help=(
        "The cores a load uses: one trace's scanners (at most 16), or the processes that load a "
        "run's ranks [default: TRACETUI_WORKERS, else the cores]."
    ),
)


def max_inflate() -> float | None:
    """``tracetui --max-inflate RATIO`` (the group's option), handed to every load as a value; None
    when not given (the load reads ``TRACETUI_MAX_INFLATE``)."""
    ctx = click.get_current_context(silent=True)
    value = None if ctx is None else ctx.find_root().params.get("max_inflate")
    return value if isinstance(value, float) else None
