"""The entry points of the apps: the explorer of a trace (``open``, ``capture --open``), of a run's
ranks, and the comparison screen (``diff`` on a terminal)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tracetui.compare.expectations import load_expectations
from tracetui.errors import TraceError
from tracetui.trace import prefetch
from tracetui.trace.source import check_readable

if TYPE_CHECKING:
    from tracetui.app.save_folder import SaveFolder
    from tracetui.ranks.discover import RankSet


def default_trace() -> Path:
    """The bundled sample trace shown when no file is given."""
    try:
        from tracetui import sample_traces
    except ImportError:
        raise TraceError(None, "no trace given and the bundled samples are not installed") from None
    return sample_traces.default_trace()


def open_trace(
    path: Path | None,
    expect: Path | None = None,
    max_inflate: float | None = None,
    save_folder: SaveFolder | None = None,
    workers: int | None = None,
) -> int:
    """Run the explorer on ``path`` (``None``: the bundled sample), with the pass/fail panel of an
    expectations file when ``expect`` is given, writing files in ``save_folder`` (default: the
    current folder). Returns the exit status. A bad expectations file raises
    :class:`TraceError` (``FILE: line N: problem``) before the app starts. ``max_inflate``,
    ``workers``: as for :func:`tracetui.load`."""
    checks = None
    if expect is not None:
        checks = (expect, load_expectations(expect))
    sample = path is None
    target = default_trace() if path is None else path
    check_readable(target)
    prefetch.start(target, max_inflate, workers)  # reads and scans on another core while textual is imported
    from tracetui.app.app import TraceApp

    app = TraceApp(
        target,
        sample=sample,
        freeze_gc=True,
        expect=checks,
        max_inflate=max_inflate,
        save_folder=save_folder,
        workers=workers,
    )
    app.run()
    return app.return_code or 0


def open_diff(path_a: Path, path_b: Path, max_inflate: float | None = None) -> int:
    """Run the comparison screen on two traces. Returns the exit status."""
    check_readable(path_a)
    check_readable(path_b)
    prefetch.start(path_a, max_inflate)
    prefetch.start(path_b, max_inflate)
    from tracetui.app.diff_app import DiffApp

    app = DiffApp(path_a, path_b, freeze_gc=True, max_inflate=max_inflate)
    app.run()
    return app.return_code or 0


def open_run(
    target: RankSet | Path,
    max_inflate: float | None = None,
    workers: int | None = None,
    save_folder: SaveFolder | None = None,
) -> int:
    """Run the explorer of a distributed run (a rank set, or a dataset): the Ranks screen first."""
    from tracetui.app.run_app import RunApp

    name = target.name if isinstance(target, Path) else run_name(target)
    app = RunApp(
        target, name, freeze_gc=True, max_inflate=max_inflate, workers=workers, save_folder=save_folder
    )
    app.run()
    return app.return_code or 0


def run_name(rank_set: RankSet) -> str:
    """How the screens call a rank set: its directory's name, else what the user typed."""
    return rank_set.directory.name if rank_set.directory is not None else rank_set.label
