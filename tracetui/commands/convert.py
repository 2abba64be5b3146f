"""``tracetui convert``: a distributed run as a Parquet dataset (thin: resolve, convert, print)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from tracetui.commands import WORKERS, max_inflate
from tracetui.ranks.run import as_rank_set, convert
from tracetui.safetext import shown

TRACE = click.Path(path_type=Path)


@click.command("convert")
@click.argument("traces", metavar="TRACE...", nargs=-1, required=True, type=TRACE)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The dataset folder to write (a new one, or an older dataset with --force).",
)
@click.option(
    "--engine",
    type=click.Choice(("local", "ray")),
    default="local",
    show_default=True,
    help="Load the ranks in local processes, or as Ray tasks (pip install 'tracetui[ray]').",
)
@click.option(
    "--address",
    default=None,
    help="With --engine ray: the cluster to use (auto, HOST:6379 or ray://HOST:10001) [default: a "
    "local Ray with every core].",
)
@WORKERS
@click.option("--force", is_flag=True, help="Replace an existing dataset at OUTPUT.")
def convert_command(
    traces: tuple[Path, ...], output: Path, engine: str, address: str | None, workers: int | None, force: bool
) -> None:
    """Write the ranks of a distributed run as a Hive-partitioned Parquet dataset.

    TRACE is a directory of rank traces, several files or a glob. Each rank is loaded by a worker
    (a local process, or a Ray task on a cluster: every node must see the traces and OUTPUT at the
    same paths), which writes OUTPUT/<table>/rank=<N>/part-0.parquet for the tables events,
    kernels (one row per GPU event, as `export --table kernels`), ops, steps, collectives, ranks
    and kernel_names, and OUTPUT/summaries/rank=<N>.json. `tracetui summary OUTPUT` then reads
    only the small tables; see docs/ranks.md for the schema.
    """
    if address is not None and engine != "ray":
        raise click.UsageError("--address needs --engine ray")
    rank_set = as_rank_set(traces)
    console = Console(stderr=True, markup=False, highlight=False)
    if console.is_terminal:
        with console.status(Text("converting")) as status:

            def say(done: int, total: int) -> None:
                status.update(Text(f"converting: {done} of {total} ranks"))

            facts = convert(rank_set, output, engine, address, force, say, workers, max_inflate())
    else:
        facts = convert(rank_set, output, engine, address, force, None, workers, max_inflate())
    size = sum(p.stat().st_size for p in output.rglob("*") if p.is_file())
    out = Console(markup=False, highlight=False)
    out.print(Text(f"wrote {shown(str(output))} ({len(facts['ranks'])} ranks, {size / 1e6:.1f} MB)"))
    for failed in facts["failed"]:
        out.print(Text(f"rank {failed['rank']} not converted: {shown(failed['error'])}", style="yellow"))
    out.print(Text(f"next: tracetui summary {shown(shlex.quote(str(output)))}", style="dim"))
