"""The tables a trace is made of have exactly the columns and types ``layout`` declares (what a
cache checks an entry against), on every fixture and on both decoders."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

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
