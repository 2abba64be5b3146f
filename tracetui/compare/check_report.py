"""``tracetui check``: results as JSON (schema ``tracetui.check/1``) and as a rich table.

Expectation text came from the user's file and names from the trace: both reach the terminal
only as ``rich.text.Text``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text

from tracetui.report.table import Cell, table
from tracetui.safetext import shown

if TYPE_CHECKING:
    from rich.console import RenderableType

    from tracetui.compare.check import Result
    from tracetui.trace import Trace

SCHEMA = "tracetui.check/1"


def check_data(trace: Trace, expectations: str | Path, results: list[Result]) -> dict[str, Any]:
    """The results as plain JSON values, in file order."""
    failed = sum(not r.passed for r in results)
    return {
        "schema": SCHEMA,
        "trace": {"path": str(trace.path), "name": trace.path.name},
        "expectations": str(expectations),
        "passed": failed == 0,
        "counts": {"checks": len(results), "passed": len(results) - failed, "failed": failed},
        "results": [_record(r) for r in results],
    }


def _record(result: Result) -> dict[str, Any]:
    e, c = result.expectation, result.check
    return {
        "index": e.index,
        "line": c.line,
        "subject": e.subject,
        "target": e.target,
        "per": e.per,
        "note": e.note,
        "label": e.label,
        "check": c.text,
        "key": c.key,
        "quantity": c.quantity,
        "comparison": c.comparison,
        "expected": c.value,
        "passed": result.passed,
        "actual": result.actual,
        "value": result.value,
        "event_id": result.event_id,
    }


def check_renderable(data: dict[str, Any]) -> RenderableType:
    """A table of every check (expectation, what the trace showed, pass/fail) and a verdict."""
    head = Text()
    head.append("check ", style="bold")
    head.append(shown(data["trace"]["name"]), style="bold")  # file names: outside text
    head.append(" against ")
    head.append(shown(Path(data["expectations"]).name), style="bold")
    rows: list[list[Cell]] = []
    for r in data["results"]:
        expectation = Text(r["label"])
        expectation.append(f": {r['check']}", style="bold")
        if r["note"]:
            expectation.append(f"\n{r['note']}", style="dim")
        result = Text("pass", style="green") if r["passed"] else Text("FAIL", style="bold red")
        rows.append([str(r["line"]), expectation, Text(r["actual"]), result])
    grid = table(
        None, [("line", "num"), ("expectation", "wrap"), ("the trace showed", "wrap"), ("", "num")], rows
    )
    counts = data["counts"]
    verdict = Text()
    if data["passed"]:
        verdict.append(f"all {counts['checks']} checks passed", style="bold green")
    else:
        verdict.append(f"{counts['failed']} of {counts['checks']} checks failed", style="bold red")
    return Group(head, grid, verdict)
