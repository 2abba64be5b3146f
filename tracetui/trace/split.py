"""Split a JSON array of events at an event boundary near its middle, without copying twice.

The cut is made at ``}`` ``,`` whitespace-with-a-newline ``{``: a raw newline cannot occur
inside a JSON string, and a cut inside nested args would leave a half that is not valid JSON
(callers then decode the whole array in one piece). The comma becomes ``]`` and the byte
before ``{`` becomes ``[`` in one private copy, so both halves are valid arrays.
"""

from __future__ import annotations

import re

import msgspec

_BOUNDARY = re.compile(rb"\}[ \t\r]*,[ \t\r]*\n\s*\{")


def halves(events_json: bytes | msgspec.Raw) -> tuple[memoryview, memoryview] | None:
    """The two halves of ``events_json`` as JSON arrays, or None when no boundary is found."""
    buffer = bytearray(events_json)
    match = _BOUNDARY.search(buffer, len(buffer) // 2)
    if match is None:
        return None
    comma = buffer.index(b",", match.start())
    opening = match.end() - 1
    buffer[comma] = ord("]")
    buffer[opening - 1] = ord("[")
    view = memoryview(buffer)
    return view[: comma + 1], view[opening - 1 :]
