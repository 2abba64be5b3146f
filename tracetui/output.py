"""Where a command's output goes: stdout, or a file written whole or not at all.

:func:`guard_stdout` (installed by the CLI) makes a failing stdout one kind of error wherever the
write happens (``sys.stdout.write``, ``click.echo``, a rich ``Console``): a reader that went away
(``| head``) raises :class:`StdoutClosed`, which ends the command quietly; a full or failing
stdout (``> /dev/full``) raises a one-line :class:`~tracetui.errors.TraceError`. Either way
stdout is pointed at ``/dev/null`` first, so nothing later fails on it again.

:func:`write_file` writes through a temporary file in the target's folder, renamed over the
target when complete: a full disk leaves no partial file behind (and an old file intact).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from tracetui.errors import TraceError


class StdoutClosed(Exception):
    """The reader of stdout went away: there is nothing left to write for."""


class _GuardedStdout:
    """A text stream that turns the errors of the stream it wraps into the two above."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise _failure(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            raise _failure(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stdout() -> None:
    """Route ``sys.stdout`` through the guard (once; for the CLI's process)."""
    if not isinstance(sys.stdout, _GuardedStdout) and sys.stdout is not None:
        sys.stdout = _GuardedStdout(sys.stdout)


def _failure(exc: OSError) -> Exception:
    _silence_stdout()
    if isinstance(exc, BrokenPipeError):
        return StdoutClosed()
    return TraceError(None, f"cannot write to stdout: {exc.strerror or exc}")


def _silence_stdout() -> None:
    """Point stdout's file descriptor at /dev/null and drop what is buffered for it."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())  # type: ignore[union-attr]
        os.close(devnull)


def write_file(target: Path, write: Callable[[Path], object], *, replace: bool = True) -> None:
    """Call ``write`` on a temporary path in ``target``'s folder, then rename it to ``target``.

    The temporary file is removed if anything fails. A target that exists and is not a regular
    file (``/dev/stdout``, a FIFO) is written directly: it cannot be replaced. ``replace=False``:
    nothing that exists is ever replaced, not even one that appears meanwhile (the complete file
    is linked in under its name, which fails if the name is taken: ``FileExistsError``).
    """
    if not replace and os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, "it exists already", str(target))
    if replace and target.exists() and not target.is_file():
        write(target)
        return
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(handle)
    temporary = Path(name)
    try:
        write(temporary)
        temporary.chmod(_mode_for(target))
        if replace:
            os.replace(temporary, target)
        else:
            _link_new(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _link_new(source: Path, target: Path) -> None:
    """``source``'s bytes under the new name ``target`` (``FileExistsError`` if it is taken): a hard
    link, else (a file system without them) a copy into a file created exclusively."""
    try:
        os.link(source, target)
        return
    except FileExistsError:
        raise
    except OSError:
        pass
    with source.open("rb") as data, target.open("xb") as out:
        try:
            shutil.copyfileobj(data, out)
        except BaseException:
            target.unlink(missing_ok=True)
            raise


def _mode_for(target: Path) -> int:
    """The target's permissions if it exists, else a new file's (0o666 less the umask)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
