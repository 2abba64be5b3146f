"""Files tracetui writes for the user (exports, pictures) are written whole or not at all: into a
temporary file beside the target, then renamed over it, so a reader never sees half a file and an
error leaves the old file as it was."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tracetui.errors import TraceError


def write_atomic(target: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` to a temporary file in ``target``'s folder, then rename it to ``target``; an
    OS error is one line (:class:`TraceError`) and leaves no temporary file behind."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        raise TraceError(target, f"cannot write: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(target: Path, text: str) -> None:
    """:func:`write_atomic` of UTF-8 text."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    write_atomic(target, write)
