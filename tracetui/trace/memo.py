"""Shared intermediates kept per object (a trace, an events frame) for as long as it lives, so that
the several aggregates that read one compute it once."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_KEPT: dict[int, dict[str, Any]] = {}
_LOCK = threading.Lock()


def kept(owner: object, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, computed once per live ``owner`` (weakly referenced: dropped with it) and name."""
    key = id(owner)
    with _LOCK:
        found = _KEPT.get(key)
        if found is not None and name in found:
            return found[name]  # type: ignore[no-any-return]
    value = compute()
    with _LOCK:
        if key not in _KEPT:
            _KEPT[key] = {}
            weakref.finalize(owner, _forget, key)
        return _KEPT[key].setdefault(name, value)  # type: ignore[no-any-return]


def _forget(key: int) -> None:
    with _LOCK:
        _KEPT.pop(key, None)


def kept_value(owner: object, name: str) -> Any:
    """What :func:`kept` holds for ``owner`` and ``name``, else None (nothing is computed)."""
    with _LOCK:
        return _KEPT.get(id(owner), {}).get(name)
