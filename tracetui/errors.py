"""Errors that reach the user as one line, and the exit codes the CLI documents."""

from __future__ import annotations

from pathlib import Path

from tracetui.safetext import shown

# Exit codes (documented in docs/reference.md and in ``tracetui --help``).
EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # ``tracetui check``: at least one expectation failed
EXIT_BAD_INPUT = 2  # bad usage, unreadable trace, bad expectations file
EXIT_INTERNAL = 3  # a bug in tracetui: please report it


class TraceError(Exception):
    """A problem with the user's input, shown as ``path: problem`` on one line; both parts are
    outside text (a file name, a quoted name) and are kept as a terminal may show them."""

    def __init__(self, path: str | Path | None, problem: str) -> None:
        self.path = None if path is None else shown(str(path))
        self.problem = shown(problem)
        super().__init__(f"{self.path}: {self.problem}" if self.path else self.problem)
