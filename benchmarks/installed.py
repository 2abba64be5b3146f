"""What both benchmarks do first: make tracetui start as an installed package does."""

from __future__ import annotations

import compileall
from pathlib import Path


def compile_tracetui() -> None:
    """Byte-compile tracetui, as ``pip install`` does. An editable install where
    ``PYTHONDONTWRITEBYTECODE`` is set (this project's machines) would otherwise compile its
    ~60 modules again at every start (~0.1 s)."""
    import tracetui

    compileall.compile_dir(Path(tracetui.__file__).parent, quiet=1)
