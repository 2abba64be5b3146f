"""The trace model: polars tables plus the facts about the file they came from."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from tracetui.safetext import clean_value
from tracetui.trace import stats
from tracetui.trace.categories import GPU_KIND, GPU_WORK
from tracetui.trace.schema import RAW_ARGS_DECODER


@dataclass
class Trace:
    """A loaded trace. Build it with :func:`tracetui.load`.

    ``events`` has one row per complete (``X``) event in file order (``id`` = index in
    ``traceEvents``), with the promoted args, the CPU tree (``track``, ``pos``, ``end_pos``,
    ``parent``, ``depth``), the links (``launch_id``, ``launch_op_id``, ``op_id``,
    ``annotation_id``, ``step_id``, ``fwd_id``) and per-node inclusive statistics
    (``cpu_self_us``, ``gpu_us``, ``gpu_events``, ``kernels``, ``memcpys``, ``memsets``).
    Times: ``ts``/``dur`` in µs as written; ``start_ns``/``end_ns`` exact integers.
    """

    path: Path
    events: pl.DataFrame
    instants: pl.DataFrame
    flows: pl.DataFrame
    meta_events: pl.DataFrame
    tracks: pl.DataFrame
    anomalies: pl.DataFrame
    metadata: dict[str, Any]
    format: str
    gzipped: bool = False
    truncated: bool = False
    repairs: list[str] = field(default_factory=list)
    siblings: tuple[Path, ...] = ()
    other_phases: dict[str, int] = field(default_factory=dict)
    _events_json: bytes | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ---- basic facts -------------------------------------------------------------
    @property
    def event_count(self) -> int:
        """Events of every phase read from the file."""
        phases = len(self.events) + len(self.instants) + len(self.flows) + len(self.meta_events)
        return phases + sum(self.other_phases.values())

    @cached_property
    def t0_ns(self) -> int:
        """Start of the earliest event: time zero for display."""
        start = self.events["start_ns"].min()
        return int(start) if start is not None else 0  # type: ignore[arg-type]

    @cached_property
    def devices(self) -> list[dict[str, Any]]:
        """GPUs: ``deviceProperties`` entries, plus devices seen only in GPU events."""
        props = self.metadata.get("deviceProperties") or []
        devices = [dict(d) for d in props if isinstance(d, dict)]
        known = {d.get("id") for d in devices}
        seen = self.gpu["device"].drop_nulls().unique().sort().to_list()
        devices += [{"id": d, "name": None} for d in seen if d not in known]
        return devices

    # ---- views ---------------------------------------------------------------------
    @cached_property
    def gpu(self) -> pl.DataFrame:
        """GPU events (kernels, memcpys, memsets, syncs) with their launch links."""
        return self.events.filter(pl.col("cat").is_in(list(GPU_KIND)))

    @cached_property
    def orphans(self) -> pl.DataFrame:
        """GPU work with no runtime call in the trace."""
        return self.gpu.filter(pl.col("cat").is_in(GPU_WORK) & pl.col("launch_id").is_null())

    # ---- aggregates (computed on first use) ------------------------------------------
    @cached_property
    def ops(self) -> pl.DataFrame:
        return stats.op_table(self.events)

    @cached_property
    def kernels(self) -> pl.DataFrame:
        return stats.kernel_table(self.events)

    @cached_property
    def runtime(self) -> pl.DataFrame:
        return stats.runtime_table(self.events)

    @cached_property
    def annotation_instances(self) -> pl.DataFrame:
        return stats.annotation_instances(self.events)

    @cached_property
    def annotations(self) -> pl.DataFrame:
        return stats.per_call_table(self.annotation_instances)

    @cached_property
    def step_instances(self) -> pl.DataFrame:
        return stats.step_instances(self.events)

    @cached_property
    def steps(self) -> pl.DataFrame:
        return self.step_instances

    # ---- raw args ----------------------------------------------------------------------
    @cached_property
    def _raw_args(self) -> list[msgspec.Raw]:
        if self._events_json is None:
            return []
        return [event.args for event in RAW_ARGS_DECODER.decode(self._events_json)]

    def event_args(self, event_id: int) -> dict[str, Any]:
        """Every arg of one event as written (unknown keys included), control chars cleaned."""
        with self._lock:
            raws = self._raw_args
        if not 0 <= event_id < len(raws) or not raws[event_id]:
            return {}
        value = msgspec.json.decode(raws[event_id])
        return clean_value(value) if isinstance(value, dict) else {"args": clean_value(value)}
