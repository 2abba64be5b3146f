"""polars' allocator (jemalloc): the memory frees leave kept for reuse under a budget, handed back above it.

jemalloc keeps the pages a free leaves ("dirty") for the next allocation, and hands them back to the
system after a delay (polars sets 0.5 s). Both fixed settings cost a big trace's load:

* kept (polars' default): the load of a 1 GB trace peaks ~40 % higher (~840 MiB against ~600);
* handed back at once (decay 0, what the CLI sets before polars starts): each reuse faults the
  pages in again, ~700,000 faults and ~0.8 s of a 5 s ``summary`` at 1 GB.

So the CLI starts with decay 0 (:func:`hand_back_at_once`) and, once a load knows how much JSON
it read, the process keeps the freed pages while it holds less than its budget (half the JSON
read, :func:`keep_freed_below`) and hands them all back (jemalloc's ``arena.<all>.purge``) as soon
as it holds more: a thread reads the resident size every millisecond while it changes (every 50 ms
when it does not; ~0.25 % of a core in an idle explorer).

jemalloc's control function, ``mallctl``, is linked into polars' library without being exported:
it is found by name in the library's symbol table, and called only if the code loaded at its
address is the code the file holds there (the same code: a build that changed its calling
convention would have to keep its bytes too). Where it is not found (another platform or build, a
stripped library) or the user set the allocator's options, nothing changes: decay 0 as before.

The one seam to jemalloc's private control: the CLI calls :func:`hand_back_at_once`, the loader
:func:`keep_freed_below`; nothing else reaches it. Kept on measurement (issue 36: retiring it for
decay 0 alone made the 1 GB ``summary`` cold 13 % slower, medians of 4 rounds taking turns, and 22 %
in ``benchmarks/bench_scale.py``; polars' own decay peaks at 0.80x of the JSON against 0.58x).
``TRACETUI_KEEP_FREED=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import sys
import threading
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from tracetui import settings

# what the CLI sets before polars starts: freed memory goes back at once (until a budget is set)
AT_ONCE = "dirty_decay_ms:0,muzzy_decay_ms:0"
OPTIONS = "_RJEM_MALLOC_CONF"  # polars' jemalloc reads its options there
SET_BY_US = "_TRACETUI_SET_MALLOC_CONF"  # "1": the options are the CLI's (children inherit both)
KEPT_MS = 1000  # the decay while the budget holds (jemalloc purges on its own after it, if ever asked)
PURGE = b"arena.4096.purge"  # every arena's (4096: jemalloc's MALLCTL_ARENAS_ALL)
CODE_BYTES = 32  # the function's code compared with the file's
FAST_S, SLOW_S = 0.001, 0.05  # how often the resident size is read: while it changes, and when it doesn't
SETTLED = 100  # reads without a change before the slower pace
SYMBOL = b"_rjem_mallctl"  # tikv-jemallocator's prefix for jemalloc's names

_Mallctl = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t
)
_lock = threading.Lock()
_budget_pages = 0
_thread: threading.Thread | None = None
_decay_set = False  # the arenas' decay is KEPT_MS (undone where no thread keeps the budget)
_statm: int | None = None  # the thread's /proc/self/statm


def hand_back_at_once() -> None:
    """Before polars starts: its allocator hands freed memory back at once, unless the user set its
    options (then they are left as they are). Once polars has started (a CLI run in a process that
    imported it), nothing: its allocator read its options then."""
    if OPTIONS not in os.environ and "polars" not in sys.modules:
        os.environ[OPTIONS] = AT_ONCE
        os.environ[SET_BY_US] = "1"


def keep_freed_below(budget: int) -> bool:
    """Keep polars' freed memory for reuse while the process's resident size is under ``budget``
    bytes (the largest asked for so far), and hand it back above it. False (and nothing changes)
    where polars' allocator cannot be reached or the user set its options."""
    global _budget_pages, _thread, _statm
    if not _own(os.environ) or not settings.KEEP_FREED.value():
        return False
    mallctl = _mallctl()
    if mallctl is None:
        return False
    with _lock:
        _budget_pages = max(_budget_pages, budget // mmap.PAGESIZE)
        if _thread is not None:
            return True
        try:
            _statm = os.open("/proc/self/statm", os.O_RDONLY)
        except OSError:
            return False
        if not _set_decay(mallctl, KEPT_MS):
            _close_statm()
            return False
        _thread = threading.Thread(
            target=_keep, args=(mallctl, _statm), name="tracetui-allocator", daemon=True
        )
        _thread.start()
    return True


def _own(environ: Mapping[str, str]) -> bool:
    """Whether polars' allocator options are the CLI's (:func:`hand_back_at_once`), not the user's.
    (polars puts its own options first in the variable as it starts.)"""
    options = environ.get(OPTIONS, "")
    return environ.get(SET_BY_US) == "1" and (options == AT_ONCE or options.endswith("," + AT_ONCE))


def _keep(mallctl: Any, statm: int) -> None:
    """Hand the freed pages back whenever the resident size is over the budget; should the size be
    unreadable, hand them back at once from then on."""
    last, same = -1, 0
    while True:
        try:
            resident = int(os.pread(statm, 64, 0).split()[1])
        except (OSError, ValueError, IndexError):
            break
        if resident > _budget_pages:
            mallctl(PURGE, None, None, None, 0)
        same = same + 1 if resident == last else 0
        last = resident
        time.sleep(FAST_S if same < SETTLED else SLOW_S)
    _set_decay(mallctl, 0)
    mallctl(PURGE, None, None, None, 0)


def _set_decay(mallctl: Any, ms: int) -> bool:
    """Set the dirty pages' decay of the threads' arenas, made and to be made; False (nothing set)
    where jemalloc refuses. (Not of the arena of allocations over 8 MiB: jemalloc makes it with
    decay 0 when the default is not, and keeps it.)"""
    global _decay_set
    count, count_size = ctypes.c_uint(), ctypes.c_size_t(ctypes.sizeof(ctypes.c_uint))
    if mallctl(b"opt.narenas", ctypes.byref(count), ctypes.byref(count_size), None, 0) != 0:
        return False
    value = ctypes.c_ssize_t(ms)
    size = ctypes.sizeof(value)
    if mallctl(b"arenas.dirty_decay_ms", None, None, ctypes.byref(value), size) != 0:
        return False
    _decay_set = ms != 0
    for arena in range(count.value):  # an arena not made yet answers an error: it takes the default
        mallctl(b"arena.%d.dirty_decay_ms" % arena, None, None, ctypes.byref(value), size)
    return True


def _close_statm() -> None:
    global _statm
    if _statm is not None:
        os.close(_statm)
        _statm = None


def _forget_in_child() -> None:
    """A forked child has no thread of its own: freed memory goes back at once, as before a budget."""
    global _lock, _thread, _budget_pages
    _lock = threading.Lock()  # the parent's may have been held by another thread
    _thread, _budget_pages = None, 0
    _close_statm()
    mallctl = _mallctl()
    if _decay_set and mallctl is not None:
        _set_decay(mallctl, 0)


os.register_at_fork(after_in_child=_forget_in_child)


def _mallctl() -> Any:
    """polars' ``mallctl``, or None (also before polars is imported)."""
    library = sys.modules.get("polars._plr") or sys.modules.get("polars.polars")  # the latter: older polars
    path = getattr(library, "__file__", None)
    if path is None or not sys.platform.startswith("linux"):
        return None
    return _mallctl_in(os.path.realpath(path))


@cache
def _mallctl_in(path: str) -> Any:
    """``mallctl`` in the library at ``path`` as this process loaded it, or None."""
    try:
        found = _find_function(Path(path), SYMBOL)
        address = _loaded_at(path, found[0]) if found is not None else None
    except (OSError, ValueError, IndexError, struct.error):
        return None
    if found is None or address is None:
        return None
    if ctypes.string_at(address, CODE_BYTES) != found[1]:  # not the code the file holds there
        return None
    return _Mallctl(address)


def _find_function(path: Path, name: bytes) -> tuple[int, bytes] | None:
    """Where the function ``name`` of an ELF-64 little-endian library's symbol table is in the
    file, and its first :data:`CODE_BYTES` of code there."""
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
        return file_at, bytes(data[file_at : file_at + CODE_BYTES])


def _loaded_at(path: str, file_at: int) -> int | None:
    """The address of the byte at ``file_at`` in the file at ``path``, in the executable mapping
    of it this process has (the library's code: no other mapping of the file)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) < 6 or "x" not in parts[1] or parts[5].rstrip("\n") != path:
                continue
            start, end = (int(bound, 16) for bound in parts[0].split("-"))
            offset = int(parts[2], 16)
            if offset <= file_at and file_at + CODE_BYTES <= offset + end - start:
                return start + file_at - offset
    return None
