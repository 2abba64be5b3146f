"""The stages of a capture on stderr (each warm-up step, the first compiling under ``--compile``,
the CUDA graph, each profiled step, the export): a progress bar under the finished stages on a
terminal, one plain line per stage when stderr is piped (``what… done in 0.4 s``, the workloads'
own format)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from tracetui.workloads.runner import progress

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class Stages:
    """Counts ``total`` stages; :meth:`stage` wraps each. ``live``: draw the bar (default: when
    ``stream`` is a terminal)."""

    def __init__(self, total: int, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.total = total
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Stages:
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(file=self.stream, force_terminal=True, highlight=False, markup=False)
            self._bar = Progress(
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("capturing", total=self.total)
        return self

    def __exit__(self, *_: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    @contextlib.contextmanager
    def stage(self, what: str) -> Iterator[None]:
        """One stage: a plain line when piped; on a terminal the bar says it, then it is listed."""
        bar, task = self._bar, self._task
        if bar is None or task is None:
            with progress(what):
                yield
            return
        bar.update(task, description=what)
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            bar.console.print(f"{what}… failed")
            raise
        bar.console.print(f"{what}… done in {time.perf_counter() - start:.1f} s")
        bar.advance(task)
