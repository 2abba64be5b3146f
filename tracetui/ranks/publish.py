"""A dataset written whole or not at all, by one writer at a time.

``tracetui convert`` writes into a fresh staging folder beside the output,
``.<name>.staging-<pid>-<hex>`` (marked by a :data:`MARK` file), and only when every part and the
manifest are there is it moved into place: renamed, or where a dataset is being replaced, swapped
with it in one step (Linux ``renameat2(RENAME_EXCHANGE)``), so that the old dataset stays whole
until the new one is; the old one, now under the staging name, is removed after. A convert killed
at any point leaves the old dataset whole (or the new one, whole) and at most a staging folder,
which the next convert into that output removes.

Two converts into one output: each takes the lock ``.<name>.lock`` beside it (``flock``, released
by the system when its holder dies, so a killed writer never leaves it held); the second one is
refused at once with one line. Only the lock, the staging folders of this output (a staging
folder carries :data:`MARK`, or, once swapped, the old dataset's manifest) are ever removed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from tracetui.errors import TraceError
from tracetui.ranks.discover import DATASET_MANIFEST

MARK = "_tracetui_staging"
RENAME_EXCHANGE = 2
AT_FDCWD = -100


class Busy(TraceError):
    """Another ``tracetui convert`` is writing this output."""


@contextlib.contextmanager
def writing(output: Path) -> Iterator[Path]:
    """Hold ``output``'s lock and yield a fresh staging folder beside it; the folder is removed
    unless :func:`into_place` moved it into place. Raises :class:`Busy` when another writer holds
    the lock."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with _locked(output):
        for leftover in _stagings(output):  # of converts that were killed: nobody else writes now
            _remove(leftover)
        staging = output.parent / f".{output.name}.staging-{os.getpid()}-{secrets.token_hex(4)}"
        staging.mkdir()
        (staging / MARK).write_text("a tracetui convert writes here; removed when it is done\n")
        try:
            yield staging
        finally:
            if staging.exists():
                _remove(staging)


def into_place(staging: Path, output: Path) -> None:
    """Move the complete dataset in ``staging`` to ``output``, replacing a dataset there in one step."""
    (staging / MARK).unlink()
    if not output.exists():
        staging.rename(output)
        return
    if not _exchange(staging, output):  # no atomic swap here: two renames, a moment apart
        aside = output.parent / f".{output.name}.staging-{os.getpid()}-{secrets.token_hex(4)}"
        output.rename(aside)
        staging.rename(output)
        staging = aside
    _remove(staging)  # the old dataset, now under a staging name (whole, with its manifest)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders atomically (Linux); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        swap = libc.renameat2
    except (OSError, AttributeError):
        return False
    done = swap(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE)
    return int(done) == 0


def _stagings(output: Path) -> list[Path]:
    prefix = f".{output.name}.staging-"
    return [
        p
        for p in output.parent.glob(f"{prefix}*")
        if p.is_dir() and not p.is_symlink() and ((p / MARK).is_file() or (p / DATASET_MANIFEST).is_file())
    ]


def _remove(folder: Path) -> None:
    """Remove a staging folder, its mark last: one removed halfway is still known as a staging
    folder."""
    mark = folder / MARK
    with contextlib.suppress(OSError):
        mark.touch()
    for child in folder.iterdir():
        if child.name == MARK:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    mark.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


@contextlib.contextmanager
def _locked(output: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield
        return
    path = output.parent / f".{output.name}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise Busy(output, f"another tracetui convert{who} is writing it: wait for it") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the file was removed by the writer before us, after we opened it: again
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)
