"""``tracetui export`` of a distributed run: a cross-rank table, or one rank's table, of a rank set or a
dataset (:mod:`tracetui.ranks`). Apart from :mod:`tracetui.report.export`, which the ranks' dataset
uses, so that the core never imports back into this surface."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from tracetui.errors import TraceError
from tracetui.ranks import dataset
from tracetui.ranks.discover import RankSet
from tracetui.ranks.run import report_for
from tracetui.report.export import export_parts
from tracetui.report.loading import load_with_progress
from tracetui.report.names import RUN_TABLES

if TYPE_CHECKING:
    from tracetui.ranks.discover import Target


def run_table(
    target: Target,
    table: str,
    rank: int | None,
    max_inflate: float | None = None,
    workers: int | None = None,
) -> tuple[pl.DataFrame | Iterator[pl.DataFrame], Path]:
    """A table of a distributed run (a rank set or a dataset) and the path it came from: a
    cross-rank table, or a single-trace table of ``rank`` (default: the first; of a rank set, in
    parts as :func:`~tracetui.report.export.export_parts` gives them). ``max_inflate``: as for
    :func:`tracetui.load`; ``workers``: the processes that load the ranks."""

    where = target.directory or Path(target.label) if isinstance(target, RankSet) else target
    if table in RUN_TABLES:
        analysis = report_for(target, rank, summary=False, max_inflate=max_inflate, workers=workers).analysis
        frames = {
            "ranks": analysis.ranks,
            "collectives": analysis.collectives,
            "arrivals": analysis.arrivals,
            "stragglers": analysis.stragglers,
            "rank_kernels": analysis.rank_kernels,
            "kernel_spread": analysis.kernels,
        }
        return frames[table], where
    if isinstance(target, RankSet):
        entry = target.file(rank) if rank is not None else target.ranks[0]
        loaded = load_with_progress(entry.path, max_inflate)
        return export_parts(loaded, table), loaded.path
    if table not in dataset.BIG_TABLES:
        raise TraceError(target, f"a dataset holds {', '.join(dataset.BIG_TABLES)} per rank, not {table}")
    ranks = [r["rank"] for r in dataset.read_manifest(target)["ranks"]]
    chosen = rank if rank is not None else (ranks[0] if ranks else 0)
    frame = dataset.scan(target, table, [chosen]).drop("rank").collect()
    return frame, target
