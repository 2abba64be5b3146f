"""``tracetui summary TRACE...``: the one-screen report of a trace, or of the ranks of a run.

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

from tracetui.trace import prefetch

if TYPE_CHECKING:
    from tracetui.ranks.discover import Target

TRACE = click.Path(path_type=Path)
RANK_HELP = "With several ranks: the rank whose single-trace report (or table) to show [default: the first]."
WORKERS = click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="With several ranks: the processes that load them [default: TRACETUI_WORKERS, else the cores].",
)


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
    single, run = target_of(traces, rank)
    if single is not None:
        summarize(single, as_json)
        return
    summarize_run(run, rank, as_json, workers)


def summarize(trace: Path, as_json: bool = False) -> None:
    """Load ``trace``, compute its summary's data, print it (the report, or ``--json``)."""
    prefetch.start(trace)  # reads and scans on another core while the report is imported
    from rich.console import Console

    from tracetui.insight.summary_data import summary_data
    from tracetui.report.loading import load_with_progress
    from tracetui.report.summary import summary_renderable

    loaded = load_with_progress(trace)
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
    """Load the ranks of ``run`` (a rank set, a dataset, or a folder of rank traces), compute the
    run's summary, print it (the report, or ``--json``)."""
    from tracetui.ranks.discover import RankSet

    if isinstance(run, RankSet):  # the workers start importing while this process does
        from tracetui.ranks import workers as processes

        processes.start(run.ranks, workers)
    from rich.console import Console

    from tracetui.ranks.discover import resolve
    from tracetui.ranks.summary_data import ranks_data
    from tracetui.report.loading import run_report_with_progress
    from tracetui.report.ranks_summary import ranks_renderable

    target = resolve([run]) if isinstance(run, Path) else run
    data = ranks_data(run_report_with_progress(target, rank, workers))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    Console(markup=False, highlight=False).print(ranks_renderable(data))


def target_of(traces: tuple[Path, ...], rank: int | None) -> tuple[Path | None, Target]:
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
