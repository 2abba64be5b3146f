"""The commands whose default is a screen: ``tracetui open [TRACE]`` and ``tracetui diff A B`` (on a
terminal; else it prints ``compare``'s report or JSON), and :func:`open_trace` for ``capture --open``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracetui.errors import TraceError
from tracetui.trace import prefetch
from tracetui.trace.source import check_readable

if TYPE_CHECKING:
    from tracetui.ranks.discover import RankSet


def default_trace() -> Path:
    """The bundled sample trace shown when no file is given."""
    try:
        from tracetui import sample_traces
    except ImportError:
        raise TraceError(None, "no trace given and the bundled samples are not installed") from None
    return sample_traces.default_trace()


def open_trace(path: Path | None, expect: Path | None = None) -> int:
    """Run the explorer on ``path`` (``None``: the bundled sample), with the pass/fail panel of an
    expectations file when ``expect`` is given. Returns the exit status. A bad expectations file
    raises :class:`TraceError` (``FILE: line N: problem``) before the app starts."""
    checks = None
    if expect is not None:
        from tracetui.compare.expectations import load_expectations

        checks = (expect, load_expectations(expect))
    sample = path is None
    target = default_trace() if path is None else path
    check_readable(target)
    prefetch.start(target)  # reads and scans on another core while textual is imported
    from tracetui.app.app import TraceApp

    app = TraceApp(target, sample=sample, freeze_gc=True, expect=checks)
    app.run()
    return app.return_code or 0


def open_diff(path_a: Path, path_b: Path) -> int:
    """Run the comparison screen on two traces. Returns the exit status."""
    check_readable(path_a)
    check_readable(path_b)
    prefetch.start(path_a)
    prefetch.start(path_b)
    from tracetui.app.diff_app import DiffApp

    app = DiffApp(path_a, path_b, freeze_gc=True)
    app.run()
    return app.return_code or 0


def open_run(target: RankSet | Path) -> int:
    """Run the explorer of a distributed run (a rank set, or a dataset): the Ranks screen first."""
    from tracetui.app.run_app import RunApp

    name = target.name if isinstance(target, Path) else run_name(target)
    app = RunApp(target, name, freeze_gc=True)
    app.run()
    return app.return_code or 0


def run_name(rank_set: RankSet) -> str:
    """How the screens call a rank set: its directory's name, else what the user typed."""
    return rank_set.directory.name if rank_set.directory is not None else rank_set.label


@click.command("open")
@click.argument("traces", metavar="[TRACE]...", nargs=-1, type=click.Path(path_type=Path, dir_okay=True))
@click.option(
    "--expect",
    type=click.Path(path_type=Path),
    help="Expectations file (TOML, as for `tracetui check`): a pass/fail panel; Enter on a failing "
    "check goes to the node that broke it.",
)
def open_command(traces: tuple[Path, ...], expect: Path | None) -> int:
    """Explore TRACE (a Chrome trace, .json or .json.gz, or a trace directory) in the terminal.

    Without TRACE, opens the bundled sample trace. For the ranks of a distributed run (a directory
    of rank traces, several files, a glob, or a dataset from `tracetui convert`): the Ranks table,
    the collectives aligned across ranks and the kernels across ranks, then any rank's tree
    ([ and ] switch ranks). Keys: F1 or ? lists them all.
    """
    if not traces or (len(traces) == 1 and traces[0].is_file()):
        return open_trace(traces[0] if traces else None, expect)
    from tracetui.ranks.discover import is_dataset, resolve

    target = resolve(traces)
    if isinstance(target, Path) and not is_dataset(target):
        return open_trace(target, expect)
    if expect is not None:
        raise click.UsageError("--expect checks one trace: give one rank's trace with it")
    return open_run(target)


@click.command("diff")
@click.argument("trace_a", metavar="A", type=click.Path(path_type=Path))
@click.argument("trace_b", metavar="B", type=click.Path(path_type=Path), required=False)
@click.option(
    "--ranks",
    metavar="R1,R2",
    default=None,
    help="A is a distributed run (a directory of rank traces, or a dataset): compare its ranks R1 and R2.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the comparison as JSON (schema tracetui.diff/1), the aligned trees included.",
)
@click.option(
    "--report",
    is_flag=True,
    help="Print the report, also on a terminal (where the default is the comparison screen).",
)
@click.pass_context
def diff_command(
    ctx: click.Context, trace_a: Path, trace_b: Path | None, ranks: str | None, as_json: bool, report: bool
) -> None:
    """Compare trace A (before) with trace B (after), per call; or two ranks of a run (--ranks).

    Annotations are paired by name and steps by position. For each: GPU events per call,
    kernels with byte-identical names in both, kernels only in A or only in B (and which fused
    kernel replaced which), GPU and CPU time; the dispatch chains that disappeared or appeared,
    the runtime/driver call mix, and torch.compile's CPU pre-ops.

    On a terminal, opens the comparison screen (the two trees side by side); the report is printed
    when stdout is not a terminal, or with --report.
    """
    from tracetui.ranks.command import diff_pair

    trace_a, trace_b = diff_pair(trace_a, trace_b, ranks)
    if not as_json and not report and on_terminal():
        ctx.exit(open_diff(trace_a, trace_b))
    from tracetui.compare.command import print_diff

    print_diff(trace_a, trace_b, as_json=as_json)


def on_terminal() -> bool:
    """Whether stdout is a terminal (``diff`` then opens the comparison screen)."""
    return sys.stdout.isatty()
