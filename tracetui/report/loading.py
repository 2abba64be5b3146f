"""Load a trace (or the ranks of a run) for a CLI command, with progress on a terminal."""

from __future__ import annotations

import sys
import time
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from tracetui import formatting as fmt
from tracetui import settings
from tracetui.ranks.run import report_for
from tracetui.safetext import shown
from tracetui.trace import load, timing

if TYPE_CHECKING:
    from tracetui.ranks.discover import RankSet
    from tracetui.ranks.run import RunReport
    from tracetui.trace import Trace


def load_with_progress(
    path: str | Path, max_inflate: float | None = None, workers: int | None = None
) -> Trace:
    """``tracetui.load`` (``max_inflate``, ``workers``: as for it) with a spinner naming the stage,
    when stderr is a terminal.

    ``TRACETUI_TIMING=1`` prints how long each stage took, on stderr.
    """

    if settings.TIMING.value():
        return _timed(path, max_inflate, workers)
    if not sys.stderr.isatty():
        return load(path, max_inflate=max_inflate, workers=workers)
    console = Console(stderr=True, markup=False, highlight=False)
    name = shown(Path(path).name)  # a file name: outside text
    with console.status(Text(f"loading {name}"), spinner="dots") as status:
        return load(
            path,
            progress=lambda stage: status.update(Text(f"loading {name}: {stage}")),
            fraction=lambda done: status.update(Text(f"loading {name}: reading {round(100 * done)} %")),
            max_inflate=max_inflate,
            workers=workers,
        )


def _timed(path: str | Path, max_inflate: float | None, workers: int | None) -> Trace:

    marks: list[tuple[str, float]] = []
    timing.begin()
    trace = load(
        path,
        progress=lambda stage: marks.append((stage, time.perf_counter())),
        max_inflate=max_inflate,
        workers=workers,
    )
    marks.append(("", time.perf_counter()))
    spans = ", ".join(
        f"{stage} {fmt.duration((end - start) * 1e6)}" for (stage, start), (_, end) in pairwise(marks)
    )
    print(f"tracetui: load {fmt.duration((marks[-1][1] - marks[0][1]) * 1e6)} ({spans})", file=sys.stderr)
    if parts := timing.taken():  # the read's own spans (on this thread: the parts' scans overlap)
        inner = ", ".join(f"{name} {fmt.duration(seconds * 1e6)}" for name, seconds in parts)
        print(f"tracetui: {inner}", file=sys.stderr)
    return trace


def run_report_with_progress(
    target: Path | RankSet,
    rank: int | None = None,
    max_inflate: float | None = None,
    workers: int | None = None,
) -> RunReport:
    """:func:`tracetui.ranks.run.report_for` with a line counting the ranks loaded, when stderr is a
    terminal."""

    if not sys.stderr.isatty():
        return report_for(target, rank, max_inflate=max_inflate, workers=workers)
    console = Console(stderr=True, markup=False, highlight=False)
    with console.status(Text("loading ranks"), spinner="dots") as status:

        def say(done: int, total: int) -> None:
            status.update(Text(f"loading ranks: {done} of {total}"))

        return report_for(target, rank, progress=say, max_inflate=max_inflate, workers=workers)
