"""Small synthetic traces for the diff and check tests (built with tests.trace.synth)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.trace.synth import annotation, kernel, launch, op, trace_doc, write


def uneven_calls() -> list[dict[str, Any]]:
    """Two steps, one ``fwd`` call each: call 1 launches k_a (inside ``inner``) and k_b, call 2 k_b.

    ``outer`` holds ``inner``; both match the glob ``*er``. ``aten::t`` launches nothing.
    """
    return [
        annotation("ProfilerStep#1", 0.0, 200.0),
        annotation("fwd", 1.0, 90.0),
        op("outer", 2.0, 58.0),
        op("inner", 3.0, 27.0),
        launch("cudaLaunchKernel", 4.0, 5.0, correlation=1),
        launch("cudaLaunchKernel", 35.0, 5.0, correlation=2),
        op("aten::t", 70.0, 5.0),
        kernel("k_a", 10.0, 10.0, correlation=1),
        kernel("k_b", 40.0, 20.0, correlation=2),
        annotation("ProfilerStep#2", 200.0, 200.0),
        annotation("fwd", 201.0, 89.0),
        op("outer", 202.0, 58.0),
        launch("cudaLaunchKernel", 204.0, 5.0, correlation=3),
        kernel("k_b", 210.0, 20.0, correlation=3),
    ]


def uneven_calls_trace(tmp_path: Path) -> Path:
    return write(tmp_path / "uneven.json", trace_doc(uneven_calls()))


def markup_names_trace(tmp_path: Path, kernel_name: str, op_name: str) -> Path:
    """One ``fwd`` call whose op and kernel names look like rich markup."""
    events = [
        annotation("ProfilerStep#1", 0.0, 100.0),
        annotation("fwd", 1.0, 90.0),
        op(op_name, 2.0, 50.0),
        launch("cudaLaunchKernel", 3.0, 5.0, correlation=1),
        kernel(kernel_name, 10.0, 10.0, correlation=1),
    ]
    return write(tmp_path / "markup.json", trace_doc(events))
