"""A dataset's parts as its manifest records them, and their check at read.

Each file a worker writes into a dataset (a table's ``rank=<N>/part-0.parquet``, a rank's summary
and facts) is recorded when written: its size, CRC-32, and for a table its rows and schema (the
schema by a digest: the manifest lists each schema once, ``schemas``). Reading a part checks all
of them (:func:`read_table`, :func:`read_bytes`): a part that is gone, of another size, whose bytes
changed (one flipped byte), or whose schema or rows are not those recorded is a :class:`Damaged`
part, named by its path in the dataset. Files the manifest does not list are never read
(:func:`strays` names them).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from tracetui.trace.cache_files import crc32

Record = dict[str, Any]  # {"bytes", "crc32", "rows"?, "schema"?}
Schemas = dict[str, dict[str, str]]  # digest -> {column: dtype}


class Damaged(Exception):
    """A part of a dataset that is missing or not as its manifest records it."""

    def __init__(self, part: str, problem: str) -> None:
        super().__init__(f"{part} {problem}")
        self.part, self.problem = part, problem


def schema_of(frame: pl.DataFrame) -> dict[str, str]:
    return {name: str(dtype) for name, dtype in frame.schema.items()}


def schema_digest(schema: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(list(schema.items())).encode()).hexdigest()[:16]


def record_file(path: Path) -> Record:
    """The record of a file just written: its size and CRC-32."""
    data = path.read_bytes()
    return {"bytes": len(data), "crc32": f"{crc32(data):08x}"}


def record_table(path: Path, frame: pl.DataFrame, schemas: Schemas) -> Record:
    """The record of ``frame`` just written to ``path``; its schema is added to ``schemas``."""
    schema = schema_of(frame)
    digest = schema_digest(schema)
    schemas[digest] = schema
    return {**record_file(path), "rows": frame.height, "schema": digest}


def read_bytes(root: Path, part: str, record: Record | None) -> bytes:
    """The bytes of ``part`` (a path relative to ``root``), checked against its record."""
    if record is None:
        raise Damaged(part, "is not in the dataset's manifest")
    try:
        data = (root / part).read_bytes()
    except FileNotFoundError:
        raise Damaged(part, "is missing") from None
    except OSError as exc:
        raise Damaged(part, f"cannot be read ({exc.strerror or exc})") from None
    if len(data) != record.get("bytes"):
        raise Damaged(part, f"has {len(data):,} bytes, the manifest says {record.get('bytes'):,}")
    if f"{crc32(data):08x}" != record.get("crc32"):
        raise Damaged(part, "is damaged (its checksum is not the one the manifest records)")
    return data


def read_table(root: Path, part: str, record: Record | None, schemas: Schemas) -> pl.DataFrame:
    """The table in ``part``, checked against its record: bytes, schema and rows."""
    data = read_bytes(root, part, record)
    assert record is not None
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except Exception as exc:  # polars raises its own kinds for a file that is not Parquet
        raise Damaged(part, f"is not a readable Parquet file ({type(exc).__name__})") from None
    if schema_of(frame) != schemas.get(record.get("schema", "")):
        raise Damaged(part, "has another schema than the one the manifest records")
    if frame.height != record.get("rows"):
        raise Damaged(part, f"has {frame.height:,} rows, the manifest says {record.get('rows'):,}")
    return frame


def strays(root: Path, listed: Mapping[str, Record], own: tuple[str, ...]) -> list[str]:
    """Files under ``root`` that the manifest does not list (besides ``own``: the manifest), sorted."""
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            relative = os.path.relpath(os.path.join(folder, name), root)
            if relative not in listed and relative not in own:
                found.append(relative)
    return sorted(found)
