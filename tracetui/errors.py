"""Errors that reach the user as one line, and the exit codes the CLI documents."""

from __future__ import annotations

import re
import sys
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


# A Rust panic (polars) reaches Python as pyo3's ``PanicException``, a ``BaseException`` (not an
# ``Exception``); one that says it ran out of memory is the input's size, not a bug.
_OUT_OF_MEMORY = re.compile(r"memory allocation|out of memory|capacity overflow|allocation failed", re.I)
OUT_OF_MEMORY = (
    "out of memory: the trace needs more than this process may use (its limit, ulimit -v, or the machine's)"
)


def panics() -> tuple[type[BaseException], ...]:
    """The class of a Rust panic as Python sees it, once polars is imported (else none)."""
    exceptions = sys.modules.get("polars.exceptions")
    found = getattr(exceptions, "PanicException", None)
    return (found,) if isinstance(found, type) and issubclass(found, BaseException) else ()


def unexpected() -> tuple[type[BaseException], ...]:
    """What a handler of unexpected errors catches: any ``Exception``, and a Rust panic."""
    return (Exception, *panics())


def failure(exc: BaseException) -> tuple[str, int]:
    """What an error that is not a :class:`TraceError` says (one line, without ``tracetui: ``)
    and its exit code: out of memory (a ``MemoryError``, or a panic that says so) is the input's
    size (:data:`EXIT_BAD_INPUT`); anything else, a panic too, is a bug (:data:`EXIT_INTERNAL`)."""
    panic = isinstance(exc, panics())
    if isinstance(exc, MemoryError) or (panic and _OUT_OF_MEMORY.search(str(exc))):
        return OUT_OF_MEMORY, EXIT_BAD_INPUT
    kind = "polars panicked" if panic else type(exc).__name__
    return f"internal error: {kind}: {shown(str(exc))}", EXIT_INTERNAL
