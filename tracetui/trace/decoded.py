"""What decoding a trace's JSON yields: :class:`Part` (events msgspec decoded, before polars) and
:class:`Decoded` (the scanned tables, before the model is built)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracetui.trace.limits import LONG_ARGS, Cut, kept_args

if TYPE_CHECKING:
    import polars as pl

    from tracetui.trace.args import RawArgs
    from tracetui.trace.frames import Chunk


@dataclass
class Part:
    """Events decoded by msgspec (a damaged part of the events, or a whole document): their
    columns, each one's raw args (b"": none), and what it took."""

    chunks: list[Chunk]
    args_bytes: list[bytes]
    repairs: list[str] = field(default_factory=list)
    truncated: bool = False
    form: str = "array"
    top: dict[str, Any] = field(default_factory=dict)  # a whole document's other top-level keys
    top_keys: list[str] = field(default_factory=list)
    skipped: int = 0  # events too broken to read (reported in ``repairs``)
    args_cuts: list[Cut] = field(default_factory=list)  # args objects not kept (set from args_bytes)

    def __post_init__(self) -> None:
        self.args_bytes, replaced = kept_args(self.args_bytes)
        self.args_cuts = [(at, LONG_ARGS, length) for at, length in replaced]

    @property
    def size(self) -> int:
        return sum(chunk.size for chunk in self.chunks)

    def cuts(self, offset: int = 0) -> list[Cut]:
        """The values cut and the args not kept (:mod:`limits`), the first event's id ``offset``."""
        found, start = [(at + offset, kind, n) for at, kind, n in self.args_cuts], offset
        for chunk in self.chunks:
            found += [(at + start, kind, n) for at, kind, n in chunk.cuts]
            start += chunk.size
        return sorted(found)


@dataclass
class Decoded:
    """What the JSON held: the scan tables (:data:`~tracetui.trace.fields.SCAN_TABLES`, ids in
    event order), the other top-level keys, and where each event's raw args can be read."""

    tables: dict[str, pl.DataFrame]
    top: dict[str, Any]
    form: str  # "object" (Kineto) or "array" (legacy exporter)
    args: RawArgs
    lanes: pl.DataFrame  # lane (u32), pid, tid: the (pid, tid) pair of each lane number
    top_keys: list[str] = field(default_factory=list)  # in file order, traceEvents included
    truncated: bool = False
    repairs: list[str] = field(default_factory=list)
    decoder: str = "msgspec"  # what read the (repaired) JSON: "native" (the C scanner) or "msgspec"
    events: int = 0  # events read (every phase)
    cuts: list[Cut] = field(default_factory=list)  # values cut, args not kept (:mod:`limits`), by event

    @property
    def reader(self) -> str:
        """How the JSON was read, as ``Trace.reader`` says it: the decoder, and " (repairs)"
        when the JSON was broken or held fields of odd types and was repaired first."""
        return self.decoder + (" (repairs)" if self.repairs or self.truncated else "")
