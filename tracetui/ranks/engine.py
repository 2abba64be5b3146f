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

import io
import json
import logging
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass, field, replace
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

import polars as pl

from tracetui import settings
from tracetui.errors import TraceError
from tracetui.insight.summary_data import summary_data
from tracetui.ranks import ray_task
from tracetui.ranks import workers as processes
from tracetui.ranks.dataset import Written, write_rank
from tracetui.ranks.discover import RankFile
from tracetui.ranks.tables import TABLES, RankTables, rank_tables
from tracetui.ranks.workers import tables_kind
from tracetui.trace import cache, load

BATCH_BYTES = 8 << 20  # ranks in one worker's task: up to this much trace file …
BATCH_JOBS = 16  # … and this many ranks
SHARES = 4  # batches per process at least, while there are ranks enough
Progress = Callable[[int, int], None]  # (done, total)


@dataclass
class RankResult:
    """What a worker sends back for one rank: its tables, its summary if asked, or its error."""

    rank: int
    tables: RankTables | None = None
    summary: dict[str, Any] | None = None
    error: str | None = None
    cached: bool = False
    written: Written | None = None  # what it wrote into a dataset


@dataclass(frozen=True)
class Job:
    """One rank's work: which trace, whether to summarise it, where to write its dataset part."""

    entry: RankFile
    summary: bool = False
    dataset: Path | None = None
    env: dict[str, str] = field(default_factory=dict)  # TRACETUI_* settings for a remote worker
    max_inflate: float | None = None  # as for tracetui.load
    scanners: int | None = None  # the cores its load scans on (tracetui.load's workers)


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
    try:
        for result in run_jobs(missing, "local", workers=workers):
            results[result.rank] = result
            say(len(results), len(jobs))
    finally:
        processes.release()  # a pool the command started early, when no rank needed it
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
    count = processes.count_for([job.entry for job in jobs], workers)
    share = max(1, settings.workers(workers) // count)  # each process scans on its share of the cores
    jobs = [replace(job, scanners=share) for job in jobs]
    if count <= 1:
        yield from (run_job(job) for job in jobs)
        return
    yield from _with_processes(jobs, count)


def batches(jobs: Sequence[Job], count: int) -> list[list[Job]]:
    """``jobs`` in consecutive batches, one task each: small ranks travel together (one round trip
    for up to :data:`BATCH_BYTES` of trace and :data:`BATCH_JOBS` ranks), yet at least
    :data:`SHARES` batches per process while there are ranks enough, so no process waits long for
    the last one."""
    most = max(1, min(BATCH_JOBS, len(jobs) // (count * SHARES)))
    out: list[list[Job]] = []
    size = 0
    for job in jobs:
        if not out or len(out[-1]) >= most or size + job.entry.size > BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(job)
        size += job.entry.size
    return out


def run_batch(jobs: Sequence[Job]) -> list[RankResult]:
    """A worker's task: :func:`run_job` for each of ``jobs``."""
    return [run_job(job) for job in jobs]


def prepare_workers(entries: Sequence[RankFile], workers: int | None = None) -> None:
    """Start, while this process still has its standard error, what loading ``entries`` in worker
    processes will need: multiprocessing's resource tracker is started with ``sys.stderr``'s file
    descriptor, which an app that captures output (Textual) replaces by a stream without one
    (``fileno() == -1``: "bad value(s) in fds_to_keep"). Call it before such an app starts. The
    workers themselves are started too, when some rank is not cached (:func:`processes.start`)."""
    if processes.count_for(entries, workers) > 1:
        resource_tracker.ensure_running()
        processes.start(entries, workers)


def _with_processes(jobs: Sequence[Job], count: int) -> Iterator[RankResult]:
    """``count`` workers: this process and ``count - 1`` spawned ones (:mod:`tracetui.ranks.workers`:
    started early by the command, or now), the jobs in :func:`batches`. The pool takes the batches
    from the front; this process takes from the back each batch the pool has not started yet, so
    no core waits and one interpreter fewer is started. Leaving early (an error, Ctrl-C, a consumer
    that stops) kills the workers rather than waiting for the ranks they are loading."""
    tasks = batches(jobs, count)
    pool = processes.pool(count)
    try:
        futures = [pool.submit(run_batch, task) for task in tasks]
        reported: set[int] = set()

        def finished() -> Iterator[RankResult]:
            for i, future in enumerate(futures):
                if i not in reported and future.done() and not future.cancelled():
                    reported.add(i)
                    yield from future.result()

        for i in reversed(range(len(tasks))):
            if futures[i].cancel():  # not started by the pool: run it here
                reported.add(i)
                yield from run_batch(tasks[i])
            yield from finished()
        rest = [f for i, f in enumerate(futures) if i not in reported and not f.cancelled()]
        for future in as_completed(rest):
            yield from future.result()
    except BaseException:
        processes.stop(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def run_job(job: Job) -> RankResult:
    """A worker's task: load one rank, compute its tables (and summary, dataset part), cache them.
    Errors come back as text (exceptions do not all survive a trip between processes)."""
    for name, value in job.env.items():
        os.environ.setdefault(name, value)
    entry = job.entry
    try:
        ident = cache.identity(entry.path)
        trace = load(entry.path, max_inflate=job.max_inflate, workers=job.scanners)
        tables = rank_tables(trace, entry)
        summary = None
        if job.summary or job.dataset is not None:
            summary = summary_data(trace)
        written = None
        if job.dataset is not None:
            written = write_rank(job.dataset, trace, tables, summary or {})
        cache.store_derived(entry.path, tables_kind(entry), ident, tables_parts(tables))
        if summary is not None:
            cache.store_derived(entry.path, "summary", ident, {"summary.json": json.dumps(summary).encode()})
        return RankResult(entry.rank, tables, summary if job.summary else None, written=written)
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


def cached_summary(entry: RankFile) -> dict[str, Any] | None:
    """The single-trace summary of ``entry`` from the trace cache, if there."""
    stored = cache.derived(entry.path, "summary")
    return None if stored is None else json.loads(stored["summary.json"])


def tables_parts(tables: RankTables) -> dict[str, bytes]:
    parts = {}
    for name, frame in tables.frames().items():
        buffer = io.BytesIO()
        frame.write_ipc(buffer)
        parts[f"{name}.arrow"] = buffer.getvalue()
    return parts


def _ray_jobs(jobs: Sequence[Job], address: str | None) -> Iterator[RankResult]:
    """The jobs as Ray tasks (one CPU each), on the cluster at ``address`` or a local one; each
    runs this tracetui (:mod:`tracetui.ranks.ray_task`), whatever folder Ray was started from."""
    try:
        import ray
        from ray import cloudpickle
    except ImportError:
        raise TraceError(None, "--engine ray needs Ray: pip install 'tracetui[ray]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        cloudpickle.register_pickle_by_value(ray_task)  # type: ignore[no-untyped-call]
        env = settings.given() | {k: v for k, v in os.environ.items() if k.startswith("POLARS_")}
        root = str(Path(__file__).resolve().parents[2])  # the folder holding this tracetui package
        task = ray.remote(num_cpus=1, max_retries=1)(ray_task.run)  # scanning on that one CPU
        pending = [task.remote(root, pickle.dumps(replace(job, env=env, scanners=1))) for job in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield from (pickle.loads(result) for result in ray.get(done))
    finally:
        if started:  # a local Ray we started stops with us (the CLI leaves through os._exit)
            ray.shutdown()
