"""``tracetui open TRACE --expect FILE``: the checks' pass/fail panel under the tree.

One row per check: PASS/FAIL, the expectation (``op aten::t: launches_kernels = false``) and what
the trace showed; Enter (or a click) on a row goes to the node that broke it (``event_id`` of the
check's result). Expectation text comes from the user's file and the actual values name trace
events: both reach the screen as ``Content``, never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from tracetui.app.widgets.cells import pad
from tracetui.safetext import shown

if TYPE_CHECKING:
    from tracetui.compare.check import Result

EXPECTATION_WIDTH = 56  # cells for "label: check" before what the trace showed


@dataclass(frozen=True)
class Checks:
    """The results of an expectations file against the open trace."""

    path: Path
    results: list[Result]

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def total(self) -> int:
        return len(self.results)

    def summary(self) -> str:
        """``expectations: 7/8 pass``."""
        return f"expectations: {self.passed}/{self.total} pass"


def check_row(result: Result) -> Content:
    """One row: the verdict, the expectation and its check, what the trace showed."""
    verdict = ("pass", "$text-success") if result.passed else ("FAIL", "bold $text-error")
    expectation = f"{result.expectation.label}: {result.check.text}"
    return Content.assemble(
        " ",
        verdict,
        "  ",
        (f"{result.check.line:>4}", "$text-muted"),
        "  ",
        pad(expectation, EXPECTATION_WIDTH),
        "  ",
        (shown(result.actual), "" if result.passed else "$text-warning"),  # may quote trace names
    )


class ExpectPanel(OptionList):
    """The checks of ``--expect``, in file order; the first failing one highlighted."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "Back to the tree", show=False, id="expect.leave"),
    ]

    class Chosen(Message):
        """Enter or a click on a check: go to its node."""

        def __init__(self, result: Result) -> None:
            super().__init__()
            self.result = result

    class Left(Message):
        """Escape: back to the tree."""

    def __init__(self, checks: Checks, *, id: str | None = None) -> None:
        super().__init__(*(Option(check_row(r)) for r in checks.results), id=id, markup=False)
        self.checks = checks
        self.border_title = Content(f"{checks.summary()} · {shown(checks.path.name)}")  # a file name
        self.border_subtitle = "Enter: go to the node that broke it · x: hide"
        self.set_class(checks.passed < checks.total, "-failing")

    def on_mount(self) -> None:
        failing = [i for i, r in enumerate(self.checks.results) if not r.passed]
        self.highlighted = failing[0] if failing else (0 if self.checks.results else None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.Chosen(self.checks.results[event.option_index]))

    def action_leave(self) -> None:
        self.post_message(self.Left())
