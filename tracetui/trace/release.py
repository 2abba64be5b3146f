"""Free memory: big object graphs off the main thread, and the C heap's free pages back to the system."""

from __future__ import annotations

import ctypes
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
