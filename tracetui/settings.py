"""Every ``TRACETUI_*`` environment variable, declared once: its name, type, default and meaning.

Modelled on polars' ``Config`` (``polars/config.py``): one table of the variables, one reader. A
value is read where it is used (:meth:`Setting.get`), never at import, so a process that never uses
a setting never reads it. A bad value is one line and exit 2, raised as :class:`SettingError`
(``tracetui: TRACETUI_CACHE_MIN_BYTES=abc: not a size (e.g. 8M, 2GiB)``). Sizes are read by
:func:`tracetui.formatting.parse_size` (``8M`` and ``2GiB`` are powers of 1024, ``2GB`` of 1000).

``docs/settings.md`` is this table written out (:func:`markdown`; ``python -m tracetui.settings``
prints it, and a test checks that the page is the same).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from tracetui.errors import TraceError
from tracetui.formatting import parse_size, size

T = TypeVar("T")


class SettingError(TraceError):
    """A ``TRACETUI_*`` variable whose value is not of its type: one line, exit 2."""


@dataclass(frozen=True)
class Kind(Generic[T]):
    """How a variable's text is read: its type's name in the docs, the reader, what a value looks like."""

    name: str
    read: Callable[[str], T]
    expected: str
    show: Callable[[T], str] = str


_FLAGS = {
    "1": True,
    "true": True,
    "yes": True,
    "on": True,
    "0": False,
    "false": False,
    "no": False,
    "off": False,
}


def _flag(text: str) -> bool:
    if text.lower() not in _FLAGS:
        raise ValueError(text)
    return _FLAGS[text.lower()]


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(text)
    return int(text)


def _ratio(text: str) -> float:
    value = float(text)  # ValueError for text that is no number
    if not math.isfinite(value) or value < 0:
        raise ValueError(text)
    return value


FLAG = Kind("flag", _flag, "not a flag (1 or 0)", lambda on: "1" if on else "0")
SIZE = Kind("size", parse_size, "not a size (e.g. 8M, 2GiB)", size)
COUNT = Kind("count", _count, "not a whole number of at least 1")
RATIO = Kind("ratio", _ratio, "not a number of at least 0 (0: no cap)", lambda ratio: f"{ratio:g}")
PATH = Kind("path", Path, "")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One ``TRACETUI_*`` variable. ``default`` is the value when it is unset or empty (None: the
    reader decides, as ``unset`` says); ``scope`` is ``user`` or ``test`` (the test suite's)."""

    name: str
    kind: Kind[T]
    default: T | None
    doc: str
    unset: str = ""
    scope: str = "user"

    @property
    def default_text(self) -> str:
        """The default as the docs write it."""
        return self.unset if self.default is None else self.kind.show(self.default)

    def get(self) -> T | None:
        """The value in force now: the variable's, else the default; :class:`SettingError` if bad."""
        text = os.environ.get(self.name, "").strip()
        if not text:
            return self.default
        try:
            return self.kind.read(text)
        except ValueError:
            raise SettingError(None, f"{self.name}={text}: {self.kind.expected}") from None

    def value(self) -> T:
        """:meth:`get` of a setting that has a default (never None)."""
        found = self.get()
        assert found is not None, self.name
        return found


DEBUG = Setting("TRACETUI_DEBUG", FLAG, False, "An internal error (exit 3) shows its traceback.")
TIMING = Setting(
    "TRACETUI_TIMING",
    FLAG,
    False,
    "Print how long each stage of a load took, on stderr (the load starts no earlier than the command).",
)
NO_CACHE = Setting("TRACETUI_NO_CACHE", FLAG, False, "Turn the trace cache off.")
CACHE_DIR = Setting(
    "TRACETUI_CACHE_DIR",
    PATH,
    None,
    "Where the trace cache keeps its entries.",
    unset="the user cache folder (Linux: `$XDG_CACHE_HOME/tracetui`, else `~/.cache/tracetui`)",
)
CACHE_MAX = Setting(
    "TRACETUI_CACHE_MAX",
    SIZE,
    4 << 30,
    "The trace cache's entries in all at most this size; the least recently used go first.",
)
CACHE_MIN_BYTES = Setting(
    "TRACETUI_CACHE_MIN_BYTES", SIZE, 8 << 20, "Only traces of at least this much JSON are cached."
)
SPILL_MIN_BYTES = Setting(
    "TRACETUI_SPILL_MIN_BYTES",
    SIZE,
    4 << 20,
    "A load keeps its flows and recorded shapes in a temporary file when they take at least this size.",
)
MAX_INFLATE = Setting(
    "TRACETUI_MAX_INFLATE",
    RATIO,
    100.0,
    "Refuse gzip data that inflates to more than 256 MB plus this many times its size (0: no cap); "
    "`--max-inflate` wins over it.",
)
KEEP_FREED = Setting(
    "TRACETUI_KEEP_FREED",
    FLAG,
    True,
    "A load keeps polars' freed memory for reuse under a budget of half its JSON (0: handed back at once).",
)
WORKERS = Setting(
    "TRACETUI_WORKERS",
    COUNT,
    None,
    "The cores a command uses: the scanners of a trace's load (at most 16), the processes that load "
    "the ranks of a run (`--workers` wins over it).",
    unset="the cores this process may use",
)
FUZZ_SCALE = Setting(
    "TRACETUI_FUZZ_SCALE",
    COUNT,
    1,
    "The scanner's fuzz tests run this many times their examples.",
    scope="test",
)
CHROMIUM = Setting(
    "TRACETUI_CHROMIUM", PATH, Path("/usr/bin/chromium"), "The browser of the serve test.", scope="test"
)
TEST_ARTIFACTS = Setting(
    "TRACETUI_TEST_ARTIFACTS",
    PATH,
    None,
    "Where the serve test keeps its screenshot (CI).",
    unset="pytest's temporary folder",
    scope="test",
)
REQUIRE_BROWSER = Setting(
    "TRACETUI_REQUIRE_BROWSER",
    FLAG,
    False,
    "The serve test fails, not skips, without a browser (CI).",
    scope="test",
)

SETTINGS: tuple[Setting[Any], ...] = (
    DEBUG,
    TIMING,
    NO_CACHE,
    CACHE_DIR,
    CACHE_MAX,
    CACHE_MIN_BYTES,
    SPILL_MIN_BYTES,
    MAX_INFLATE,
    KEEP_FREED,
    WORKERS,
    FUZZ_SCALE,
    CHROMIUM,
    TEST_ARTIFACTS,
    REQUIRE_BROWSER,
)


def cores() -> int:
    """The cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    try:
        return len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    except OSError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def workers(given: int | None = None) -> int:
    """The cores a command uses: ``given`` (its ``--workers``), else ``TRACETUI_WORKERS``, else
    :func:`cores`. The one reading of the setting (a trace's load, the ranks of a run)."""
    if given is not None:
        return given
    found = WORKERS.get()
    return found if found is not None else cores()


def given() -> dict[str, str]:
    """The variables set in this process, as set: what a worker on another machine is handed."""
    return {s.name: os.environ[s.name] for s in SETTINGS if s.name in os.environ}


def markdown() -> str:
    """``docs/settings.md``: the table of every variable."""
    lines = [
        "# Settings",
        "",
        "tracetui reads these environment variables, each where it is used; a bad value is one line and",
        "exit 2 (`tracetui: TRACETUI_CACHE_MIN_BYTES=abc: not a size (e.g. 8M, 2GiB)`). A size is a number",
        "with a unit as written: `KiB`, `MiB`, `GiB`, `TiB` and the bare `K`, `M`, `G`, `T` are powers of",
        "1024; `kB`, `MB`, `GB`, `TB` powers of 1000 (any case); no unit: bytes. A flag is `1` or `0`",
        "(also `true`/`false`, `yes`/`no`, `on`/`off`). Unset or empty: the default.",
        "",
        "Declared in `tracetui/settings.py`; this page is written from it (`python -m tracetui.settings`).",
    ]
    for scope, title in (("user", "For users"), ("test", "For the test suite")):
        lines += [
            "",
            f"## {title}",
            "",
            "| Variable | Type | Default | Meaning |",
            "| --- | --- | --- | --- |",
        ]
        lines += [
            f"| `{s.name}` | {s.kind.name} | {s.default_text} | {s.doc} |"
            for s in SETTINGS
            if s.scope == scope
        ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
