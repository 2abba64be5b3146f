"""The ``summary`` and ``export`` click commands (thin: load, then call the report).

``TRACE`` is one trace (a file, or a directory as ``tracetui_trace_handler`` writes it), or the
ranks of a distributed run: a directory of rank traces, several paths, a glob, or a dataset written
by ``tracetui convert`` (:mod:`tracetui.ranks.run`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracetui.report.names import FORMATS, RUN_TABLES, TABLES
from tracetui.trace import prefetch

if TYPE_CHECKING:
    from tracetui.ranks.discover import Target

TRACE = click.Path(path_type=Path)
RANK_HELP = "With several ranks: the rank whose single-trace report (or table) to show [default: the first]."


@click.command("summary")
@click.argument("traces", metavar="TRACE...", nargs=-1, required=True, type=TRACE)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the summary as JSON (schema tracetui.summary/1; tracetui.ranks/1 for several ranks).",
)
@click.option("--rank", type=click.IntRange(min=0), default=None, help=RANK_HELP)
def summary_command(traces: tuple[Path, ...], as_json: bool, rank: int | None) -> None:
    """Print a one-screen report of TRACE (a file or a trace directory).

    Trace facts and devices, counts by category, steps, annotations with kernels per call,
    top ops and kernels with their launching ops, orphans and anomalies.

    For the ranks of a distributed run (a directory of rank traces, several files, a glob, or a
    dataset from `tracetui convert`): the Ranks table (steps, GPU busy, compute / communication /
    memory / idle, overlap), collectives aligned across ranks, the straggler verdict, GPU work
    across ranks, then the single-trace report of --rank.
    """
    single, run = _target(traces, rank)
    if single is not None:
        _summary_of_trace(single, as_json)
        return
    from rich.console import Console

    from tracetui.report.loading import run_report_with_progress
    from tracetui.report.ranks_data import ranks_data
    from tracetui.report.ranks_summary import ranks_renderable

    data = ranks_data(run_report_with_progress(run, rank))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    Console(markup=False, highlight=False).print(ranks_renderable(data))


def _summary_of_trace(trace: Path, as_json: bool) -> None:
    prefetch.start(trace)  # reads and scans on another core while the report is imported
    from rich.console import Console

    from tracetui.insight.summary_data import summary_data
    from tracetui.report.loading import load_with_progress
    from tracetui.report.summary import summary_renderable

    data = summary_data(load_with_progress(trace))
    if as_json:
        from tracetui.trace import cache

        data["cache"] = cache.counts()  # this run's, never kept with the summary
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    Console(markup=False, highlight=False).print(summary_renderable(data))


def _target(traces: tuple[Path, ...], rank: int | None) -> tuple[Path | None, Target]:
    """``(the one trace, None)`` when ``traces`` name one trace (as today), else ``(None, the run)``."""
    if len(traces) == 1 and traces[0].exists() and not traces[0].is_dir():  # a file, a pipe, a device
        single: Path | None = traces[0]
        run: Target = traces[0]
    else:
        from tracetui.ranks.discover import is_run, resolve

        run = resolve(traces)
        single = None if is_run(run) else run  # type: ignore[assignment]
    if single is not None and rank is not None:
        raise click.UsageError("--rank needs the traces of several ranks (a directory, files or a dataset)")
    return single, run


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
def export_command(
    traces: tuple[Path, ...], table: str, fmt: str, output: Path | None, rank: int | None
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
    single, run = _target(traces, rank)
    if single is not None:
        if table in RUN_TABLES:
            raise click.UsageError(f"--table {table} needs the traces of several ranks")
        prefetch.start(single)
        from tracetui.report.export import export_parts, write_table
        from tracetui.report.loading import load_with_progress

        loaded = load_with_progress(single)
        write_table(export_parts(loaded, table), fmt, output, loaded.path)
        return
    from tracetui.report.export import write_table
    from tracetui.report.run_export import run_table

    frame, source = run_table(run, table, rank)
    write_table(frame, fmt, output, source)
