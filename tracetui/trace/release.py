"""Free big object graphs off the main thread."""

from __future__ import annotations

import threading
from typing import Any


def drop_later(*objects: Any) -> None:
    """Release the last references to ``objects`` on a background thread.

    Deallocating a million small decoded objects takes a noticeable fraction of a second;
    polars work on the main thread releases the GIL, so the two overlap.
    """
    holder = list(objects)
    threading.Thread(target=holder.clear, name="tracetui-free", daemon=True).start()
