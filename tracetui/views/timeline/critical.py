"""The critical path as a timeline overlay: the events :mod:`tracetui.insight.critical_path` found on
the path of every step (else of every annotation call), to mark on their lanes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from tracetui import formatting as fmt
from tracetui.insight.critical_path import CriticalPaths, annotation_paths, piece_parts, step_paths

if TYPE_CHECKING:
    from collections.abc import Callable

    from tracetui.trace import Trace

LEGEND = "critical path"


def critical_path_overlay(trace: Trace) -> tuple[list[int], str]:
    """The ids of the events on the steps' critical paths (a trace without steps: the annotation
    calls'), sorted, and the header's legend (``critical path: 3 steps, 12.4 ms``; its length is the
    paths' summed ``length_us``, as ``summary`` and ``why`` give it); no spans: ``([], "")``. The
    pieces are made a part of the spans at a time (:func:`piece_parts`), only their ids kept."""
    kinds: tuple[tuple[str, Callable[[Trace], CriticalPaths]], ...] = (
        ("step", step_paths),
        ("annotation", annotation_paths),
    )
    for what, paths_of in kinds:
        paths = paths_of(trace)
        if paths.spans.is_empty():
            continue
        found = [part.select(pl.col("id").drop_nulls().unique()) for part in piece_parts(trace, paths)]
        ids = pl.concat(found)["id"].unique().sort().to_list() if found else []
        count = paths.spans.height
        length = float(paths.spans["length_us"].sum())
        return ids, f"{LEGEND}: {count} {what}{'s' if count != 1 else ''}, {fmt.duration(length)}"
    return [], ""
