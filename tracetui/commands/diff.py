"""``tracetui diff A B`` (or ``diff RUN --ranks R1,R2``): on a terminal the comparison screen, else
the report or the JSON of :mod:`tracetui.compare`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from tracetui.app.launch import open_diff
from tracetui.commands import max_inflate
from tracetui.ranks.discover import resolve
from tracetui.trace import prefetch


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
    trace_a, trace_b = diff_pair(trace_a, trace_b, ranks)
    if not as_json and not report and on_terminal():
        ctx.exit(open_diff(trace_a, trace_b, max_inflate()))
    print_diff(trace_a, trace_b, as_json=as_json)


def on_terminal() -> bool:
    """Whether stdout is a terminal (``diff`` then opens the comparison screen)."""
    return sys.stdout.isatty()


def diff_pair(trace_a: Path, trace_b: Path | None, ranks: str | None) -> tuple[Path, Path]:
    """``tracetui diff``'s two traces: A and B, or the ranks ``R1,R2`` of run A (``--ranks``)."""
    if ranks is None:
        if trace_b is None:
            raise click.UsageError("missing trace B (or give one run and --ranks R1,R2)")
        return trace_a, trace_b
    if trace_b is not None:
        raise click.UsageError("--ranks compares two ranks of one run: give the run only, not B")
    try:
        first, second = (int(part) for part in ranks.split(","))
    except ValueError:
        raise click.BadParameter("expected two rank numbers, e.g. 0,3", param_hint="--ranks") from None
    from tracetui.ranks.run import rank_paths

    path_a, path_b = rank_paths(resolve([trace_a]), [first, second])
    return path_a, path_b


def print_diff(trace_a: Path, trace_b: Path, *, as_json: bool) -> None:
    """``tracetui diff`` off the screen: the report (rich), or the JSON with the aligned trees."""
    ratio = max_inflate()
    prefetch.start(trace_a, ratio)
    prefetch.start(trace_b, ratio)
    from rich.console import Console

    from tracetui.compare.diff_data import diff_data
    from tracetui.compare.diff_report import diff_renderable
    from tracetui.compare.pair_tree import PairTree, tree_records
    from tracetui.report.loading import load_with_progress
    from tracetui.views.tree import TreeModel

    a, b = load_with_progress(trace_a, ratio), load_with_progress(trace_b, ratio)
    data = diff_data(a, b)
    if as_json:
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
