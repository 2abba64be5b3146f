"""The ``diff`` and ``check`` click commands (thin: load, compute, print, exit code)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click

from tracetui.output import StdoutClosed
from tracetui.trace import prefetch

TRACE = click.Path(path_type=Path)


@click.command("diff")
@click.argument("trace_a", metavar="A", type=TRACE)
@click.argument("trace_b", metavar="B", type=TRACE)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the comparison as JSON (schema tracetui.diff/1)."
)
@click.option(
    "--report",
    is_flag=True,
    help="Print the report, also on a terminal (where the default is the comparison screen).",
)
@click.pass_context
def diff_command(ctx: click.Context, trace_a: Path, trace_b: Path, as_json: bool, report: bool) -> None:
    """Compare trace A (before) with trace B (after), per call.

    Annotations are paired by name and steps by position. For each: GPU events per call,
    kernels with byte-identical names in both, kernels only in A or only in B (and which fused
    kernel replaced which), GPU and CPU time; the dispatch chains that disappeared or appeared,
    the runtime/driver call mix, and torch.compile's CPU pre-ops.

    On a terminal, opens the comparison screen (the two trees side by side); the report is printed
    when stdout is not a terminal, or with --report.
    """
    if not as_json and not report and on_terminal():
        from tracetui.app.command import open_diff

        ctx.exit(open_diff(trace_a, trace_b))
    prefetch.start(trace_a)
    prefetch.start(trace_b)
    from rich.console import Console

    from tracetui.compare.diff_data import diff_data
    from tracetui.compare.diff_report import diff_renderable
    from tracetui.report.loading import load_with_progress

    data = diff_data(load_with_progress(trace_a), load_with_progress(trace_b))
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    Console(markup=False, highlight=False).print(diff_renderable(data))


def on_terminal() -> bool:
    """Whether stdout is a terminal (``diff`` then opens the comparison screen)."""
    return sys.stdout.isatty()


@click.command("check")
@click.argument("trace", type=TRACE)
@click.option(
    "--expect",
    "expect",
    required=True,
    type=click.Path(path_type=Path),
    help="Expectations file (TOML, [[expect]] tables; see docs/compare.md).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON (schema tracetui.check/1).")
@click.pass_context
def check_command(ctx: click.Context, trace: Path, expect: Path, as_json: bool) -> None:
    """Check TRACE against an expectations file written before looking.

    Prints each expectation, what the trace showed and pass/fail. Exit code 0 when every
    expectation holds, 1 when any fails, 2 for a bad expectations file or trace.
    """
    ctx.exit(run_check(trace, expect, as_json=as_json))


def run_check(trace: Path, expect: Path, as_json: bool = False) -> int:
    """Load, check and print; the exit code (0 all pass, 1 any fails). Bad input raises TraceError."""
    prefetch.start(trace)
    from rich.console import Console

    from tracetui.compare.check import check_trace
    from tracetui.compare.check_report import check_data, check_renderable
    from tracetui.compare.expectations import load_expectations
    from tracetui.errors import EXIT_CHECK_FAILED, EXIT_OK
    from tracetui.report.loading import load_with_progress

    expectations = load_expectations(expect)
    loaded = load_with_progress(trace)
    data = check_data(loaded, expect, check_trace(loaded, expectations))
    with contextlib.suppress(StdoutClosed):  # the verdict stands when the reader leaves early
        if as_json:
            sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        else:
            Console(markup=False, highlight=False).print(check_renderable(data))
    return EXIT_OK if data["passed"] else EXIT_CHECK_FAILED
