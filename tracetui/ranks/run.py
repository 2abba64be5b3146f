"""A distributed run as one thing: resolve what the user named, load or read its ranks, analyse.

A run is either a rank set (traces, :mod:`tracetui.ranks.discover`) or a Parquet dataset written by
``tracetui convert`` (:mod:`tracetui.ranks.dataset`); both end as a :class:`RunReport`. The facts
about the run are the dataset manifest's dict in both cases (one shape, one place).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui.errors import TraceError
from tracetui.insight.gpu_work import span_us
from tracetui.ranks import dataset, publish
from tracetui.ranks.analysis import Analysis, analyse
from tracetui.ranks.discover import RankSet, Target, is_dataset, resolve, single_entry
from tracetui.ranks.engine import Job, Progress, load_ranks, run_jobs
from tracetui.ranks.tables import TABLES
from tracetui.trace import load

if TYPE_CHECKING:
    from tracetui.trace import Trace


@dataclass
class RunReport:
    """The analysis of a run and the single-trace summary of one of its ranks."""

    facts: dict[str, Any]  # the dataset manifest's shape (see dataset.manifest)
    analysis: Analysis
    rank: int  # the rank whose single-trace summary is ``summary``
    summary: dict[str, Any]


def report_for(
    target: Target,
    rank: int | None = None,
    progress: Progress | None = None,
    summary: bool = True,
    workers: int | None = None,
    max_inflate: float | None = None,
) -> RunReport:
    """Analyse a rank set or a dataset; ``rank`` picks the single-trace summary (default: the first;
    none with ``summary=False``); ``workers``: the processes that load the ranks (default: the
    cores, :func:`~tracetui.ranks.workers.wanted`); ``max_inflate``: as for :func:`tracetui.load`,
    for each rank."""
    if isinstance(target, RankSet):
        return report_for_ranks(target, rank, progress, summary, workers, max_inflate)
    return report_for_dataset(target, rank, summary)


def report_for_ranks(
    rank_set: RankSet,
    rank: int | None,
    progress: Progress | None,
    summary: bool = True,
    workers: int | None = None,
    max_inflate: float | None = None,
) -> RunReport:
    """Load every rank (in parallel, or from the derived cache) and analyse them."""
    chosen = rank if rank is not None else rank_set.ranks[0].rank
    rank_set.file(chosen)  # a clear error for a rank that is not there
    summary_rank = chosen if summary else None
    results = load_ranks(
        rank_set.ranks, summary_rank=summary_rank, progress=progress, workers=workers, max_inflate=max_inflate
    )
    failed = {r.rank: r.error for r in results if r.error is not None}
    loaded = [r for r in results if r.tables is not None]
    if chosen in failed:
        raise TraceError(None, f"rank {chosen}: {failed[chosen]}")
    if len(loaded) < 2:
        raise TraceError(None, "fewer than two ranks could be loaded: " + "; ".join(failed.values()))
    tables = {
        name: pl.concat([getattr(r.tables, name) for r in loaded], how="vertical_relaxed") for name in TABLES
    }
    single = next(r.summary for r in results if r.rank == chosen) if summary else None
    return RunReport(
        dataset.manifest(rank_set, failed),
        analyse(*(tables[name].lazy() for name in TABLES)),
        chosen,
        single or {},
    )


def report_for_dataset(root: Path, rank: int | None, summary: bool = True) -> RunReport:
    """Analyse a dataset from its small tables, each part checked against the manifest: a rank with a
    part missing or damaged is left out and named, files the manifest does not list are ignored and
    named."""
    facts = dataset.read_manifest(root)
    checked = dataset.read_small_tables(root, facts)
    ranks = [r["rank"] for r in facts["ranks"] if r["rank"] not in checked.damaged]
    chosen = rank if rank is not None else ranks[0]
    if chosen in checked.damaged:
        raise TraceError(root, f"rank {chosen}: {checked.damaged[chosen]}")
    if chosen not in ranks:
        raise TraceError(root, f"no rank {chosen} in the dataset; ranks: {', '.join(map(str, ranks))}")
    notes = list(facts["notes"])
    if checked.strays:
        shown = ", ".join(checked.strays[:5]) + (", …" if len(checked.strays) > 5 else "")
        count = len(checked.strays)
        notes.append(f"{count} file(s) in the dataset that its manifest does not list, ignored: {shown}")
    facts = {
        **facts,
        "ranks": [r for r in facts["ranks"] if r["rank"] not in checked.damaged],
        "failed": sorted(
            [*facts["failed"], *({"rank": r, "error": e} for r, e in checked.damaged.items())],
            key=lambda f: f["rank"],
        ),
        "notes": notes,
    }
    lazy = [checked.tables[table].lazy() for table in dataset.SMALL_TABLES]
    single = dataset.read_summary(root, chosen) if summary else {}
    return RunReport(facts, analyse(*lazy), chosen, single)


def convert(
    rank_set: RankSet,
    output: Path,
    engine: str = "local",
    address: str | None = None,
    force: bool = False,
    progress: Progress | None = None,
    workers: int | None = None,
    max_inflate: float | None = None,
) -> dict[str, Any]:
    """Write ``rank_set`` as a dataset at ``output`` (each rank by a worker), whole or not at all, one
    writer at a time (:mod:`tracetui.ranks.publish`); its manifest."""
    dataset.check_output(output, rank_set, force)
    say: Callable[[int, int], None] = progress or (lambda done, total: None)
    with publish.writing(output) as staging:
        dataset.check_output(output, rank_set, force)  # again: no other convert writes it now
        jobs = [Job(entry, dataset=staging.resolve(), max_inflate=max_inflate) for entry in rank_set.ranks]
        failed: dict[int, str] = {}
        written = []
        say(0, len(jobs))
        for done, result in enumerate(run_jobs(jobs, engine, workers=workers, address=address), 1):
            if result.error is not None:
                failed[result.rank] = result.error
            elif result.written is not None:
                written.append(result.written)
            say(done, len(jobs))
        if len(failed) == len(jobs):
            raise TraceError(None, "no rank could be loaded: " + "; ".join(failed.values()))
        facts = dataset.manifest(rank_set, failed, written, output)
        dataset.write_manifest(staging, facts)
        publish.into_place(staging, output)
    return facts


def rank_paths(target: Target, ranks: Sequence[int]) -> list[Path]:
    """The trace files of ``ranks`` of a run (a rank set, or a dataset whose traces still exist)."""
    if isinstance(target, RankSet):
        return [target.file(rank).path for rank in ranks]
    if not is_dataset(target):
        raise TraceError(
            target, "--ranks needs the traces of several ranks (a directory, files or a dataset)"
        )
    files = {r["rank"]: dataset.trace_path(target, r) for r in dataset.read_manifest(target)["ranks"]}
    paths = []
    for rank in ranks:
        if rank not in files:
            raise TraceError(target, f"no rank {rank} in the dataset; ranks: {', '.join(map(str, files))}")
        if not files[rank].is_file():
            raise TraceError(files[rank], f"rank {rank}'s trace is no longer there")
        paths.append(files[rank])
    return paths


def rank_trace(
    target: Target,
    rank: int,
    progress: Callable[[str], None] | None = None,
    max_inflate: float | None = None,
) -> Trace:
    """Rank ``rank``'s own trace, through :func:`tracetui.load` and its cache. For a dataset, the
    trace file it was converted from while it is still there and unchanged (the events and the
    time span the dataset's summary of it says), else the rank's events read from the dataset
    (:func:`tracetui.ranks.dataset.rank_trace`)."""

    if isinstance(target, RankSet):
        return load(target.file(rank).path, progress=progress, max_inflate=max_inflate)
    files = {r["rank"]: dataset.trace_path(target, r) for r in dataset.read_manifest(target)["ranks"]}
    if rank not in files:
        raise TraceError(target, f"no rank {rank} in the dataset; ranks: {', '.join(map(str, files))}")
    if files[rank].is_file():
        trace = load(files[rank], progress=progress, max_inflate=max_inflate)
        converted = dataset.read_summary(target, rank).get("trace") or {}
        if (trace.event_count, span_us(trace)) == (converted.get("events"), converted.get("span_us")):
            return trace
    return dataset.rank_trace(target, rank, files[rank])


def as_rank_set(inputs: Sequence[str | Path]) -> RankSet:
    """The ranks ``inputs`` name; one trace is a run of one rank (``distributedInfo``'s, else 0)."""
    target = resolve(inputs)
    if isinstance(target, RankSet):
        return target
    if is_dataset(target):
        raise TraceError(target, "is already a dataset")

    entry = single_entry(target)
    return RankSet(ranks=(entry,), world_size=entry.world_size, backend=entry.backend, label=str(target))
