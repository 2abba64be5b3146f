"""``tracetui summary TRACE...``: the one-screen report of a trace, or of the ranks of a run.

``TRACE`` is one trace (a file, or a directory as ``tracetui_trace_handler`` writes it), or the
ranks of a distributed run: a directory of rank traces, several paths, a glob, or a dataset written
by ``tracetui convert`` (:mod:`tracetui.ranks.run`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from tracetui.commands import WORKERS, max_inflate
from tracetui.ranks import workers as processes
from tracetui.ranks.discover import RankSet, Target, resolve, single_trace
from tracetui.trace import prefetch

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
@WORKERS
def summary_command(traces: tuple[Path, ...], as_json: bool, rank: int | None, workers: int | None) -> None:
    """Print a one-screen report of TRACE (a file or a trace directory).

    Trace facts and devices, counts by category, steps, annotations with kernels per call,
    top ops and kernels with their launching ops, orphans and anomalies.

    For the ranks of a distributed run (a directory of rank traces, several files, a glob, or a
    dataset from `tracetui convert`): the Ranks table (steps, GPU busy, compute / communication /
    memory / idle, overlap), collectives aligned across ranks, the straggler verdict, GPU work
    across ranks, then the single-trace report of --rank.
    """
    summarize_traces(traces, rank, as_json, workers)


def summarize_traces(
    traces: Sequence[Path], rank: int | None = None, as_json: bool = False, workers: int | None = None
) -> None:
    """The summary of what ``traces`` name: one trace's, or a run's (with ``rank``'s own, its ranks
    loaded by ``workers`` processes)."""
    single, run = target_of(traces, rank)
    if single is not None:
        summarize(single, as_json, workers)
        return
    summarize_run(run, rank, as_json, workers)


def summarize(trace: Path, as_json: bool = False, workers: int | None = None) -> None:
    """Load ``trace`` (scanned on ``workers`` cores), compute its summary's data, print it (the
    report, or ``--json``)."""
    ratio = max_inflate()
    prefetch.start(trace, ratio, workers)  # reads and scans on another core while the report is imported
    from rich.console import Console

    from tracetui.insight.summary_data import summary_data
    from tracetui.report.loading import load_with_progress
    from tracetui.report.summary import summary_renderable

    loaded = load_with_progress(trace, ratio, workers)
    data = summary_data(loaded)
    if as_json:
        from tracetui.trace import cache

        data["cache"] = cache.counts()  # this run's, never kept with the summary
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    Console(markup=False, highlight=False).print(summary_renderable(data))


def summarize_run(
    run: Target, rank: int | None = None, as_json: bool = False, workers: int | None = None
) -> None:
    """Load the ranks of ``run`` (a rank set or a dataset), compute the run's summary, print it (the
    report, or ``--json``)."""
    if isinstance(run, RankSet):  # the workers start importing while this process does
        processes.start(run.ranks, workers)
    from rich.console import Console

    from tracetui.ranks.summary_data import ranks_data
    from tracetui.report.loading import run_report_with_progress
    from tracetui.report.ranks_summary import ranks_renderable

    data = ranks_data(run_report_with_progress(run, rank, max_inflate(), workers))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    Console(markup=False, highlight=False).print(ranks_renderable(data))


def target_of(traces: Sequence[Path], rank: int | None) -> tuple[Path | None, Target]:
    """``(the one trace, it)`` when ``traces`` name one trace, else ``(None, the run)``
    (:func:`~tracetui.ranks.discover.single_trace`); ``--rank`` only with a run."""
    run = resolve(traces)
    single = single_trace(run)
    if single is not None and rank is not None:
        raise click.UsageError("--rank needs the traces of several ranks (a directory, files or a dataset)")
    return single, run
