"""``tracetui open [TRACE]...``: the explorer of a trace, or of the ranks of a run."""

from __future__ import annotations

from pathlib import Path

import click

from tracetui.app.launch import open_run, open_trace
from tracetui.app.save_folder import SaveFolder
from tracetui.commands import WORKERS, max_inflate
from tracetui.ranks.discover import resolve, single_trace


@click.command("open")
@click.argument("traces", metavar="[TRACE]...", nargs=-1, type=click.Path(path_type=Path, dir_okay=True))
@click.option(
    "--expect",
    type=click.Path(path_type=Path),
    help="Expectations file (TOML, as for `tracetui check`): a pass/fail panel; Enter on a failing "
    "check goes to the node that broke it.",
)
@click.option(
    "--save-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write exports and saved screens only in DIR (a name typed is relative to it; nothing "
    "outside it, no file replaced without a yes). `tracetui serve --save-dir` gives it to each tab.",
    metavar="DIR",
)
@WORKERS
def open_command(
    traces: tuple[Path, ...], expect: Path | None, save_dir: Path | None, workers: int | None
) -> int:
    """Explore TRACE (a Chrome trace, .json or .json.gz, or a trace directory) in the terminal.

    Without TRACE, opens the bundled sample trace. For the ranks of a distributed run (a directory
    of rank traces, several files, a glob, or a dataset from `tracetui convert`): the Ranks table,
    the collectives aligned across ranks and the kernels across ranks, then any rank's tree
    ([ and ] switch ranks). Keys: F1 or ? lists them all.
    """
    folder = None if save_dir is None else SaveFolder.only(save_dir)
    if not traces:
        return open_trace(None, expect, max_inflate(), folder, workers)
    target = resolve(traces)
    if (trace := single_trace(target)) is not None:
        return open_trace(trace, expect, max_inflate(), folder, workers)
    if expect is not None:
        raise click.UsageError("--expect checks one trace: give one rank's trace with it")
    return open_run(target, max_inflate(), workers, folder)
