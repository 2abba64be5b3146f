"""Free memory: big object graphs off the main thread, the C heap's free pages back to the system, and
polars' allocator told to hand back what it frees at once.

polars' allocator (jemalloc) keeps the pages a free leaves for the next allocation and hands them
back after a delay. The CLI sets its options before polars starts (:func:`hand_back_at_once`, through
``_RJEM_MALLOC_CONF``, which polars' jemalloc reads as it starts): freed pages go back at once. Kept
(polars' default), the summary of a 1 GB trace peaks at 0.80x its JSON against 0.58x; handed back at
once it is ~13 % slower (each reuse faults the pages in again) than keeping them under a budget, which
needed jemalloc's private ``mallctl``, found in polars' library: measured, and retired (issue 36).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from functools import cache
from typing import Any


def drop_later(*objects: Any) -> None:
    """Release the last references to ``objects`` on a background thread.

    Deallocating a million small decoded objects takes a noticeable fraction of a second;
    polars work on the main thread releases the GIL, so the two overlap.
    """
    holder = list(objects)
    threading.Thread(target=holder.clear, name="tracetui-free", daemon=True).start()


JEMALLOC_OPTIONS = "_RJEM_MALLOC_CONF"  # polars' jemalloc (tikv-jemallocator's prefix) reads them here
AT_ONCE = "dirty_decay_ms:0,muzzy_decay_ms:0"


def hand_back_at_once() -> None:
    """Before polars starts: its allocator hands freed memory back at once, unless the user set its
    options (left as they are). Once polars has started, nothing: its allocator read them then."""
    if JEMALLOC_OPTIONS not in os.environ and "polars" not in sys.modules:
        os.environ[JEMALLOC_OPTIONS] = AT_ONCE


def hand_back() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; elsewhere nothing).

    The scan's buffers and Python's large objects come from the C heap (polars has its own
    allocator); glibc keeps what they free for reuse, ~70 MB after the read of a 1 GB trace, so
    each stage of a load would start that much higher. A trim costs a few milliseconds."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def _malloc_trim() -> Any:
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:  # no C library to look in
        return None
