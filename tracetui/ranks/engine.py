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

import contextlib
import ctypes
import hashlib
import io
import json
import logging
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui.errors import TraceError
from tracetui.ranks.discover import RankFile
from tracetui.ranks.tables import TABLES, RankTables, rank_tables
from tracetui.trace import cache

if TYPE_CHECKING:
    from tracetui.ranks.dataset import Written

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


def workers_wanted() -> int:
    """Worker processes: ``TRACETUI_WORKERS``, else the cores this process may use."""
    if (given := os.environ.get("TRACETUI_WORKERS", "")).isdigit() and int(given) > 0:
        return int(given)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def load_ranks(
    entries: Sequence[RankFile],
    summary_rank: int | None = None,
    progress: Progress | None = None,
    workers: int | None = None,
) -> list[RankResult]:
    """Every rank's small tables (and ``summary_rank``'s summary), from the trace cache or by
    loading the ranks that are not there, in parallel. Results are sorted by rank."""
    jobs = [Job(entry, summary=entry.rank == summary_rank) for entry in entries]
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
    """How many processes load ``entries``: ``workers``, else :func:`workers_wanted` (the cores),
    never more than there are ranks (1: this one alone)."""
    return max(1, min(len(entries), workers or workers_wanted()))


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
    (``fileno() == -1``: "bad value(s) in fds_to_keep"). Call it before such an app starts."""
    if _process_count(entries, workers) > 1:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()


def _with_processes(jobs: Sequence[Job], count: int) -> Iterator[RankResult]:
    """``count`` workers: this process and ``count - 1`` spawned ones, the jobs in
    :func:`batches`. The pool takes the batches from the front; this process takes from the back
    each batch the pool has not started yet, so no core waits and one interpreter fewer is
    started. The workers die with this process (:func:`_worker_start`); leaving early (an error,
    Ctrl-C, a consumer that stops) kills them rather than waiting for the ranks they are loading."""
    tasks = batches(jobs, count)
    with _worker_threads(count):  # the workers' polars threads, read when they import it
        pool = ProcessPoolExecutor(
            max_workers=count - 1,
            mp_context=get_context("spawn"),
            initializer=_worker_start,
            initargs=(os.getpid(),),
        )
        try:
            futures = [pool.submit(run_batch, task) for task in tasks]
        except BaseException:
            _stop(pool)
            raise
    try:
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
        _stop(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def _worker_threads(count: int) -> Iterator[None]:
    """Spawned workers get their share of the cores for polars' threads (``POLARS_MAX_THREADS``,
    unless the user set it): with a process per core, one thread each; small frames lose more to
    threads handing work over than they gain."""
    if os.environ.get("POLARS_MAX_THREADS"):
        yield
        return
    os.environ["POLARS_MAX_THREADS"] = str(max(1, workers_wanted() // count))
    try:
        yield
    finally:
        os.environ.pop("POLARS_MAX_THREADS", None)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Kill ``pool``'s workers now (a pool's own shutdown waits for the jobs they are running)."""
    processes = list(getattr(pool, "_processes", None) or {})
    pool.shutdown(wait=False, cancel_futures=True)
    for pid in processes:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


PR_SET_PDEATHSIG = 1


def _worker_start(parent: int) -> None:
    """Each worker process's first act: die with its parent, however the parent ends (SIGKILL
    included): Linux's ``PR_SET_PDEATHSIG``, and everywhere a thread that watches the parent's pid;
    leave Ctrl-C (sent to the whole process group) to the parent, which stops the workers itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    threading.Thread(target=_watch_parent, args=(parent,), name="tracetui-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent was gone before the signal was asked for
        os._exit(1)


def _watch_parent(parent: int, every_s: float = 0.5) -> None:
    while os.getppid() == parent:
        time.sleep(every_s)
    os._exit(1)


def run_job(job: Job) -> RankResult:
    """A worker's task: load one rank, compute its tables (and summary, dataset part), cache them.
    Errors come back as text (exceptions do not all survive a trip between processes)."""
    for name, value in job.env.items():
        os.environ.setdefault(name, value)
    entry = job.entry
    try:
        from tracetui.trace import load

        ident = cache.identity(entry.path)
        trace = load(entry.path)
        tables = rank_tables(trace, entry)
        summary = None
        if job.summary or job.dataset is not None:
            from tracetui.insight.summary_data import summary_data

            summary = summary_data(trace)
        written = None
        if job.dataset is not None:
            from tracetui.ranks.dataset import write_rank

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
    """The jobs as Ray tasks (one CPU each), on the cluster at ``address`` or a local one; each
    runs this tracetui (:mod:`tracetui.ranks.ray_task`), whatever folder Ray was started from."""
    try:
        import ray
        from ray import cloudpickle
    except ImportError:
        raise TraceError(None, "--engine ray needs Ray: pip install 'tracetui[ray]'") from None
    from tracetui.ranks import ray_task

    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        cloudpickle.register_pickle_by_value(ray_task)  # type: ignore[no-untyped-call]
        env = {k: v for k, v in os.environ.items() if k.startswith(("TRACETUI_", "POLARS_"))}
        root = str(Path(__file__).resolve().parents[2])  # the folder holding this tracetui package
        task = ray.remote(num_cpus=1, max_retries=1)(ray_task.run)
        pending = [
            task.remote(root, pickle.dumps(Job(job.entry, job.summary, job.dataset, env))) for job in jobs
        ]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield from (pickle.loads(result) for result in ray.get(done))
    finally:
        if started:  # a local Ray we started stops with us (the CLI leaves through os._exit)
            ray.shutdown()
