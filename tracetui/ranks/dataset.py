"""A distributed run as a Parquet dataset, partitioned by rank (Hive layout): what ``tracetui convert``
writes and what ``tracetui summary DATASET`` reads. Schema: docs/ranks.md.

::

    DATASET/_tracetui_dataset.json        manifest: schema, the run (ranks, files, world size, …), tables
    DATASET/<table>/rank=<N>/part-0.parquet
    DATASET/summaries/rank=<N>.json       the rank's ``summary --json`` (schema tracetui.summary/1)
    DATASET/facts/rank=<N>.json           the rank's trace facts (metadata, format, …: trace.model.FACTS)

Big tables (``events``, ``kernels``, ``ops``) are for users who query the run themselves (polars,
DuckDB, Spark); the cross-rank analysis reads only the small ones (``ranks``, ``steps``,
``collectives``, ``kernel_names``) through lazy scans, so it works at any number of ranks. The
explorer reads one rank's model tables (``events``, ``instants``, ``flows``, ``meta_events``,
``tracks``, ``anomalies``, as the trace cache keeps them) and facts when the user opens that rank and
its own trace is gone (:func:`rank_trace`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import polars as pl

from tracetui.errors import TraceError
from tracetui.insight.kernels import kernels_table
from tracetui.ranks.discover import DATASET_MANIFEST, RankSet
from tracetui.safetext import clean
from tracetui.trace.args import NO_ARGS
from tracetui.trace.layout import schema
from tracetui.trace.model import NO_PARTS, Trace
from tracetui.trace.model import TABLES as TRACE_TABLES
from tracetui.trace.text import as_text

if TYPE_CHECKING:
    from tracetui.ranks.tables import RankTables
    from tracetui.trace import Trace

SCHEMA = "tracetui.dataset/1"
BIG_TABLES = ("events", "kernels", "ops")
MODEL_TABLES = tuple(t for t in TRACE_TABLES if t not in BIG_TABLES)  # with events: a rank's trace
SMALL_TABLES = {"ranks": "rank", "steps": "steps", "collectives": "collectives", "kernel_names": "kernels"}
TABLE_NAMES = (*BIG_TABLES, *MODEL_TABLES, *SMALL_TABLES)
PART = "part-0.parquet"


def write_rank(root: Path, trace: Trace, tables: RankTables, summary: dict[str, Any]) -> None:
    """Write one rank's partition of every table and its summary under ``root``."""

    rank = int(tables.rank["rank"][0])
    frames = {
        "events": as_text(trace.events),  # text, as other tools read it (the model's is dictionary-encoded)
        "kernels": as_text(kernels_table(trace)),
        "ops": trace.ops,
        **{table: trace.read_once(table) for table in MODEL_TABLES},
        **{table: getattr(tables, attr) for table, attr in SMALL_TABLES.items()},
    }
    for table, frame in frames.items():
        folder = root / table / f"rank={rank}"
        folder.mkdir(parents=True, exist_ok=True)
        frame.drop("rank", strict=False).write_parquet(folder / PART, statistics=True)
    for name, data in (("summaries", summary), ("facts", trace.stored_facts())):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / f"rank={rank}.json").write_text(json.dumps(data, ensure_ascii=False))


def manifest(rank_set: RankSet, failed: dict[int, str]) -> dict[str, Any]:
    """The dataset's manifest: what the run was, as discovery saw it (no times, no engine, so that
    every engine writes the same dataset)."""
    return {
        "schema": SCHEMA,
        "label": rank_set.label,
        "world_size": rank_set.world_size,
        "backend": rank_set.backend,
        "ranks": [
            {"rank": r.rank, "file": str(r.path), "source": r.source}
            for r in rank_set.ranks
            if r.rank not in failed
        ],
        "failed": [{"rank": rank, "error": clean(error)} for rank, error in sorted(failed.items())],
        "duplicates": [{"rank": r.rank, "file": str(r.path)} for r in rank_set.duplicates],
        "skipped": [{"file": str(p), "why": clean(why)} for p, why in rank_set.skipped],
        "missing": list(rank_set.missing),
        "notes": list(rank_set.notes),
        "tables": list(TABLE_NAMES),
    }


def staging_for(output: Path) -> Path:
    """A fresh folder beside ``output`` to write into before it is renamed into place."""
    staging = output.with_name(f".{output.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def finish(staging: Path, output: Path, facts: dict[str, Any], force: bool) -> None:
    """Write the manifest and move the dataset into place (replacing an older dataset with ``force``)."""
    (staging / DATASET_MANIFEST).write_text(json.dumps(facts, indent=2, ensure_ascii=False) + "\n")
    if output.exists():
        if not force:
            raise TraceError(output, "already exists (--force replaces a dataset)")
        shutil.rmtree(output)
    staging.rename(output)


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
    if not isinstance(facts, dict) or facts.get("schema") != SCHEMA:
        raise TraceError(root, f"not a {SCHEMA} dataset")
    return facts


def scan(root: Path, table: str) -> pl.LazyFrame:
    """One table of the dataset, every rank, lazily (``rank`` from the partition path)."""
    folder = root / table
    if not any(folder.glob(f"rank=*/{PART}")):
        raise TraceError(root, f"dataset has no {table} table")
    return pl.scan_parquet(
        folder / "**" / "*.parquet", hive_partitioning=True, hive_schema={"rank": pl.Int64}
    ).select("rank", pl.all().exclude("rank"))


def read_summary(root: Path, rank: int) -> dict[str, Any]:
    """The stored single-trace summary of ``rank``."""
    try:
        data = json.loads((root / "summaries" / f"rank={rank}.json").read_text())
    except (OSError, ValueError) as exc:
        raise TraceError(root, f"no readable summary for rank {rank} ({exc})") from None
    return data if isinstance(data, dict) else {}


def rank_trace(root: Path, rank: int, path: Path) -> Trace:
    """Rank ``rank``'s trace model from the dataset, for the explorer when its trace file (``path``)
    is gone: its model tables (each partition read on first use) and facts, as the trace cache
    would restore them. The raw args are not in the dataset: the details show the promoted args
    only, and FLOPs (which need shapes) are unknown. A dataset written before these tables were
    says what to do instead."""

    names = ("events", *MODEL_TABLES)
    missing = [t for t in names if not (root / t / f"rank={rank}" / PART).is_file()]
    facts_file = root / "facts" / f"rank={rank}.json"
    if missing or not facts_file.is_file():
        what = " or ".join([*missing, *([] if facts_file.is_file() else ["facts"])])
        raise TraceError(
            path,
            f"rank {rank}'s trace is not there, and the dataset has no {what} for it (convert the run "
            "again with this version, or put the trace back)",
        )
    try:
        facts = json.loads(facts_file.read_text())
        facts = {**facts, "format": f"{clean(str(facts['format']))}, from the dataset (no raw args)"}
        return Trace.restored(
            path, (), _Partitions(root, rank, names), {**facts, "reader": "dataset"}, NO_ARGS, NO_PARTS
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TraceError(root, f"rank {rank}'s facts are not readable ({exc})") from None


class _Partitions:
    """One rank's model tables in the dataset, each read when the trace first uses it (no files:
    a dataset keeps no raw args)."""

    files: tuple[str, ...] = ()

    def __init__(self, root: Path, rank: int, names: tuple[str, ...]) -> None:
        self.root, self.rank, self.names = root, rank, names

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
        return int(pl.scan_parquet(self._file(name)).select(pl.len()).collect().item())

    def _file(self, name: str) -> Path:
        return self.root / name / f"rank={self.rank}" / PART
