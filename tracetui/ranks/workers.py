"""The worker processes that load a run's ranks: how many, started early, dying with their parent.

No polars here (nor anything heavy): a command calls :func:`start` as soon as it knows it has a
run to load, before it imports polars and the report, so that the workers' interpreters import
tracetui while this one does (a worker costs ~0.5 s of start-up; a small rank ~0.1 s of work) —
unless the run's first and last ranks are in the derived cache already (a warm run starts none).
:mod:`tracetui.ranks.engine` then takes the started pool (:func:`pool`), or starts one.

Each worker dies with its parent however the parent ends, SIGKILL included: Linux's
``PR_SET_PDEATHSIG`` and, everywhere, a thread that watches the parent's pid; Ctrl-C (sent to the
whole process group) is left to the parent, which kills its workers (:func:`stop`) rather than
waiting for the ranks they are loading. The workers' polars keeps its own count of threads (one
per core, as this process's): fewer would save ~5 % of CPU on small ranks, but polars' sums then
differ in their last bits from this process's, and a rank's figures must not depend on which
process loaded it.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import TYPE_CHECKING

from tracetui import settings
from tracetui.trace import cache

if TYPE_CHECKING:
    from tracetui.ranks.discover import RankFile

PR_SET_PDEATHSIG = 1
_started: tuple[ProcessPoolExecutor, int] | None = None  # a pool started early, and its processes


def wanted() -> int:
    """Worker processes: ``TRACETUI_WORKERS``, else the cores this process may use."""
    return settings.workers()


def count_for(entries: Sequence[RankFile], workers: int | None) -> int:
    """How many processes load ``entries``: ``workers``, else :func:`wanted` (the cores), never more
    than there are ranks (1: this one alone)."""
    return max(1, min(len(entries), workers or wanted()))


def tables_kind(entry: RankFile) -> str:
    """The cache kind of a rank's tables: they also hold what discovery said of the file."""
    groups = hashlib.sha256(repr(entry.groups).encode()).hexdigest()[:12]
    return f"rank-tables\0{entry.rank}\0{entry.source}\0{entry.world_size}\0{entry.backend}\0{groups}"


def start(entries: Sequence[RankFile], workers: int | None = None) -> None:
    """Start the worker processes for loading ``entries`` now, unless the first and last ranks are
    in the derived cache (a warm run; asking for every rank would read each entry twice): the pool
    is :func:`pool`'s to take, :func:`release` ends one nobody took."""
    global _started
    count = count_for(entries, workers)
    if _started is not None or count <= 1:
        return
    if all(cache.derived(entry.path, tables_kind(entry)) is not None for entry in {entries[0], entries[-1]}):
        return
    started = new_pool(count)
    for _ in range(count - 1):
        started.submit(warm_up)
    _started = (started, count)


def pool(count: int) -> ProcessPoolExecutor:
    """The pool started early for ``count`` processes, else a new one (the caller shuts it down)."""
    global _started
    if _started is not None and _started[1] == count:
        taken, _started = _started[0], None
        return taken
    release()
    return new_pool(count)


def release() -> None:
    """Shut down a pool started early that nobody took (every rank was in the cache, or the command
    failed first)."""
    global _started
    if _started is not None:
        _started[0].shutdown(wait=True, cancel_futures=True)
        _started = None  # its queues' semaphores are released with it


def before_exit() -> None:
    """What a process that leaves through ``os._exit`` (the CLI) owes its pools: a pool started
    early and not used is shut down, and the semaphores of pools still referenced (by an
    exception's frames: Ctrl-C, an error) are released as the interpreter's exit would, so the
    resource tracker has nothing to warn about."""
    release()
    from multiprocessing import util

    with contextlib.suppress(Exception):
        util._run_finalizers(0)  # type: ignore[attr-defined]  # what multiprocessing's atexit runs


def new_pool(count: int) -> ProcessPoolExecutor:
    """``count - 1`` spawned processes (this one is the count's last), started at once.

    SIGINT is ignored while they are spawned (a few ms), so a Ctrl-C, which the terminal sends the
    whole group, never interrupts a worker's start-up with a traceback (see :func:`sigint_ignored`).
    """
    with sigint_ignored():
        made = ProcessPoolExecutor(
            max_workers=count - 1,
            mp_context=get_context("spawn"),
            initializer=worker_start,
            initargs=(os.getpid(),),
        )
        try:
            for _ in range(count - 1):
                made.submit(int)  # spawns a process (each submit starts one, up to the max)
        except BaseException:
            stop(made)
            raise
    return made


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile (in the main thread; elsewhere nothing changes), its handler back
    after. A process spawned meanwhile begins with SIGINT ignored (exec keeps an ignored signal;
    the spawned interpreter then installs no KeyboardInterrupt), so a Ctrl-C never interrupts its
    start-up with a traceback. SIGINT is blocked in this thread as well, but another thread may
    take a Ctrl-C while it is ignored: one pressed in these few ms can be lost."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def warm_up() -> None:
    """A worker's first task when started early: import what loading a rank needs."""
    import tracetui.ranks.engine  # noqa: F401


def stop(running: ProcessPoolExecutor) -> None:
    """Kill ``running``'s workers now (a pool's own shutdown waits for the jobs they are running)."""
    processes = list(getattr(running, "_processes", None) or {})
    running.shutdown(wait=False, cancel_futures=True)
    # Python 3.11's pool, broken by the kill, sets an exception on every pending item, also on one
    # cancelled (InvalidStateError, a traceback from its thread): those leave the list first.
    pending = getattr(running, "_pending_work_items", None)
    if isinstance(pending, dict):
        for key, item in list(pending.items()):
            if item.future.cancelled():
                pending.pop(key, None)
    for pid in processes:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def worker_start(parent: int) -> None:
    """Each worker process's first act: die with its parent (see the module doc); Ctrl-C is the
    parent's."""
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
