"""Shared intermediates kept per live object (``tracetui.trace.memo.kept``)."""

from __future__ import annotations

import gc
from pathlib import Path

import polars as pl

import tracetui
from tracetui.trace import memo
from tracetui.trace.memo import kept

FIXTURES = Path(__file__).parent.parent / "fixtures"


class Owner:
    pass


def test_computed_once_per_owner_and_name_and_dropped_with_the_owner() -> None:
    calls: list[str] = []

    def compute(tag: str) -> str:
        calls.append(tag)
        return tag

    first, second = Owner(), Owner()
    assert kept(first, "x", lambda: compute("a")) == "a"
    assert kept(first, "x", lambda: compute("b")) == "a"  # kept: not computed again
    assert kept(first, "y", lambda: compute("c")) == "c"
    assert kept(second, "x", lambda: compute("d")) == "d"
    assert calls == ["a", "c", "d"]
    key = id(first)
    del first
    gc.collect()
    assert key not in memo._KEPT  # nothing outlives its owner


def test_the_span_tables_read_the_annotations_found_once() -> None:
    """The span functions' user annotations: found once per events frame, the same rows as a scan."""
    trace = tracetui.load(FIXTURES / "capture_mlp_compiled_train.json.gz")
    trace.annotation_instances  # noqa: B018 (computes them)
    found = memo._KEPT[id(trace._span_events)]["annotations"]
    scan = trace._span_events.filter(pl.col("cat") == "user_annotation")
    assert found.equals(scan) and len(found) > 0
