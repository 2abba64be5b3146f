"""Test-wide settings: no test reads or writes the user's trace cache."""

from __future__ import annotations

import os

os.environ["TRACETUI_NO_CACHE"] = "1"  # cache tests enable a private cache explicitly
