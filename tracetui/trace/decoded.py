"""What decoding a trace's JSON yields (:class:`Decoded`), before any table is built."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracetui.trace.args import RawArgs
    from tracetui.trace.frames import Chunk, Columns


@dataclass
class Decoded:
    """What the JSON held: events in file order (as columns), the other top-level keys, and
    where each event's raw args can be read (for the args the columns do not hold)."""

    columns: Columns | list[Chunk]
    top: dict[str, Any]
    form: str  # "object" (Kineto) or "array" (legacy exporter)
    args: RawArgs
    top_keys: list[str] = field(default_factory=list)  # in file order, traceEvents included
    truncated: bool = False
    repairs: list[str] = field(default_factory=list)
    skipped: int = 0  # events too broken to read (reported in ``repairs``)
    decoder: str = "msgspec"  # what read the (repaired) JSON: "native" (the C scanner) or "msgspec"

    @property
    def reader(self) -> str:
        """How the JSON was read, as ``Trace.reader`` says it: the decoder, and " (repairs)"
        when the JSON was broken or held fields of odd types and was repaired first."""
        return self.decoder + (" (repairs)" if self.repairs or self.truncated else "")
