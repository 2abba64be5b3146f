"""Raw event args on demand: the model asks a :class:`RawArgs` provider, the loader chose it.

The model keeps only the promoted args as columns. The others (recorded shapes, every arg of
an event for the details pane and the export) are read when first asked for, by event id (the
event's index in ``traceEvents``), from the provider the loader handed to the
:class:`~tracetui.trace.model.Trace`; the model never reads a file itself. Providers:

* :class:`~tracetui.trace.native.ArgsSpans`: byte spans of each event's args in the decoded
  bytes (found by the native scan);
* :class:`JsonArgs`: the JSON of the events array (the msgspec path), decoded on first use;
* :class:`Deferred`: a provider the loader opens on first use (a trace from the cache re-reads
  its file then);
* :data:`NO_ARGS`: none known.

A provider is safe to use from several threads. A new source of args (e.g. byte ranges of the
file, or compressed blocks in the cache) needs only ``raw`` and ``pick``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import msgspec

from tracetui.trace.schema import RAW_ARGS_DECODER, RAW_EMPTY

if TYPE_CHECKING:
    import polars as pl


class RawArgs(Protocol):
    """Each event's args object as raw JSON, by event id."""

    def raw(self, ids: Sequence[int]) -> list[msgspec.Raw]:
        """The args of each event in ``ids`` as written (empty: none, or no such event)."""
        ...

    def pick(self, ids: Sequence[int], keys: Mapping[str, str]) -> pl.DataFrame | None:
        """``id`` (UInt32) and, per ``keys`` (column -> args key), the raw JSON text of that arg of
        each event in ``ids`` (null: absent); None when the provider has no fast way (the caller
        then decodes :meth:`raw`)."""
        ...


class NoArgs:
    """No args known: every event's are empty."""

    def raw(self, ids: Sequence[int]) -> list[msgspec.Raw]:
        return [RAW_EMPTY] * len(ids)

    def pick(self, ids: Sequence[int], keys: Mapping[str, str]) -> pl.DataFrame | None:
        return None


NO_ARGS = NoArgs()


class JsonArgs:
    """The args of the events of a JSON array of event objects, decoded once on first use."""

    def __init__(self, events_json: bytes | msgspec.Raw) -> None:
        self._json: bytes | msgspec.Raw | None = events_json
        self._raws: list[msgspec.Raw] | None = None
        self._lock = threading.Lock()

    def _all(self) -> list[msgspec.Raw]:
        with self._lock:
            if self._raws is None:
                assert self._json is not None
                self._raws = [event.args for event in RAW_ARGS_DECODER.decode(self._json)]
                self._json = None  # the raws keep what they need of it
            return self._raws

    def raw(self, ids: Sequence[int]) -> list[msgspec.Raw]:
        raws = self._all()
        count = len(raws)
        return [raws[i] if 0 <= i < count else RAW_EMPTY for i in ids]

    def pick(self, ids: Sequence[int], keys: Mapping[str, str]) -> pl.DataFrame | None:
        return None


class Deferred:
    """The provider ``open`` returns, called on first use (and again after it raised)."""

    def __init__(self, open: Callable[[], RawArgs]) -> None:
        self._open = open
        self._inner: RawArgs | None = None
        self._lock = threading.Lock()

    def _provider(self) -> RawArgs:
        with self._lock:
            if self._inner is None:
                self._inner = self._open()
            return self._inner

    def raw(self, ids: Sequence[int]) -> list[msgspec.Raw]:
        return self._provider().raw(ids)

    def pick(self, ids: Sequence[int], keys: Mapping[str, str]) -> pl.DataFrame | None:
        return self._provider().pick(ids, keys)
