"""How many examples a property test draws.

A test states its full count (``max_examples=examples(200)``); the default run draws a quarter of it
(hypothesis profile ``tracetui``, loaded by ``tests/conftest.py``) and CI's thorough run
(``pytest --hypothesis-profile=thorough -m "slow or hypothesis"``) draws it all.
"""

from __future__ import annotations

from hypothesis import settings

FULL = 100  # the thorough profile's max_examples: there a test's own count applies as written
DEFAULT = 25  # the default profile's: a quarter of each count


def examples(full: int) -> int:
    """``full`` in the thorough run, scaled to the loaded profile otherwise (at least 5)."""
    return max(5, full * settings.default.max_examples // FULL)
