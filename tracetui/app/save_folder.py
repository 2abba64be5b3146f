"""Where the explorer writes a file (an export, a saved screen): the current folder, or with
``tracetui open --save-dir DIR`` (each tab of ``tracetui serve``) only under DIR.

Under a save folder a typed name is a path relative to it, and nothing else: an absolute path,
``~``, a ``..`` part, a folder that leads out of it (a link) or a link as the file itself are
refused, before anything is written. An existing file is replaced only when the user says so
(:mod:`tracetui.app.screens.replace_dialog`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePath

from tracetui.errors import TraceError


@dataclass(frozen=True)
class SaveFolder:
    """``root``: where files go and names are read from; ``confined``: only under it."""

    root: Path
    confined: bool = False

    @classmethod
    def here(cls) -> SaveFolder:
        """The current folder; a typed name may be any path (``~`` expanded)."""
        return cls(Path.cwd())

    @classmethod
    def only(cls, folder: Path) -> SaveFolder:
        """Only under ``folder`` (which must be a folder), as it resolves now."""
        if not folder.is_dir():
            raise TraceError(folder, "not a folder (--save-dir)")
        return cls(folder.resolve(), confined=True)

    def target(self, typed: str) -> Path:
        """The file a typed name stands for; under a save folder, one inside it or a one-line error."""
        if not self.confined:
            return Path(typed).expanduser()
        name = PurePath(typed)
        if typed.startswith("~"):
            raise TraceError(typed, f"give a name in the save folder {self.root} (no ~)")
        if name.is_absolute():
            raise TraceError(typed, f"give a name in the save folder {self.root}, not an absolute path")
        if ".." in name.parts:
            raise TraceError(typed, f"give a name in the save folder {self.root} (no ..)")
        candidate = self.root / name
        try:
            folder = candidate.parent.resolve(strict=True)
        except (OSError, RuntimeError):  # missing, or a loop of links
            raise TraceError(typed, f"no such folder in the save folder {self.root}") from None
        if not folder.is_dir() or not folder.is_relative_to(self.root):
            raise TraceError(typed, f"leads out of the save folder {self.root}: not written")
        target = folder / candidate.name
        if os.path.islink(target):
            raise TraceError(typed, "is a link: not written through")
        if target.exists() and not target.is_file():
            raise TraceError(typed, "is not a regular file: not written")
        return target
