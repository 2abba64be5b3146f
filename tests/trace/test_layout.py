"""The tables a trace is made of have exactly the columns and types ``layout`` declares (what a
cache checks an entry against), on every fixture and on both decoders."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from unittest.mock import patch

import polars as pl
import pytest

import tracetui
from tracetui.trace import native
from tracetui.trace.layout import ARGS_TABLES, MODEL_TABLES, schema

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json.gz")), ids=lambda p: p.name)
def test_every_table_has_the_declared_schema(path: Path) -> None:
    traces = [tracetui.load(path)]
    with patch.object(native, "scanner", lambda: None):  # the msgspec path
        traces.append(tracetui.load(path))
    for trace in traces:
        for name in MODEL_TABLES:
            assert dict(getattr(trace, name).schema) == schema(name), (trace.reader, name)
        stored = trace.stored_tables()
        for name in ARGS_TABLES:
            assert dict(stored[name].schema) == schema(name), name
        assert set(stored) == {*MODEL_TABLES, *ARGS_TABLES}


def test_the_events_text_is_dictionary_encoded() -> None:
    """``cat``, ``name``, ``pid`` and ``tid`` are as many as the complete events: Categorical, on
    both decoders, with the values as written."""
    path = FIXTURES / "mlp_eager.json.gz"
    traces = [tracetui.load(path)]
    with patch.object(native, "scanner", lambda: None):
        traces.append(tracetui.load(path))
    doc = json.loads(gzip.decompress(path.read_bytes()))
    complete = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    for trace in traces:
        events = trace.events
        for column in ("cat", "name", "pid", "tid"):
            assert events[column].dtype == pl.Categorical, (trace.reader, column)
        assert events["name"].to_list() == [e["name"] for e in complete]
        assert events["pid"].to_list() == [str(e["pid"]) for e in complete]
        assert events["tid"].to_list() == [str(e["tid"]) for e in complete]
    assert traces[0].events.equals(traces[1].events)
