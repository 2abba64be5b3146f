"""Build a big trace from a real one, deterministically: its events replicated with shifted ids and times.

    python benchmarks/make_big_trace.py SOURCE OUT (--copies N | --size 1G) [--level L]

Copy ``k`` of every event (``k = 0 .. N-1``; metadata ``M`` events only once) has its timestamp moved
by ``k`` times the source's span (whole µs, so the written decimals are kept exactly), and its
``correlation``, ``External id``, ``Sequence number``, ``Python id`` / ``Python parent id``, flow ``id``
and ``ProfilerStep#N`` number moved past those of copy ``k - 1``: every copy links, nests and steps
like the source, and no id is shared between copies. The source's layout is kept (its text between
and around the events, the top-level keys before and after ``traceEvents``), so the size per event is
the source's. ``OUT`` ending in ``.gz`` is written gzip'd (isal, level ``--level``, default 1);
otherwise plain. The same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import msgspec

gzip_module: ModuleType
inflate_module: ModuleType
try:
    from isal import igzip as gzip_module
    from isal import isal_zlib as inflate_module
except ImportError:  # pragma: no cover
    import gzip as gzip_module

    inflate_module = zlib

# (kind, pattern): each number the copies move; group 1 is the number.
HOLES = [
    ("ts", re.compile(rb'"ts":\s*(-?[0-9][0-9.eE+-]*)')),
    ("correlation", re.compile(rb'"correlation":\s*([0-9]+)')),
    ("external", re.compile(rb'"External id":\s*([0-9]+)')),
    ("seq", re.compile(rb'"Sequence number":\s*([0-9]+)')),
    ("python", re.compile(rb'"Python (?:parent )?id":\s*([0-9]+)')),
    ("step", re.compile(rb'"name":\s*"ProfilerStep#([0-9]+)"')),
]
FLOW_ID = re.compile(rb'"id":\s*([0-9]+)')
FLOW_PHASES = {"s", "t", "f"}
CHUNK = 4 << 20


class Head(msgspec.Struct):
    ph: str = ""
    ts: float | int | str | None = None
    dur: float | int | str | None = None


def read(path: Path) -> bytes:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        out, rest = [], raw
        while rest[:2] == b"\x1f\x8b":
            inflater = inflate_module.decompressobj(wbits=31)
            out.append(inflater.decompress(rest))
            rest = inflater.unused_data
        raw = b"".join(out)
    return raw


def split(source: bytes) -> tuple[bytes, list[msgspec.Raw], bytes]:
    """The text before the events array's first event, the events, the text after its last."""
    start = source.lstrip()[:1]
    if start == b"[":
        array = msgspec.json.decode(source, type=msgspec.Raw)
    else:
        top = msgspec.json.decode(source, type=dict[str, msgspec.Raw])
        array = top["traceEvents"]
    events = msgspec.json.decode(array, type=list[msgspec.Raw])
    at = source.find(bytes(array))
    body = bytes(array)
    first = body.find(bytes(events[0])) if events else 1
    last = body.rfind(bytes(events[-1])) + len(events[-1]) if events else 1
    return source[: at + first], events, source[at + last :]


class Template:
    """One event's text cut at the numbers the copies move."""

    __slots__ = ("holes", "meta", "parts")

    def __init__(self, text: bytes, flow: bool, meta: bool) -> None:
        found: list[tuple[int, int, str]] = []
        for kind, pattern in HOLES:
            match = pattern.search(text)
            if match:
                found.append((match.start(1), match.end(1), kind))
        if flow and (match := FLOW_ID.search(text)):
            found.append((match.start(1), match.end(1), "flow"))
        found.sort()
        self.parts: list[bytes] = []
        self.holes: list[tuple[str, bytes]] = []
        at = 0
        for start, end, kind in found:
            self.parts.append(text[at:start])
            self.holes.append((kind, text[start:end]))
            at = end
        self.parts.append(text[at:])
        self.meta = meta

    def render(self, shift: dict[str, int]) -> bytes:
        if not self.holes:
            return self.parts[0]
        out = [self.parts[0]]
        for (kind, number), part in zip(self.holes, self.parts[1:], strict=True):
            out.append(_moved(number, shift[kind]) if shift[kind] else number)
            out.append(part)
        return b"".join(out)


def _moved(number: bytes, by: int) -> bytes:
    """``number`` (JSON text) plus the integer ``by``, its decimals kept as written."""
    whole, dot, fraction = number.partition(b".")
    if b"e" in number.lower() or (dot and not fraction.isdigit()):
        return repr(float(number) + by).encode()
    return str(int(whole) + by).encode() + dot + fraction


def plan(events: list[msgspec.Raw]) -> tuple[list[Template], dict[str, int]]:
    """Each event's template and how far each kind of number moves per copy."""
    heads = msgspec.json.decode(b"[" + b",".join(bytes(e) for e in events) + b"]", type=list[Head])
    templates = []
    top = {kind: 0 for kind, _ in HOLES} | {"flow": 0}
    low_step = None
    first, last = math.inf, -math.inf
    for raw, head in zip(events, heads, strict=True):
        template = Template(bytes(raw), head.ph in FLOW_PHASES, head.ph == "M")
        templates.append(template)
        for kind, number in template.holes:
            if kind == "ts":
                continue
            value = int(number)
            top[kind] = max(top[kind], value)
            if kind == "step":
                low_step = value if low_step is None else min(low_step, value)
        if isinstance(head.ts, int | float) and head.ph != "M":
            first = min(first, head.ts)
            end = head.ts + (head.dur if isinstance(head.dur, int | float) else 0)
            last = max(last, end)
    span = math.ceil(last - first) + 1000 if first <= last else 0  # µs, whole, plus 1 ms apart
    shift = {kind: value + 1 for kind, value in top.items()}
    shift["step"] = top["step"] - (low_step or 0) + 1
    shift["ts"] = span
    return templates, shift


def copies(templates: list[Template], shift: dict[str, int], count: int) -> Iterator[bytes]:
    """The events text of every copy, in pieces of about :data:`CHUNK` bytes."""
    sep = b",\n  "
    first = True
    for k in range(count):
        moved = {kind: value * k for kind, value in shift.items()}
        batch: list[bytes] = []
        size = 0
        for template in templates:
            if template.meta and k:
                continue
            text = template.render(moved)
            if not first:
                batch.append(sep)
            first = False
            batch.append(text)
            size += len(text) + 4
            if size >= CHUNK:
                yield b"".join(batch)
                batch, size = [], 0
        if batch:
            yield b"".join(batch)


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def write(out: Path, head: bytes, body: Iterator[bytes], tail: bytes, level: int) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with out.open("wb") as raw:
        gz = out.name.endswith(".gz")
        handle = gzip_module.GzipFile(fileobj=raw, mode="wb", compresslevel=level) if gz else raw
        for piece in _chain(head, body, tail):
            handle.write(piece)
            written += len(piece)
        if handle is not raw:
            handle.close()
    return written


def _chain(head: bytes, body: Iterator[bytes], tail: bytes) -> Iterator[bytes]:
    yield head
    yield from body
    yield tail


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", type=Path)
    parser.add_argument("out", type=Path)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--copies", type=int)
    group.add_argument("--size", help="about this much JSON (e.g. 1G, 3.2G): the copies it takes")
    parser.add_argument("--level", type=int, default=1, help="gzip level for a .gz output (default 1)")
    args = parser.parse_args(argv)
    source = read(args.source)
    head, events, tail = split(source)
    templates, shift = plan(events)
    count = args.copies or max(1, round(parse_size(args.size) / len(source)))
    written = write(args.out, head, copies(templates, shift, count), tail, args.level)
    meta = sum(1 for t in templates if t.meta)
    total = count * len(templates) - (count - 1) * meta
    print(f"{args.out}: {count} copies, {total:,} events, {written / 1e9:.2f} GB of JSON", file=sys.stderr)


if __name__ == "__main__":
    main()
