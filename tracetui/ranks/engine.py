"""Load the ranks of a run in parallel and keep only their small tables.

Each rank goes through the normal single-trace :func:`tracetui.load` (and its cache) in a worker
— a local process (both cores) or a Ray task — which computes the rank's small tables
(:mod:`tracetui.ranks.tables`), and, when asked, the rank's single-trace summary or its partition of
a Parquet dataset (:mod:`tracetui.ranks.dataset`). Only the small tables travel back: a process holds
the events of the rank it loads (and of the previous one while its cache entry is still being
written), this one included when it works as one of the local workers; never all ranks'.
They are kept with the trace cache's entries (:func:`tracetui.trace.cache.derived`): a warm run
reads them without loading any trace.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from multiprocessing import get_context, resource_tracker
from pathlib import Path
from typing import Any

import polars as pl

from tracetui import settings
from tracetui.errors import TraceError
from tracetui.insight.summary_data import summary_data
from tracetui.ranks.dataset import write_rank
from tracetui.ranks.discover import RankFile
from tracetui.ranks.tables import TABLES, RankTables, rank_tables
from tracetui.trace import cache, load

IN_PROCESS_BYTES = 4 << 20  # below this much trace data in all, processes cost more than they save
Progress = Callable[[int, int], None]  # (done, total)


@dataclass
class RankResult:
    """What a worker sends back for one rank: its tables, its summary if asked, or its error."""

    rank: int
    tables: RankTables | None = None
    summary: dict[str, Any] | None = None
    error: str | None = None
    cached: bool = False


@dataclass(frozen=True)
class Job:
    """One rank's work: which trace, whether to summarise it, where to write its dataset part."""

    entry: RankFile
    summary: bool = False
    dataset: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # TRACETUI_* settings for a remote worker
    max_inflate: float | None = None  # as for tracetui.load


def workers_wanted() -> int:
    """Worker processes: ``TRACETUI_WORKERS``, else the cores this process may use."""
    if (given := settings.WORKERS.get()) is not None:
        return given
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def load_ranks(
    entries: Sequence[RankFile],
    summary_rank: int | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
    max_inflate: float | None = None,
) -> list[RankResult]:
    """Every rank's small tables (and ``summary_rank``'s summary), from the trace cache or by
    loading the ranks that are not there, in parallel. Results are sorted by rank."""
    jobs = [Job(entry, summary=entry.rank == summary_rank, max_inflate=max_inflate) for entry in entries]
    results: dict[int, RankResult] = {}
    missing: list[Job] = []
    for job in jobs:
        hit = cached_result(job)
        if hit is not None:
            results[job.entry.rank] = hit
        else:
            missing.append(job)
    say = progress or (lambda done, total: None)
    say(len(results), len(jobs))
    for result in run_jobs(missing, "local", workers=workers):
        results[result.rank] = result
        say(len(results), len(jobs))
    return [results[job.entry.rank] for job in jobs]


def run_jobs(
    jobs: Sequence[Job], engine: str = "local", workers: int | None = None, address: str | None = None
) -> Iterator[RankResult]:
    """Run ``jobs`` (local processes or Ray tasks), yielding results as they finish."""
    if not jobs:
        return
    if engine == "ray":
        yield from _ray_jobs(jobs, address)
        return
    count = _process_count([job.entry for job in jobs], workers)
    if count <= 1:
        yield from (run_job(job) for job in jobs)
        return
    yield from _with_processes(jobs, count)


def _process_count(entries: Sequence[RankFile], workers: int | None) -> int:
    """How many processes load ``entries`` (1: this one alone, for one rank or little data)."""
    count = min(len(entries), workers or workers_wanted())
    small = sum(entry.size for entry in entries) < IN_PROCESS_BYTES and workers is None
    return 1 if small else count


def prepare_workers(entries: Sequence[RankFile], workers: int | None = None) -> None:
    """Start, while this process still has its standard error, what loading ``entries`` in worker
    processes will need: multiprocessing's resource tracker is started with ``sys.stderr``'s file
    descriptor, which an app that captures output (Textual) replaces by a stream without one
    (``fileno() == -1``: "bad value(s) in fds_to_keep"). Call it before such an app starts."""
    if _process_count(entries, workers) > 1:
        resource_tracker.ensure_running()


def _with_processes(jobs: Sequence[Job], count: int) -> Iterator[RankResult]:
    """``count`` workers: this process and ``count - 1`` spawned ones. The pool takes the jobs from
    the front; this process takes from the back each job the pool has not started yet, so no core
    waits and one interpreter fewer is started."""
    with ProcessPoolExecutor(max_workers=count - 1, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(run_job, job) for job in jobs]
        reported: set[int] = set()

        def finished() -> Iterator[RankResult]:
            for i, future in enumerate(futures):
                if i not in reported and future.done() and not future.cancelled():
                    reported.add(i)
                    yield future.result()

        for i in reversed(range(len(jobs))):
            if futures[i].cancel():  # not started by the pool: run it here
                reported.add(i)
                yield run_job(jobs[i])
            yield from finished()
        rest = [f for i, f in enumerate(futures) if i not in reported and not f.cancelled()]
        for future in as_completed(rest):
            yield future.result()


def run_job(job: Job) -> RankResult:
    """A worker's task: load one rank, compute its tables (and summary, dataset part), cache them.
    Errors come back as text (exceptions do not all survive a trip between processes)."""
    for name, value in job.env.items():
        os.environ.setdefault(name, value)
    entry = job.entry
    try:
        ident = cache.identity(entry.path)
        trace = load(entry.path, max_inflate=job.max_inflate)
        tables = rank_tables(trace, entry)
        summary = None
        if job.summary or job.dataset is not None:
            summary = summary_data(trace)
        if job.dataset is not None:
            write_rank(job.dataset, trace, tables, summary or {})
        cache.store_derived(entry.path, tables_kind(entry), ident, tables_parts(tables))
        if summary is not None:
            cache.store_derived(entry.path, "summary", ident, {"summary.json": json.dumps(summary).encode()})
        return RankResult(entry.rank, tables, summary if job.summary else None)
    except TraceError as exc:
        return RankResult(entry.rank, error=str(exc))
    except MemoryError:
        return RankResult(entry.rank, error=f"{entry.path}: out of memory while loading")


def cached_result(job: Job) -> RankResult | None:
    """``job``'s result from the trace cache, if it is all there."""
    parts = cache.derived(job.entry.path, tables_kind(job.entry))
    if parts is None:
        return None
    summary = None
    if job.summary:
        stored = cache.derived(job.entry.path, "summary")
        if stored is None:
            return None
        summary = json.loads(stored["summary.json"])
    try:
        tables = RankTables(**{name: pl.read_ipc(io.BytesIO(parts[f"{name}.arrow"])) for name in TABLES})
    except Exception:  # an entry of another shape: computed again
        return None
    return RankResult(job.entry.rank, tables, summary, cached=True)


def tables_kind(entry: RankFile) -> str:
    """The cache kind of a rank's tables: they also hold what discovery said of the file."""
    groups = hashlib.sha256(repr(entry.groups).encode()).hexdigest()[:12]
    return f"rank-tables\0{entry.rank}\0{entry.source}\0{entry.world_size}\0{entry.backend}\0{groups}"


def tables_parts(tables: RankTables) -> dict[str, bytes]:
    parts = {}
    for name, frame in tables.frames().items():
        buffer = io.BytesIO()
        frame.write_ipc(buffer)
        parts[f"{name}.arrow"] = buffer.getvalue()
    return parts


def _ray_jobs(jobs: Sequence[Job], address: str | None) -> Iterator[RankResult]:
    """The jobs as Ray tasks (one CPU each), on the cluster at ``address`` or a local one."""
    try:
        import ray
    except ImportError:
        raise TraceError(None, "--engine ray needs Ray: pip install 'tracetui[ray]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        env = settings.given() | {k: v for k, v in os.environ.items() if k.startswith("POLARS_")}
        task = ray.remote(num_cpus=1, max_retries=1)(run_job)
        pending = [task.remote(replace(job, env=env)) for job in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield from ray.get(done)
    finally:
        if started:  # a local Ray we started stops with us (the CLI leaves through os._exit)
            ray.shutdown()
