"""Types of the C extension built from ``_scan.c`` (see its opening comment)."""

from collections.abc import Sequence
from typing import Any

# (json key, kind code, inside args): see tracetui.trace.fields.scan_fields
Field = tuple[bytes, int, bool]

class Column:
    """One decoded column, exported once through the Arrow PyCapsule interface."""

    def __arrow_c_array__(self, requested_schema: object = None) -> tuple[object, object]: ...
    def __len__(self) -> int: ...

def scan(
    buffer: bytes, fields: Sequence[Field], /
) -> tuple[str, list[tuple[str, int, int]], tuple[int, int], int, list[Column], tuple[bool, ...]] | str: ...
def pick(
    buffer: bytes, starts: Sequence[int | None], ends: Sequence[int | None], fields: Sequence[Field], /
) -> tuple[list[Column], tuple[bool, ...]] | str: ...
def nest(track: Any, end: Any, /) -> tuple[Column, Column, Column, Column] | None: ...
def marked_ancestor(parent: Any, marked: Any, /) -> Column | None: ...
