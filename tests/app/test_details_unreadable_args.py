"""An event's raw args that cannot be read (a cache entry found damaged, a trace file changed since it
was opened) are one line in the details pane, not a worker's traceback; the failed source is not
asked again."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import tracetui
from tracetui.app.widgets.details import describe
from tracetui.errors import TraceError
from tracetui.trace.args import Deferred, RawArgs
from tracetui.views.insight import Insight
from tracetui.views.tree import TreeModel

FIXTURE = Path(__file__).parent.parent / "fixtures" / "mlp_eager.json.gz"


def test_unreadable_args_are_one_line_in_the_details_and_asked_once() -> None:
    trace = tracetui.load(FIXTURE)
    opened: list[int] = []

    def gone() -> RawArgs:
        opened.append(1)
        raise TraceError(trace.path, "its cache entry was damaged while in use (args_data); open it again")

    trace.raw_args = Deferred(gone)
    kernel = int(trace.gpu.filter(pl.col("cat") == "kernel")["id"][0])
    model = TreeModel(trace)
    line = "Args\n  not readable: its cache entry was damaged while in use (args_data); open it again"
    for _ in range(2):
        assert line in describe(trace, model, kernel, Insight()).plain
    assert opened == [1]  # the answer stands: the source is not opened again
