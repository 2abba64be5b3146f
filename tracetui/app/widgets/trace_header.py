"""The header: which trace, on which device(s), from which PyTorch, how many events; and warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content
from textual.widgets import Static

from tracetui import formatting as fmt
from tracetui.safetext import shown

if TYPE_CHECKING:
    from tracetui.app.widgets.expect_panel import Checks
    from tracetui.trace import Trace


def device_names(trace: Trace) -> str:
    """``NVIDIA H200`` (``2 × NVIDIA H100`` for several alike), or ``no GPU in the trace``."""
    names = [str(device.get("name") or f"GPU {device.get('id')}") for device in trace.devices]
    return fmt.tally(names) or "no GPU in the trace"


def header_content(
    trace: Trace, *, sample: bool = False, checks: Checks | None = None, rank: str | None = None
) -> Content:
    """The header's lines (trace text as plain text); ``checks``: how many expectations pass;
    ``rank``: which rank of a run this trace is (``rank 2 of 4``)."""
    facts: list[str | tuple[str, str]] = [("tracetui", "bold $text-accent"), "  "]
    if rank is not None:
        facts += [(f" {rank} ", "bold reverse $text-accent"), ("  [ ] ", "$text-muted"), "  "]
    facts += [
        (shown(trace.path.name), "bold"),  # a file name, and device names: outside text
        ("  ·  ", "$text-muted"),
        shown(device_names(trace)),
        ("  ·  ", "$text-muted"),
        trace.format,
        ("  ·  ", "$text-muted"),
        f"{fmt.count(trace.event_count)} events",
    ]
    if checks is not None:
        style = "bold $text-success" if checks.passed == checks.total else "bold $text-error"
        facts += [("  ·  ", "$text-muted"), (checks.summary(), style)]
    parts: list[Content] = [Content.assemble(*facts)]
    if sample:
        parts.append(
            Content.styled(
                "the bundled sample trace: `tracetui open TRACE` opens your own",
                "$text-muted italic",
            )
        )
    if trace.truncated:
        repairs = f" ({'; '.join(trace.repairs)})" if trace.repairs else ""
        parts.append(
            Content.assemble(
                ("⚠ truncated trace", "bold $text-warning"),
                (f": the file ends early; showing every complete event{repairs}", "$text-warning"),
            )
        )
    elif trace.repairs:
        parts.append(Content.styled(f"⚠ repaired: {'; '.join(trace.repairs)}", "$text-warning"))
    return Content("\n").join(parts)


class TraceHeader(Static):
    """One line of facts, plus a line per warning."""

    DEFAULT_CSS = """
    TraceHeader {
        background: $panel;
        padding: 0 1;
        height: auto;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(
        self, trace: Trace, *, sample: bool = False, checks: Checks | None = None, rank: str | None = None
    ) -> None:
        super().__init__(header_content(trace, sample=sample, checks=checks, rank=rank), markup=False)
