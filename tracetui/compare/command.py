"""``tracetui check`` (the click command) and what ``tracetui diff`` prints off the screen (its click
command opens the comparison screen on a terminal: :mod:`tracetui.app.command`). Thin: load,
compute, print, exit code."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import click

from tracetui.output import StdoutClosed
from tracetui.trace import prefetch

TRACE = click.Path(path_type=Path)


def print_diff(trace_a: Path, trace_b: Path, *, as_json: bool) -> None:
    """``tracetui diff`` off the screen: the report (rich), or the JSON with the aligned trees."""
    prefetch.start(trace_a)
    prefetch.start(trace_b)
    from rich.console import Console

    from tracetui.compare.diff_data import diff_data
    from tracetui.compare.diff_report import diff_renderable
    from tracetui.report.loading import load_with_progress

    a, b = load_with_progress(trace_a), load_with_progress(trace_b)
    data = diff_data(a, b)
    if as_json:
        from tracetui.compare.pair_tree import PairTree, tree_records
        from tracetui.views.tree import TreeModel

        write_with_tree(data, tree_records(PairTree(TreeModel(a), TreeModel(b))))
        return
    Console(markup=False, highlight=False).print(diff_renderable(data))


def write_with_tree(data: dict[str, Any], tree: list[dict[str, Any]]) -> None:
    """``data`` as indented JSON with ``tree`` as its last key, one pair per line (a tree has as many
    pairs as the traces have events: compact lines keep it greppable and fast to write)."""
    text = json.dumps({**data, "tree": []}, indent=2, ensure_ascii=False)
    head, empty = text.rsplit("[]", 1)
    sys.stdout.write(head + "[")
    for n, record in enumerate(tree):
        sys.stdout.write(("\n    " if n == 0 else ",\n    ") + json.dumps(record, ensure_ascii=False))
    sys.stdout.write(("\n  " if tree else "") + "]" + empty + "\n")


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
