"""The load's stage spans (``TRACETUI_TIMING``): recorded only while on, summed per name, handed
over once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracetui.trace import native, stream, timing

from .test_streaming import FIXTURES, replicated


@pytest.mark.skipif(not native.AVAILABLE, reason="the C extension is not built")
def test_the_read_spans_are_recorded_while_timing_is_on(monkeypatch: pytest.MonkeyPatch) -> None:
    data = replicated(FIXTURES / "mlp_train_eager_default.json.gz", 2)
    monkeypatch.setenv("TRACETUI_TIMING", "1")
    timing.begin()
    stream.read(Path("t.json"), iter([data]), 16384, None, workers=2)
    spans = dict(timing.taken())
    assert {"read", "read: scan", "read: waiting for the parts", "read: adopt"} <= set(spans)
    assert all(seconds >= 0 for seconds in spans.values())
    assert spans["read: scan"] <= spans["read"]
    assert timing.taken() == []  # handed over once: recording stopped


def test_nothing_is_recorded_while_timing_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACETUI_TIMING", raising=False)
    timing.begin()
    with timing.span("read"):
        pass
    timing.add("read", 1.0)
    assert timing.taken() == []
