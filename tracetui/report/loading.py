"""Load a trace for a CLI command, with progress on a terminal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from tracetui.trace import Trace
    from tracetui.trace.helper import Helper


def load_with_progress(path: str | Path, helper: Helper | None = None) -> Trace:
    """``tracetui.load`` with a spinner naming the stage, when stderr is a terminal."""
    from tracetui.trace import load

    if not sys.stderr.isatty():
        return load(path, helper=helper)
    console = Console(stderr=True, markup=False, highlight=False)
    name = Path(path).name
    with console.status(Text(f"loading {name}"), spinner="dots") as status:
        return load(
            path, progress=lambda stage: status.update(Text(f"loading {name}: {stage}")), helper=helper
        )
