"""Which files make a distributed run, and which rank each one is.

``TRACE`` may be a trace file, a directory (``tensorboard_trace_handler`` layout, any
``*.json[.gz]``), several paths, or a glob. A rank comes from the file's ``distributedInfo.rank``
(read from its head, see :mod:`tracetui.ranks.header`), else from a number in its file name, else
from the files' order, and the source is kept. Several traces of the same rank are different runs,
not ranks: the newest is used and the others are listed. A lone trace (a file, or a directory with
one trace, or one without any rank information) is not a rank set: commands treat it as today.
Importing this module needs neither polars nor the trace model, so the CLI probes cheaply.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracetui.errors import TraceError
from tracetui.ranks.header import Header, read_header
from tracetui.safetext import clean
from tracetui.trace.source import locate

DATASET_MANIFEST = "_tracetui_dataset.json"  # marks a directory written by ``tracetui convert``
RANK_PATTERNS = ("*.json", "*.json.gz")
FROM_INFO, FROM_NAME, FROM_ORDER = "distributedInfo", "file name", "order"
_RANK_WORD = re.compile(r"rank[_\-. ]?(\d+)", re.IGNORECASE)
_TRAILING_NUMBER = re.compile(r"(\d+)$")
_GLOB_CHARS = re.compile(r"[*?\[]")
MAX_RANKS = 1 << 20  # a rank number or world size from this on is refused (no run is that large)


@dataclass(frozen=True)
class ProcessGroup:
    """One entry of ``distributedInfo.pg_config``."""

    name: str
    description: str
    size: int | None
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class RankFile:
    """One rank's trace file and what its head said."""

    rank: int
    path: Path
    source: str  # FROM_INFO, FROM_NAME or FROM_ORDER
    world_size: int | None = None
    backend: str | None = None
    groups: tuple[ProcessGroup, ...] = ()
    mtime_ns: int = 0
    size: int = 0


@dataclass(frozen=True)
class RankSet:
    """The ranks of one distributed run: one trace per rank, sorted by rank."""

    ranks: tuple[RankFile, ...]
    duplicates: tuple[RankFile, ...] = ()  # other runs of a rank already in ``ranks``
    skipped: tuple[tuple[Path, str], ...] = ()  # files that are not traces, and why
    world_size: int | None = None
    backend: str | None = None
    notes: tuple[str, ...] = ()
    label: str = ""  # how the user named it (a directory, a glob, "3 files")
    directory: Path | None = None  # the directory, when the user named one

    @property
    def is_single(self) -> bool:
        """One rank only: commands treat it as a single trace."""
        return len(self.ranks) == 1

    @property
    def missing(self) -> tuple[int, ...]:
        """Ranks below the world size (or, without one, below the highest rank named in a file) that
        have no trace."""
        present = {r.rank for r in self.ranks}
        named = [r.rank for r in self.ranks if r.source != FROM_ORDER]
        top = self.world_size if self.world_size is not None else (max(named) + 1 if named else 0)
        return tuple(r for r in range(min(top, MAX_RANKS)) if r not in present)

    @property
    def rank_source(self) -> str:
        """Where the ranks came from: one source, or ``mixed``."""
        sources = {r.source for r in self.ranks}
        return sources.pop() if len(sources) == 1 else "mixed"

    def file(self, rank: int) -> RankFile:
        """The trace of ``rank``; a TraceError naming the ranks there are if it has none."""
        for entry in self.ranks:
            if entry.rank == rank:
                return entry
        raise TraceError(None, f"no rank {rank} in {self.label}; ranks: {rank_list(self.ranks)}")

    def describe(self) -> list[str]:
        """Plain sentences about the set: sources, duplicates, missing and skipped files."""
        lines = [f"{len(self.ranks)} ranks from {self.label}; rank from {self.rank_source}"]
        if self.world_size is not None:
            lines[0] += f", world size {self.world_size}"
        if self.backend:
            lines[0] += f", backend {self.backend}"
        if self.missing:
            lines.append(f"missing: rank {rank_list(self.missing)} (no trace)")
        for dup in self.duplicates:
            lines.append(f"another run of rank {dup.rank} not used (the newest is): {clean(dup.path.name)}")
        for path, why in self.skipped:
            lines.append(f"skipped {clean(path.name)}: {why}")
        return lines + list(self.notes)


def rank_list(ranks: Sequence[RankFile | int]) -> str:
    """``0-3, 5`` for ranks 0, 1, 2, 3 and 5."""
    numbers = sorted({r if isinstance(r, int) else r.rank for r in ranks})
    spans: list[list[int]] = []
    for n in numbers:
        if spans and spans[-1][1] == n - 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


Target = Path | RankSet  # one trace (a file, or a directory as today), or ranks; a dataset is a Path


def resolve(inputs: Sequence[str | Path]) -> Target:
    """What ``inputs`` name: a :class:`RankSet` of several ranks, or a Path (one trace, or a dataset)."""
    if len(inputs) == 1 and is_dataset(inputs[0]):
        return Path(inputs[0])
    found = discover(inputs)
    if found is None:
        return Path(inputs[0])
    if found.is_single:
        return found.directory or found.ranks[0].path
    return found


def is_run(target: Target) -> bool:
    """Whether ``target`` is several ranks (a rank set or a dataset)."""
    return isinstance(target, RankSet) or is_dataset(target)


def single_trace(target: Target) -> Path | None:
    """ "One trace or a run?" (every command asks it so, of :func:`resolve`'s answer): the one trace
    ``target`` names (a file, a pipe, a trace directory), or None for a run (a rank set, a dataset)."""
    return None if is_run(target) else target  # type: ignore[return-value]


def is_dataset(path: str | Path) -> bool:
    """Whether ``path`` is a dataset written by ``tracetui convert``."""
    return (Path(path) / DATASET_MANIFEST).is_file()


def discover(inputs: Sequence[str | Path]) -> RankSet | None:
    """The rank set ``inputs`` name, or None when they name one trace as today: a file, or a
    directory with one trace or without rank information (nothing is read then). A set whose
    traces are all of one rank :attr:`~RankSet.is_single`.

    Raises :class:`TraceError` for a path that does not exist or a glob that matches nothing.
    """
    if not inputs:
        raise TraceError(None, "no trace given")
    if len(inputs) == 1 and Path(inputs[0]).exists() and not Path(inputs[0]).is_dir():  # a file or a pipe
        return None
    files, from_one_directory, label = _expand(inputs)
    if len(files) == 1 and from_one_directory:
        return None
    headers = _headers(files)
    traces = [
        (path, header) for path, header in zip(files, headers, strict=True) if isinstance(header, Header)
    ]
    skipped = tuple(
        (path, header) for path, header in zip(files, headers, strict=True) if isinstance(header, str)
    )
    if not traces:
        raise TraceError(label, "no trace among " + ", ".join(clean(p.name) for p in files[:5]))
    entries = _assign(traces)
    if from_one_directory and all(e.source == FROM_ORDER for e in entries):
        return None  # a directory of runs of one process: today's newest trace, others listed
    directory = Path(inputs[0]) if from_one_directory else None
    return _one_per_rank(entries, skipped, label, directory)


def single_entry(path: Path) -> RankFile:
    """One trace (a file, or the newest trace of a directory) as a rank: ``distributedInfo``'s, else 0."""

    target, _ = locate(path)
    header = read_header(target)
    if header.form not in ("object", "array"):
        raise TraceError(target, "not a trace (no traceEvents)")
    rank = _info_rank(header)
    return _entry(
        target, header, header.distributed, rank or 0, FROM_INFO if rank is not None else FROM_ORDER
    )


def _expand(inputs: Sequence[str | Path]) -> tuple[list[Path], bool, str]:
    """Trace files named by ``inputs`` (sorted, each once), whether they came from one directory,
    and a label for messages."""
    files: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = {p for pattern in RANK_PATTERNS for p in path.glob(pattern) if p.is_file()}
            if not found:
                raise TraceError(path, "directory holds no trace (*.json or *.json.gz)")
            files += sorted(found, key=_natural)
        elif path.exists():
            files.append(path)
        elif _GLOB_CHARS.search(str(item)):
            matched = [Path(p) for p in sorted(glob.glob(str(item)), key=_natural_text) if Path(p).is_file()]
            if not matched:
                raise TraceError(item, "no file matches this pattern")
            files += matched
        else:
            raise TraceError(path, "no such file or directory")
    unique = list(dict.fromkeys(files))
    one_directory = len(inputs) == 1 and Path(inputs[0]).is_dir()
    label = str(inputs[0]) if len(inputs) == 1 else f"{len(unique)} files"
    return unique, one_directory, clean(label)


def _headers(files: Sequence[Path]) -> list[Header | str]:
    """Each file's header, or why it is not a trace; read on a few threads (inflating releases the
    GIL)."""

    def one(path: Path) -> Header | str:
        try:
            header = read_header(path)
        except TraceError as exc:
            return exc.problem
        return header if header.form in ("object", "array") else "not a trace (no traceEvents)"

    if len(files) < 4:
        return [one(p) for p in files]
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return list(pool.map(one, files))


def _assign(traces: Sequence[tuple[Path, Header]]) -> list[RankFile]:
    """A rank for each trace: ``distributedInfo``, else the file name, else the order of the names."""
    from_names = _ranks_from_names([p for p, h in traces if _info_rank(h) is None])
    entries: list[RankFile] = []
    unranked: list[tuple[Path, Header]] = []
    for path, header in traces:
        info = header.distributed
        rank, source = _info_rank(header), FROM_INFO
        if rank is None:
            rank, source = from_names.get(path), FROM_NAME
        if rank is None:
            unranked.append((path, header))
            continue
        entries.append(_entry(path, header, info, rank, source))
    taken = {e.rank for e in entries}
    free = (n for n in range(len(traces) + len(taken) + 1) if n not in taken)
    for path, header in unranked:  # already in natural name order
        entries.append(_entry(path, header, header.distributed, next(free), FROM_ORDER))
    return entries


def _info_rank(header: Header) -> int | None:
    rank = header.distributed.get("rank")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0 else None


def _ranks_from_names(paths: Sequence[Path]) -> dict[Path, int]:
    """Ranks written in file names: ``rank<N>`` anywhere; else a number ending the worker name (the
    part before the first dot) when those numbers are distinct and below twice the file count, so
    that a process id (``host_4711.….pt.trace.json``) is not taken for a rank."""
    found: dict[Path, int] = {}
    rest: list[Path] = []
    for path in paths:
        match = _RANK_WORD.search(path.name)
        if match:
            found[path] = int(match.group(1))
        else:
            rest.append(path)
    trailing = {p: _TRAILING_NUMBER.search(p.name.split(".", 1)[0]) for p in rest}
    numbers = {p: int(m.group(1)) for p, m in trailing.items() if m}
    values = list(numbers.values())
    if values and len(set(values)) == len(values) and max(values) < 2 * len(paths):
        found |= numbers
    return found


def _entry(path: Path, header: Header, info: dict[str, Any], rank: int, source: str) -> RankFile:
    world = info.get("world_size")
    for what, number in (("rank", rank), ("world size", world)):
        if isinstance(number, int) and number >= MAX_RANKS:
            limit = f"a run of at most {MAX_RANKS:,} ranks"
            raise TraceError(path, f"{what} {number} is beyond what tracetui reads ({limit})")
    try:
        stat = path.stat()
        mtime, size = stat.st_mtime_ns, stat.st_size
    except OSError:
        mtime, size = 0, 0
    backend = info.get("backend")
    return RankFile(
        rank=rank,
        path=path,
        source=source,
        world_size=world if isinstance(world, int) and world > 0 else None,
        backend=clean(backend) if isinstance(backend, str) else None,
        groups=_groups(info.get("pg_config")),
        mtime_ns=mtime,
        size=size,
    )


def _groups(config: Any) -> tuple[ProcessGroup, ...]:
    if not isinstance(config, list):
        return ()
    groups = []
    for item in config:
        if not isinstance(item, dict):
            continue
        ranks = item.get("ranks")
        size = item.get("pg_size")
        groups.append(
            ProcessGroup(
                name=clean(str(item.get("pg_name", ""))),
                description=clean(str(item.get("pg_desc", ""))),
                size=size if isinstance(size, int) else None,
                ranks=tuple(r for r in ranks if isinstance(r, int)) if isinstance(ranks, list) else (),
            )
        )
    return tuple(groups)


def _one_per_rank(
    entries: Sequence[RankFile], skipped: tuple[tuple[Path, str], ...], label: str, directory: Path | None
) -> RankSet:
    """Keep the newest trace of each rank; the world size and backend most files agree on."""
    by_rank: dict[int, list[RankFile]] = {}
    for entry in entries:
        by_rank.setdefault(entry.rank, []).append(entry)
    chosen, duplicates = [], []
    for rank in sorted(by_rank):
        runs = sorted(by_rank[rank], key=lambda e: (e.mtime_ns, e.path.name), reverse=True)
        chosen.append(runs[0])
        duplicates += runs[1:]
    notes: list[str] = []
    world = _agreed([e.world_size for e in chosen], "world size", notes)
    backend = _agreed([e.backend for e in chosen], "backend", notes)
    if world is not None and (beyond := [e.rank for e in chosen if e.rank >= world]):
        notes.append(f"rank {', '.join(map(str, beyond))} is beyond the world size {world}")
    return RankSet(
        ranks=tuple(chosen),
        duplicates=tuple(duplicates),
        skipped=skipped,
        world_size=world,
        backend=backend,
        notes=tuple(notes),
        label=label,
        directory=directory,
    )


def _agreed(values: Sequence[Any], what: str, notes: list[str]) -> Any:
    """The most common non-null value; a note when the files disagree."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    counts = {v: known.count(v) for v in dict.fromkeys(known)}
    if len(counts) > 1:
        notes.append(f"the traces disagree on the {what} ({', '.join(map(str, counts))}): mixed runs?")
    return max(counts, key=lambda v: counts[v])


def _natural(path: Path) -> list[Any]:
    return _natural_text(path.name)


def _natural_text(text: str) -> list[Any]:
    """Sort key that puts ``rank2`` before ``rank10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]
