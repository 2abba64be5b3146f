"""Traces captured with ``tracetui capture`` on an H200 (see README.md here for the exact commands).

A package only so that the files ship with every install and ``tracetui open`` can show the
bundled default without an argument.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT = "mlp_eager.json.gz"


def default_trace() -> Path:
    """The bundled trace that ``tracetui open`` shows when given no file."""
    return Path(__file__).with_name(DEFAULT)
