"""The ``summary`` and ``export`` click commands (thin: load, then call the report)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tracetui.report.names import FORMATS, TABLES
from tracetui.trace import prefetch

TRACE = click.Path(path_type=Path)


@click.command("summary")
@click.argument("trace", type=TRACE)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the summary as JSON (schema tracetui.summary/1)."
)
def summary_command(trace: Path, as_json: bool) -> None:
    """Print a one-screen report of TRACE (a file or a trace directory).

    Trace facts and devices, counts by category, steps, annotations with kernels per call,
    top ops and kernels with their launching ops, orphans and anomalies.
    """
    prefetch.start(trace)  # reads and scans on another core while the report is imported
    from rich.console import Console

    from tracetui.report.loading import load_with_progress
    from tracetui.report.summary import summary_renderable
    from tracetui.report.summary_data import summary_data

    data = summary_data(load_with_progress(trace))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    Console(markup=False, highlight=False).print(summary_renderable(data))


@click.command("export")
@click.argument("trace", type=TRACE)
@click.option(
    "--table",
    "table",
    type=click.Choice(TABLES),
    default="kernels",
    show_default=True,
    help="Which table: one row per event, per op name, per GPU event (kernels), …",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="csv", show_default=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Output file (default, or -: stdout; parquet needs a file).",
)
def export_command(trace: Path, table: str, fmt: str, output: Path | None) -> None:
    """Write one of TRACE's tables as csv, parquet or json.

    The kernels table has one row per GPU event: name, ts, dur, device, stream, correlation,
    runtime, launch_op, launch_op_id, annotation, step, the decoded kernel name (family, kind,
    arch, tile, stages, layout, fused_ops) and the roofline reading. The memory table has one
    row per allocation or free (profile_memory): device, address, bytes, the allocated and
    reserved totals after it, its op, annotation, step and python frame, and its pair.
    """
    prefetch.start(trace)
    from tracetui.report.export import export_table, write_table
    from tracetui.report.loading import load_with_progress

    loaded = load_with_progress(trace)
    output = None if output == Path("-") else output
    write_table(export_table(loaded, table), fmt, output, loaded.path)
