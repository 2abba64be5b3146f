"""``tracetui export TRACE... --table T``: one of a trace's (or a run's) tables as csv, parquet or json."""

from __future__ import annotations

from pathlib import Path

import click

from tracetui.commands import WORKERS, max_inflate
from tracetui.commands.summary import RANK_HELP, TRACE, target_of
from tracetui.report.names import FORMATS, RUN_TABLES, TABLES
from tracetui.trace import prefetch


@click.command("export")
@click.argument("traces", metavar="TRACE...", nargs=-1, required=True, type=TRACE)
@click.option(
    "--table",
    "table",
    type=click.Choice(TABLES + RUN_TABLES),
    default="kernels",
    show_default=True,
    help="Which table: one row per event, per op name, per GPU event (kernels), …; for several ranks "
    "also the Ranks table, the aligned collectives, each rank's arrivals, the stragglers, each "
    "rank's calls and time per kernel name, and their spread across ranks.",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="csv", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Output file (default, or -: stdout; parquet needs a file).",
)
@click.option("--rank", type=click.IntRange(min=0), default=None, help=RANK_HELP)
@WORKERS
def export_command(
    traces: tuple[Path, ...], table: str, fmt: str, output: Path | None, rank: int | None, workers: int | None
) -> None:
    """Write one of TRACE's tables as csv, parquet or json.

    The kernels table has one row per GPU event: name, ts, dur, device, stream, correlation,
    runtime, launch_op, launch_op_id, annotation, step, the decoded kernel name (family, kind,
    arch, tile, stages, layout, fused_ops) and the roofline reading. The memory table has one
    row per allocation or free (profile_memory): device, address, bytes, the allocated and
    reserved totals after it, its op, annotation, step and python frame, and its pair.

    For the ranks of a run, --table ranks, collectives, arrivals, stragglers, rank_kernels or
    kernel_spread writes a cross-rank table; the single-trace tables are those of --rank (default:
    the first).
    """
    output = None if output == Path("-") else output
    ratio = max_inflate()
    single, run = target_of(traces, rank)
    if single is not None:
        if table in RUN_TABLES:
            raise click.UsageError(f"--table {table} needs the traces of several ranks")
        prefetch.start(single, ratio, workers)
        from tracetui.report.export import export_parts, write_table
        from tracetui.report.loading import load_with_progress

        loaded = load_with_progress(single, ratio, workers)
        write_table(export_parts(loaded, table), fmt, output, loaded.path)
        return
    from tracetui.report.export import write_table
    from tracetui.report.run_export import run_table

    frame, source = run_table(run, table, rank, ratio, workers)
    write_table(frame, fmt, output, source)
