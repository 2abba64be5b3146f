"""polars' allocator (jemalloc): the memory frees leave kept for reuse under a budget, handed back above it.

jemalloc keeps the pages a free leaves ("dirty") for the next allocation, and hands them back to the
system after a delay (polars sets 0.5 s). Both fixed settings cost a big trace's load:

* kept (polars' default): the load of a 1 GB trace peaks ~40 % higher (~840 MiB against ~600);
* handed back at once (decay 0, what the CLI sets before polars starts): each reuse faults the
  pages in again, ~700,000 faults and ~0.8 s of a 5 s ``summary`` at 1 GB.

So the CLI starts with decay 0 and, once a load knows how much JSON it read, the process keeps the
freed pages while it holds less than its budget (half the JSON read, :func:`keep_freed_below`)
and hands them all back (jemalloc's ``arena.<all>.purge``) as soon as it holds more: a thread
reads the resident size every millisecond while it changes (every 50 ms when it does not).

jemalloc's control function, ``mallctl``, is linked into polars' library without being exported:
it is found by name in the library's symbol table, and called only if the code loaded at its
address is the code the file holds there. Where it is not found (another platform or build, a
stripped library, an allocator setting of the user's own), nothing changes: decay 0 as before.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import sys
import threading
import time
from functools import cache
from pathlib import Path
from typing import Any

# what the CLI sets before polars starts: freed memory goes back at once (until a budget is set)
AT_ONCE = "dirty_decay_ms:0,muzzy_decay_ms:0"
KEPT_MS = 1000  # the decay while the budget holds (jemalloc purges on its own after it, if ever asked)
ALL_ARENAS = 4096  # jemalloc's MALLCTL_ARENAS_ALL
FAST_S, SLOW_S = 0.001, 0.05  # how often the resident size is read: while it changes, and when it doesn't
SETTLED = 100  # reads without a change before the slower pace
SYMBOL = b"_rjem_mallctl"  # tikv-jemallocator's prefix for jemalloc's names

_Mallctl = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t
)
_lock = threading.Lock()
_budget_pages = 0
_thread: threading.Thread | None = None


def keep_freed_below(budget: int) -> bool:
    """Keep polars' freed memory for reuse while the process's resident size is under ``budget``
    bytes (the largest asked for so far), and hand it back above it. False (and nothing changes)
    where polars' allocator cannot be reached or the user set its options."""
    global _budget_pages, _thread
    # polars puts its own options first in the variable as it starts
    if not _own(os.environ.get("_RJEM_MALLOC_CONF", "")) or os.environ.get("TRACETUI_KEEP_FREED") == "0":
        return False
    mallctl = _mallctl()
    if mallctl is None:
        return False
    with _lock:
        _budget_pages = max(_budget_pages, budget // mmap.PAGESIZE)
        if _thread is not None:
            return True
        try:
            statm = os.open("/proc/self/statm", os.O_RDONLY)
        except OSError:
            return False
        if not _set_decay(mallctl, KEPT_MS):
            os.close(statm)
            return False
        _thread = threading.Thread(
            target=_keep, args=(mallctl, statm), name="tracetui-allocator", daemon=True
        )
        _thread.start()
    return True


def _own(options: str) -> bool:
    """Whether polars' allocator options are the CLI's (:data:`AT_ONCE`), not the user's."""
    return options.rpartition("dirty_decay_ms:")[2] == AT_ONCE.partition(":")[2]


def _keep(mallctl: Any, statm: int) -> None:
    """Hand the freed pages back whenever the resident size is over the budget."""
    last, same = -1, 0
    while True:
        try:
            resident = int(os.pread(statm, 64, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return
        if resident > _budget_pages:
            mallctl(b"arena.%d.purge" % ALL_ARENAS, None, None, None, 0)
        same = same + 1 if resident == last else 0
        last = resident
        time.sleep(FAST_S if same < SETTLED else SLOW_S)


def _set_decay(mallctl: Any, ms: int) -> bool:
    """Set the dirty pages' decay of the threads' arenas, made and to be made. (Not of the arena of
    allocations over 8 MiB: jemalloc makes it with decay 0 when the default is not, and keeps it.)"""
    value = ctypes.c_ssize_t(ms)
    size = ctypes.sizeof(value)
    if mallctl(b"arenas.dirty_decay_ms", None, None, ctypes.byref(value), size) != 0:
        return False
    count, count_size = ctypes.c_uint(), ctypes.c_size_t(ctypes.sizeof(ctypes.c_uint))
    if mallctl(b"opt.narenas", ctypes.byref(count), ctypes.byref(count_size), None, 0) != 0:
        return False
    for arena in range(count.value):  # an arena not made yet answers an error: it takes the default
        mallctl(b"arena.%d.dirty_decay_ms" % arena, None, None, ctypes.byref(value), size)
    return True


def _forget_in_child() -> None:
    """A forked child has no thread of its own: freed memory goes back at once, as before a budget."""
    global _thread, _budget_pages
    if _thread is not None:
        _thread, _budget_pages = None, 0
        _set_decay(_mallctl(), 0)


os.register_at_fork(after_in_child=_forget_in_child)


@cache
def _mallctl() -> Any:
    """polars' ``mallctl``, or None."""
    library = sys.modules.get("polars._plr")
    path = getattr(library, "__file__", None)
    if path is None or not sys.platform.startswith("linux"):
        return None
    real = os.path.realpath(path)
    try:
        found = _find_function(Path(real), SYMBOL)
        base = _load_address(real)
    except (OSError, ValueError, struct.error):
        return None
    if found is None or base is None:
        return None
    offset, code = found
    if ctypes.string_at(base + offset, len(code)) != code:  # not the code the file holds there
        return None
    return _Mallctl(base + offset)


def _find_function(path: Path, name: bytes) -> tuple[int, bytes] | None:
    """The address (from the library's load address) of the function ``name`` in an ELF-64
    little-endian library's symbol table, and its first 32 bytes of code in the file."""
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:6] != b"\x7fELF\x02\x01":
            return None
        (section_at,) = struct.unpack_from("<Q", data, 0x28)
        entry_size, count = struct.unpack_from("<HH", data, 0x3A)
        sections = [
            struct.unpack_from("<IIQQQQIIQQ", data, section_at + i * entry_size) for i in range(count)
        ]
        symtab = next((s for s in sections if s[1] == 2), None)  # SHT_SYMTAB
        if symtab is None:
            return None
        strings = sections[symtab[6]]
        start, end = strings[4], strings[4] + strings[5]
        at = data.find(b"\0" + name + b"\0", start, end)
        if at < 0:
            return None
        name_at = struct.pack("<I", at + 1 - start)
        first, last = symtab[4], symtab[4] + symtab[5]
        hit = data.find(name_at, first, last)
        while hit >= 0 and (hit - first) % 24:
            hit = data.find(name_at, hit + 1, last)
        if hit < 0:
            return None
        _, info, _, index, value, _ = struct.unpack_from("<IBBHQQ", data, hit)
        if info & 0xF != 2 or not 0 < index < len(sections):  # STT_FUNC, in a section
            return None
        section = sections[index]
        file_at = value - section[3] + section[4]
        return value, bytes(data[file_at : file_at + 32])


def _load_address(path: str) -> int | None:
    """Where the library at ``path`` is loaded in this process (its mapping of file offset 0)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and int(parts[2], 16) == 0 and parts[5].rstrip("\n") == path:
                return int(parts[0].split("-")[0], 16)
    return None
