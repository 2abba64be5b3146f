"""Memory: the ``[memory]`` instants of ``profile_memory=True`` as a table of allocations and
frees (each with its op, annotation, step and python frame, and paired into lifetimes), and per
device the peak, what was alive at it, and the trend from step to step. UI-free; no torch."""

from __future__ import annotations

from tracetui.insight.memory.analysis import NO_OP, DeviceMemory, Memory, leak_verdict, memory_of

__all__ = ["NO_OP", "DeviceMemory", "Memory", "leak_verdict", "memory_of"]
