"""A distributed run as a Parquet dataset, partitioned by rank (Hive layout): what ``tracetui convert``
writes and what ``tracetui summary DATASET`` reads. Schema: docs/ranks.md.

::

    DATASET/_tracetui_dataset.json        manifest: schema, the run (ranks, files, world size, …), tables
    DATASET/<table>/rank=<N>/part-0.parquet
    DATASET/summaries/rank=<N>.json       the rank's ``summary --json`` (schema tracetui.summary/1)
    DATASET/facts/rank=<N>.json           the rank's trace facts (metadata, format, …: trace.model.FACTS)

Big tables (``events``, ``kernels``, ``ops``) are for users who query the run themselves (polars,
DuckDB, Spark); the cross-rank analysis reads only the small ones (``ranks``, ``steps``,
``collectives``, ``kernel_names``), so it works at any number of ranks. Every file written is
recorded in the manifest (:mod:`tracetui.ranks.parts`) and checked when read; a dataset is written
whole, one writer at a time (:mod:`tracetui.ranks.publish`). The
explorer reads one rank's model tables (``events``, ``instants``, ``flows``, ``meta_events``,
``tracks``, ``anomalies``, as the trace cache keeps them) and facts when the user opens that rank and
its own trace is gone (:func:`rank_trace`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import polars as pl

from tracetui.errors import TraceError
from tracetui.insight.kernels import kernels_table
from tracetui.ranks import parts
from tracetui.ranks.discover import DATASET_MANIFEST, RankSet
from tracetui.ranks.lead import SCHEMA as LEAD_SCHEMA
from tracetui.safetext import clean
from tracetui.trace.args import NO_ARGS
from tracetui.trace.layout import schema
from tracetui.trace.model import NO_PARTS, Trace
from tracetui.trace.model import TABLES as TRACE_TABLES
from tracetui.trace.text import as_text

if TYPE_CHECKING:
    from tracetui.ranks.tables import RankTables
    from tracetui.trace import Trace

SCHEMA = "tracetui.dataset/2"
OLDER = ("tracetui.dataset/1",)
BIG_TABLES = ("events", "kernels", "ops")
MODEL_TABLES = tuple(t for t in TRACE_TABLES if t not in BIG_TABLES)  # with events: a rank's trace
SMALL_TABLES = {
    "ranks": "rank",
    "steps": "steps",
    "collectives": "collectives",
    "kernel_names": "kernels",
    "lead": "lead",
}
TABLE_NAMES = (*BIG_TABLES, *MODEL_TABLES, *SMALL_TABLES)
PART = "part-0.parquet"


def write_rank(root: Path, trace: Trace, tables: RankTables, summary: dict[str, Any]) -> Written:
    """Write one rank's partition of every table and its summary under ``root``; the records of the
    files written (:mod:`tracetui.ranks.parts`), by their paths in the dataset, and their schemas."""

    rank = int(tables.rank["rank"][0])
    frames = {
        "events": as_text(trace.events),  # text, as other tools read it (the model's is dictionary-encoded)
        "kernels": as_text(kernels_table(trace)),
        "ops": trace.ops,
        **{table: trace.read_once(table) for table in MODEL_TABLES},
        **{table: getattr(tables, attr) for table, attr in SMALL_TABLES.items()},
    }
    records: dict[str, parts.Record] = {}
    schemas: parts.Schemas = {}
    for table, frame in frames.items():
        folder = root / table / f"rank={rank}"
        folder.mkdir(parents=True, exist_ok=True)
        frame = frame.drop("rank", strict=False)
        frame.write_parquet(folder / PART, statistics=True)
        records[part_path(table, rank)] = parts.record_table(folder / PART, frame, schemas)
    for name, data in (("summaries", summary), ("facts", trace.stored_facts())):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / f"rank={rank}.json").write_text(json.dumps(data, ensure_ascii=False))
        records[f"{name}/rank={rank}.json"] = parts.record_file(root / name / f"rank={rank}.json")
    return Written(records, schemas)


@dataclass
class Written:
    """What a worker wrote into a dataset for one rank: each file's record, and the schemas."""

    records: dict[str, parts.Record]
    schemas: parts.Schemas


def part_path(table: str, rank: int) -> str:
    """A table's part of ``rank``, as the manifest names it (relative to the dataset)."""
    return f"{table}/rank={rank}/{PART}"


def manifest(
    rank_set: RankSet, failed: dict[int, str], written: Sequence[Written] = (), output: Path | None = None
) -> dict[str, Any]:
    """The dataset's manifest: what the run was, as discovery saw it, and every file written with
    its record (no times, no engine, so that every engine writes the same dataset). A trace's path
    is kept absolute (``file``) and, when ``output`` is given, from the dataset's folder
    (``from_dataset``): either finds it wherever the dataset is opened from, or moved with it."""
    records = {path: rec for w in written for path, rec in w.records.items()}
    schemas = {digest: schema for w in written for digest, schema in w.schemas.items()}
    return {
        "schema": SCHEMA,
        "label": rank_set.label,
        "world_size": rank_set.world_size,
        "backend": rank_set.backend,
        "ranks": [
            {"rank": r.rank, "file": _absolute(r.path), "source": r.source, **_from(r.path, output)}
            for r in rank_set.ranks
            if r.rank not in failed
        ],
        "failed": [{"rank": rank, "error": clean(error)} for rank, error in sorted(failed.items())],
        "duplicates": [{"rank": r.rank, "file": str(r.path)} for r in rank_set.duplicates],
        "skipped": [{"file": str(p), "why": clean(why)} for p, why in rank_set.skipped],
        "missing": list(rank_set.missing),
        "notes": list(rank_set.notes),
        "tables": list(TABLE_NAMES),
        "schemas": dict(sorted(schemas.items())),
        "parts": dict(sorted(records.items())),
    }


def _absolute(path: Path) -> str:
    return os.path.abspath(path)


def _from(path: Path, output: Path | None) -> dict[str, str]:
    if output is None:
        return {}
    return {"from_dataset": os.path.relpath(os.path.abspath(path), os.path.abspath(output))}


def trace_path(root: Path, entry: dict[str, Any]) -> Path:
    """Where a rank's trace is now: its absolute path, else its path from the dataset (moved with it)."""
    absolute = Path(entry["file"])
    relative = entry.get("from_dataset")
    if not absolute.is_file() and isinstance(relative, str) and (root / relative).is_file():
        return root / relative
    return absolute


def write_manifest(staging: Path, facts: dict[str, Any]) -> None:
    (staging / DATASET_MANIFEST).write_text(json.dumps(facts, indent=2, ensure_ascii=False) + "\n")


def check_output(output: Path, inputs: RankSet, force: bool) -> None:
    """Refuse an output that would overwrite something other than a dataset, or the traces."""
    if not output.exists():
        return
    if not output.is_dir() or not (output / DATASET_MANIFEST).is_file():
        raise TraceError(output, "exists and is not a tracetui dataset: choose another -o")
    if not force:
        raise TraceError(output, "already exists (--force replaces it)")
    resolved = output.resolve()
    if any(resolved in (r.path.resolve(), *r.path.resolve().parents) for r in inputs.ranks):
        raise TraceError(output, "holds the traces being converted")


def read_manifest(root: Path) -> dict[str, Any]:
    """The dataset's manifest (a TraceError, one line, when it is not one)."""
    try:
        facts = json.loads((root / DATASET_MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise TraceError(root, f"not a readable tracetui dataset ({exc})") from None
    if isinstance(facts, dict) and facts.get("schema") in OLDER:
        old = facts["schema"]
        raise TraceError(root, f"a {old} dataset, written by an older tracetui: convert the run again")
    if not isinstance(facts, dict) or facts.get("schema") != SCHEMA:
        raise TraceError(root, f"not a {SCHEMA} dataset")
    if not isinstance(facts.get("parts"), dict) or not isinstance(facts.get("schemas"), dict):
        raise TraceError(root, "the dataset's manifest lists no parts")
    return facts


@dataclass
class Checked:
    """The small tables of a dataset's ranks whose parts are all as the manifest records them."""

    tables: dict[str, pl.DataFrame]  # SMALL_TABLES' names -> every good rank's rows, with ``rank``
    damaged: dict[int, str]  # rank -> its first missing or damaged part, and why
    strays: list[str]  # files the manifest does not list (ignored)


def read_small_tables(root: Path, facts: dict[str, Any]) -> Checked:
    """Every rank's small tables, each part checked against the manifest (:mod:`tracetui.ranks.parts`):
    a rank with a part missing or damaged is left out and named; files the manifest does not list
    are ignored and named."""
    listed, schemas = facts["parts"], facts["schemas"]
    frames: dict[str, list[pl.DataFrame]] = {table: [] for table in SMALL_TABLES}
    damaged: dict[int, str] = {}
    for entry in facts["ranks"]:
        rank = entry["rank"]
        try:
            read = {}
            for table in SMALL_TABLES:
                if table == "lead" and table not in facts["tables"]:  # a dataset of before: no cause
                    read[table] = pl.DataFrame(schema={"rank": pl.Int64, **LEAD_SCHEMA})
                    continue
                part = part_path(table, rank)
                frame = parts.read_table(root, part, listed.get(part), schemas)
                read[table] = frame.select(pl.lit(rank, pl.Int64).alias("rank"), pl.all())
            parts.read_bytes(root, f"summaries/rank={rank}.json", listed.get(f"summaries/rank={rank}.json"))
        except parts.Damaged as exc:
            damaged[rank] = str(exc)
            continue
        for table, frame in read.items():
            frames[table].append(frame)
    if len(damaged) == len(facts["ranks"]):
        raise TraceError(root, "no rank of the dataset is whole: " + "; ".join(damaged.values()))
    tables = {table: pl.concat(found, how="vertical_relaxed") for table, found in frames.items()}
    return Checked(tables, damaged, parts.strays(root, listed, (DATASET_MANIFEST,)))


def scan(root: Path, table: str, ranks: Sequence[int] | None = None) -> pl.LazyFrame:
    """One table of the dataset, every rank's (or ``ranks``'), each part checked against the manifest
    (a TraceError naming a part missing or damaged); ``rank`` first."""
    facts = read_manifest(root)
    wanted = [r["rank"] for r in facts["ranks"]] if ranks is None else list(ranks)
    if table not in facts["tables"]:
        raise TraceError(root, f"dataset has no {table} table")
    frames = []
    for rank in wanted:
        part = part_path(table, rank)
        try:
            frame = parts.read_table(root, part, facts["parts"].get(part), facts["schemas"])
        except parts.Damaged as exc:
            raise TraceError(root, f"rank {rank}: {exc}") from None
        frames.append(frame.select(pl.lit(rank, pl.Int64).alias("rank"), pl.all()))
    return pl.concat(frames, how="diagonal_relaxed").lazy()


def read_summary(root: Path, rank: int) -> dict[str, Any]:
    """The stored single-trace summary of ``rank``, checked against the manifest."""
    part = f"summaries/rank={rank}.json"
    try:
        data = json.loads(parts.read_bytes(root, part, read_manifest(root)["parts"].get(part)))
    except parts.Damaged as exc:
        raise TraceError(root, f"rank {rank}'s summary: {exc}") from None
    except ValueError as exc:
        raise TraceError(root, f"no readable summary for rank {rank} ({exc})") from None
    return data if isinstance(data, dict) else {}


def rank_trace(root: Path, rank: int, path: Path) -> Trace:
    """Rank ``rank``'s trace model from the dataset, for the explorer when its trace file (``path``)
    is gone: its model tables (each partition read on first use, checked against the manifest) and
    facts, as the trace cache would restore them. The raw args are not in the dataset: the details
    show the promoted args only, and FLOPs (which need shapes) are unknown."""

    listed = read_manifest(root)
    names = ("events", *MODEL_TABLES)
    try:
        for name in names:
            part = part_path(name, rank)
            if listed["parts"].get(part) is None or not (root / part).is_file():
                raise parts.Damaged(part, "is missing")
        facts_part = f"facts/rank={rank}.json"
        facts = json.loads(parts.read_bytes(root, facts_part, listed["parts"].get(facts_part)))
        facts = {**facts, "format": f"{clean(str(facts['format']))}, from the dataset (no raw args)"}
        tables = _Partitions(root, rank, names, listed)
        return Trace.restored(path, (), tables, {**facts, "reader": "dataset"}, NO_ARGS, NO_PARTS)
    except parts.Damaged as exc:
        raise TraceError(path, f"rank {rank}'s trace is not there, and in the dataset {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise TraceError(root, f"rank {rank}'s facts are not readable ({exc})") from None


class _Partitions:
    """One rank's model tables in the dataset, each read when the trace first uses it and checked
    against the manifest then (no files: a dataset keeps no raw args)."""

    files: tuple[str, ...] = ()

    def __init__(self, root: Path, rank: int, names: tuple[str, ...], facts: dict[str, Any]) -> None:
        self.root, self.rank, self.names = root, rank, names
        self.listed, self.schemas = facts["parts"], facts["schemas"]
        self.checked: set[str] = set()

    def file(self, name: str) -> BinaryIO:
        raise KeyError(name)

    def damaged(self, what: str) -> TraceError:
        return TraceError(self.root, f"rank {self.rank}'s {what} is damaged")

    def scan(self, name: str) -> pl.LazyFrame:
        lazy = pl.scan_parquet(self._file(name))
        have = lazy.collect_schema()
        coded = [c for c, t in schema(name).items() if t == pl.Categorical and c in have]
        return lazy.with_columns(pl.col(coded).cast(pl.Categorical))  # the model's text (as_text)

    def columns(self, name: str) -> list[str]:
        return list(pl.read_parquet_schema(self._file(name)))

    def height(self, name: str) -> int:
        return int(self.listed[part_path(name, self.rank)]["rows"])

    def _file(self, name: str) -> Path:
        part = part_path(name, self.rank)
        if part not in self.checked:
            try:
                parts.read_table(self.root, part, self.listed.get(part), self.schemas)
            except parts.Damaged as exc:
                raise TraceError(self.root, f"rank {self.rank}: {exc}") from None
            self.checked.add(part)
        return self.root / part
