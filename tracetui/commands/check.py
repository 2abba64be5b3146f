"""``tracetui check TRACE --expect FILE``: each expectation, what the trace showed, pass or fail."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click

from tracetui.commands import WORKERS, max_inflate
from tracetui.errors import EXIT_CHECK_FAILED, EXIT_OK
from tracetui.output import StdoutClosed
from tracetui.trace import prefetch

TRACE = click.Path(path_type=Path)


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
@WORKERS
@click.pass_context
def check_command(ctx: click.Context, trace: Path, expect: Path, as_json: bool, workers: int | None) -> None:
    """Check TRACE against an expectations file written before looking.

    Prints each expectation, what the trace showed and pass/fail. Exit code 0 when every
    expectation holds, 1 when any fails, 2 for a bad expectations file or trace.
    """
    ctx.exit(run_check(trace, expect, as_json=as_json, workers=workers))


def run_check(trace: Path, expect: Path, as_json: bool = False, workers: int | None = None) -> int:
    """Load (scanned on ``workers`` cores), check and print; the exit code (0 all pass, 1 any
    fails). Bad input raises TraceError."""
    ratio = max_inflate()
    prefetch.start(trace, ratio, workers)
    from rich.console import Console

    from tracetui.compare.check import check_trace
    from tracetui.compare.check_report import check_data, check_renderable
    from tracetui.compare.expectations import load_expectations
    from tracetui.report.loading import load_with_progress

    expectations = load_expectations(expect)
    loaded = load_with_progress(trace, ratio, workers)
    data = check_data(loaded, expect, check_trace(loaded, expectations))
    with contextlib.suppress(StdoutClosed):  # the verdict stands when the reader leaves early
        if as_json:
            sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        else:
            Console(markup=False, highlight=False).print(check_renderable(data))
    return EXIT_OK if data["passed"] else EXIT_CHECK_FAILED
