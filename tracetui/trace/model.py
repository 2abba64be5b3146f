"""The trace model: polars tables plus the facts about the file they came from.

The model does no I/O: the loader builds it and hands it what it may need later, a
:class:`~tracetui.trace.args.RawArgs` provider for the args that are not columns and a
:class:`PartStore` that keeps what it computes after load (the loader's cache entry). A trace
from the cache reads each of its tables on first use, from the loader's :class:`TableSource`.

What a trace is made of is declared here once: :data:`TABLES` and :data:`FACTS` (what a cache
stores: :meth:`Trace.stored_tables`, :meth:`Trace.stored_facts`, :meth:`Trace.restored`).
"""

from __future__ import annotations

import io
import threading
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, overload

import msgspec
import polars as pl

from tracetui.safetext import clean_value
from tracetui.trace import repair, stats
from tracetui.trace.args import NO_ARGS, RawArgs
from tracetui.trace.categories import ACCELERATOR_OF_CALL, GPU_KIND, GPU_WORK
from tracetui.trace.schema import SHAPE_DECODER, SHAPE_KEYS, ShapeArgs
from tracetui.trace.text import clean_series, raw_json_series

# The tables that make a trace, and its facts (plain JSON values): what a cache stores.
TABLES = ("events", "instants", "flows", "meta_events", "tracks", "anomalies")
FACTS = ("metadata", "format", "gzipped", "truncated", "repairs", "other_phases", "reader")
LAUNCH_SHAPES = "table:launch_shapes"  # the part that keeps :attr:`Trace.launch_shapes`


class TableSource(Protocol):
    """Where a trace from the cache reads its tables (``names``), each on first use."""

    names: tuple[str, ...]

    def table(self, name: str) -> pl.DataFrame: ...


class StoredArgs(Protocol):
    """A raw-args provider whose data a cache can keep as tables (the loader rebuilds it from
    them: ``loader._cached_args``), instead of reading the trace file again."""

    def tables(self) -> dict[str, pl.DataFrame]: ...


class PartStore(Protocol):
    """Where a trace keeps results it computes after load, by kind: named byte strings."""

    def get(self, kind: str) -> dict[str, bytes] | None: ...

    def put(self, kind: str, parts: dict[str, bytes]) -> None: ...


class NoParts:
    """Nothing kept."""

    def get(self, kind: str) -> dict[str, bytes] | None:
        return None

    def put(self, kind: str, parts: dict[str, bytes]) -> None:
        return None


NO_PARTS = NoParts()


@dataclass(frozen=True)
class Unread:
    """A table not read yet: ``source`` reads it on first use."""

    source: TableSource
    name: str


class Stored:
    """A table field of :class:`Trace`: a DataFrame, or :class:`Unread` until first used."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, trace: None, owner: type) -> Stored: ...
    @overload
    def __get__(self, trace: Trace, owner: type) -> pl.DataFrame: ...
    def __get__(self, trace: Trace | None, owner: type) -> pl.DataFrame | Stored:
        if trace is None:
            raise AttributeError(self.name)  # no default: the field is required
        value = trace.__dict__[self.name]
        if isinstance(value, Unread):
            with trace._lock:
                value = trace.__dict__[self.name]
                if isinstance(value, Unread):
                    value = value.source.table(value.name)
                    trace.__dict__[self.name] = value
        return value  # type: ignore[no-any-return]

    def __set__(self, trace: Trace, value: pl.DataFrame | Unread) -> None:
        trace.__dict__[self.name] = value


@dataclass(repr=False, eq=False)
class Trace:
    """A loaded trace. Build it with :func:`tracetui.load`.

    ``events`` has one row per complete (``X``) event in file order (``id`` = index in
    ``traceEvents``), with the promoted args, the CPU tree (``track``, ``pos``, ``end_pos``,
    ``parent``, ``depth``), the links (``launch_id``, ``launch_op_id``, ``op_id``,
    ``annotation_id``, ``step_id``, ``fwd_id``) and per-node inclusive statistics
    (``cpu_self_us``, ``gpu_us``, ``gpu_events``, ``kernels``, ``memcpys``, ``memsets``).
    Times: ``ts``/``dur`` in µs as written; ``start_ns``/``end_ns`` exact integers.

    ``raw_args`` reads the args that are not columns (shapes, every arg of an event);
    ``parts`` keeps what is computed after load (e.g. ``launch_shapes``, the summary).
    """

    path: Path
    metadata: dict[str, Any]
    format: str
    events: Stored = Stored()
    instants: Stored = Stored()
    flows: Stored = Stored()
    meta_events: Stored = Stored()
    tracks: Stored = Stored()
    anomalies: Stored = Stored()
    gzipped: bool = False
    truncated: bool = False
    repairs: list[str] = field(default_factory=list)
    siblings: tuple[Path, ...] = ()
    other_phases: dict[str, int] = field(default_factory=dict)
    from_cache: bool = False
    reader: str = "msgspec"  # what read the JSON: see tracetui.trace.decoded.Decoded.reader
    raw_args: RawArgs = field(default=NO_ARGS, repr=False)
    parts: PartStore = field(default=NO_PARTS, repr=False)
    _launch_shapes: pl.DataFrame | None = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _parents: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    _all_shapes: pl.DataFrame | None = field(default=None, repr=False)

    def __repr__(self) -> str:  # the tables are not read for it
        return f"Trace(path={str(self.path)!r}, format={self.format!r}, from_cache={self.from_cache})"

    # ---- what a cache stores ----------------------------------------------------------
    def stored_tables(self) -> dict[str, pl.DataFrame]:
        """The tables that rebuild this trace (:data:`TABLES`, and its raw-args provider's when it
        is a :class:`StoredArgs`), by name."""
        tables = {name: getattr(self, name) for name in TABLES}
        if callable(kept := getattr(self.raw_args, "tables", None)):
            tables |= kept()
        return tables

    def stored_facts(self) -> dict[str, Any]:
        """The facts that rebuild this trace (:data:`FACTS`), as JSON values."""
        return {name: getattr(self, name) for name in FACTS}

    @classmethod
    def restored(
        cls,
        path: Path,
        siblings: tuple[Path, ...],
        tables: TableSource,
        facts: Mapping[str, Any],
        raw_args: RawArgs,
        parts: PartStore,
    ) -> Trace:
        """A trace from what :meth:`stored_tables` and :meth:`stored_facts` gave (each table read
        from ``tables`` on first use). Raises KeyError or TypeError for facts of another shape."""
        if missing := set(TABLES) - set(tables.names):
            raise KeyError(f"tables missing: {sorted(missing)}")
        known: dict[str, Any] = {name: facts[name] for name in FACTS}
        unread: dict[str, Any] = {name: Unread(tables, name) for name in TABLES}
        if not isinstance(known["metadata"], dict) or not isinstance(known["repairs"], list):
            raise TypeError("facts of another shape")
        return cls(
            path=path,
            siblings=siblings,
            from_cache=True,
            raw_args=raw_args,
            parts=parts,
            **unread,
            **known,
        )

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
        props = self.metadata.get("deviceProperties")
        devices = [dict(d) for d in (props if isinstance(props, list) else []) if isinstance(d, dict)]
        for device in devices:  # a name is text, an id a number or text; anything else is dropped
            if not isinstance(device.get("name"), str | None):
                device["name"] = str(device["name"])
            if not isinstance(device.get("id"), int | str | None):
                device["id"] = None
        known = {d.get("id") for d in devices}
        return devices + [d for d in _devices_of_work(self.events, self.gpu) if d["id"] not in known]

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
    def span_work(self) -> pl.DataFrame:
        """GPU work of each step and annotation instance, launched by any thread while it was open."""
        return stats.span_work(self.events)

    @cached_property
    def span_threads(self) -> pl.DataFrame:
        """That work per span and launching thread (the split: "358 here + 666 on pt_autograd_0")."""
        return stats.span_threads(self.span_work, self.events, self.tracks)

    @cached_property
    def annotation_instances(self) -> pl.DataFrame:
        return stats.annotation_instances(self.events, self.span_work)

    @cached_property
    def annotations(self) -> pl.DataFrame:
        return stats.per_call_table(self.annotation_instances)

    @cached_property
    def step_instances(self) -> pl.DataFrame:
        return stats.step_instances(self.events, self.span_work)

    @cached_property
    def steps(self) -> pl.DataFrame:
        return self.step_instances

    # ---- navigation ----------------------------------------------------------------------
    def visible_parents(self, hide_python: bool = False) -> pl.DataFrame:
        """``(id, parent)`` for CPU events in preorder; with ``hide_python`` python frames are
        skipped (their children hang from the nearest non-python ancestor) and not listed."""
        key = "with_python" if not hide_python else "without_python"
        with self._lock:
            cached = self._parents.get(key)
            if cached is None:
                cached = _visible_parents(self.events, hide_python)
                self._parents[key] = cached
        return cached

    @cached_property
    def _ids(self) -> list[int]:
        return self.events["id"].to_list()

    def row(self, event_id: int) -> int:
        """Row of an event id (a file position) in ``events``; KeyError if it is not an X event."""
        ids = self._ids
        row = bisect_left(ids, event_id)
        if row >= len(ids) or ids[row] != event_id:
            raise KeyError(event_id)
        return row

    def event(self, event_id: int) -> dict[str, Any]:
        """One event's row as a dict."""
        return self.events.row(self.row(event_id), named=True)

    def ancestors(self, event_id: int) -> list[int]:
        """Ids from the root down to the event itself (GPU events: via their launch call)."""
        parent = self.events["parent"]
        row = self.row(event_id)
        chain = [event_id]
        up = self.events["launch_id"][row]
        current = up if up is not None else parent[row]
        while current is not None and len(chain) <= len(parent):
            chain.append(current)
            current = parent[self.row(current)]
        return chain[::-1]

    def launched_below(self, event_id: int) -> pl.DataFrame:
        """GPU work launched by the event or anything below it (its subtree)."""
        row = self.event(event_id)
        if row["pos"] is None:
            return self.gpu.clear()
        calls = self.events.filter(
            (pl.col("track") == row["track"]) & pl.col("pos").is_between(row["pos"], row["end_pos"] - 1)
        ).select(pl.col("id").alias("launch_id"))
        return self.gpu.filter(pl.col("cat").is_in(GPU_WORK)).join(calls, on="launch_id").sort("start_ns")

    # ---- raw args ----------------------------------------------------------------------
    def shapes(self, ids: Sequence[int] | None = None) -> pl.DataFrame:
        """Recorded shapes of events, as written (JSON text): ``id``, ``input_dims``,
        ``input_type``, ``input_strides``, ``concrete_inputs``. Default: every ``cpu_op``.

        Shapes are big and needed rarely (FLOPs, details, export), so they are read from the
        raw events on demand rather than at load.
        """
        if ids is not None and self._launch_shapes is not None:
            wanted = pl.Series("id", [i for i in ids if i is not None], dtype=pl.UInt32)
            known = self._launch_shapes.filter(pl.col("id").is_in(wanted.implode()))
            if len(known) == len(wanted.unique()):
                return wanted.to_frame().join(known, on="id", how="left", maintain_order="left")
        if ids is None:
            with self._lock:
                if self._all_shapes is None:
                    ops = self.events.select("id", "cat").filter(pl.col("cat") == "cpu_op")["id"].to_list()
                    self._all_shapes = self.shapes(ops)
                return self._all_shapes
        ids = [i for i in ids if i is not None]
        if (picked := self.raw_args.pick(ids, SHAPE_KEYS)) is not None:
            return picked
        parsed = _parse_shapes(self.raw_args.raw(ids))
        columns: dict[str, Any] = {"id": pl.Series("id", ids, dtype=pl.UInt32)}
        for name in SHAPE_KEYS:
            values = [bytes(getattr(p, name)) for p in parsed]
            columns[name] = raw_json_series(name, values)
        return pl.DataFrame(columns)

    @property
    def launch_shapes(self) -> pl.DataFrame:
        """Shapes of the ops that launched GPU work (what FLOPs and bytes need), kept once read."""
        with self._lock:
            if self._launch_shapes is None and (kept := self.parts.get(LAUNCH_SHAPES)) is not None:
                self._launch_shapes = pl.read_ipc(io.BytesIO(kept["table.arrow"]))
            if self._launch_shapes is None:
                ops = self.events["launch_op_id"].drop_nulls().unique().sort().to_list()
                self._launch_shapes = self.shapes(ops)
                self.parts.put(LAUNCH_SHAPES, {"table.arrow": _ipc(self._launch_shapes)})
            return self._launch_shapes

    def args_json(self) -> pl.Series:
        """Every X event's complete args as JSON text (as written), aligned with ``events`` rows."""
        raws = self.raw_args.raw(self.events["id"].to_list())
        texts = [bytes(raw).decode("utf-8", "replace") if raw else None for raw in raws]
        return clean_series(pl.Series("args", texts, dtype=pl.String))

    def event_args(self, event_id: int) -> dict[str, Any]:
        """Every arg of one event as written (unknown keys included), control chars cleaned."""
        raw = self.raw_args.raw([event_id])[0]
        if not raw:
            return {}
        try:
            value = msgspec.json.decode(raw)
        except msgspec.MsgspecError:  # valid JSON msgspec refuses (1e400, read by the scanner)
            try:
                value = msgspec.json.decode(repair.patch_known_defects(bytes(raw))[0])
            except msgspec.MsgspecError:
                return {}
        return clean_value(value) if isinstance(value, dict) else {"args": clean_value(value)}


def _ipc(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_ipc(buffer, compression="zstd")
    return buffer.getvalue()


SHAPES_DECODER = msgspec.json.Decoder(list[ShapeArgs])
NO_SHAPES = ShapeArgs()


def _parse_shapes(raws: Sequence[msgspec.Raw]) -> list[ShapeArgs]:
    """Shapes of many events in one decode; per event when some args are not objects."""
    try:
        return SHAPES_DECODER.decode(b"[" + b",".join(r if r else b"{}" for r in raws) + b"]")
    except msgspec.MsgspecError:
        return [_parse_one(r) for r in raws]


def _parse_one(raw: msgspec.Raw) -> ShapeArgs:
    try:
        return SHAPE_DECODER.decode(raw) if raw else NO_SHAPES
    except msgspec.MsgspecError:
        return NO_SHAPES


def _devices_of_work(events: pl.DataFrame, gpu: pl.DataFrame) -> list[dict[str, Any]]:
    """Devices seen in device work (``args.device``, else its lane's numeric pid), named by the
    accelerator whose runtime launched it (``MTIA 0``) where that is not CUDA's."""
    calls = events.select(pl.col("id").alias("launch_id"), pl.col("cat").alias("call_cat"))
    work = (
        gpu.select(pl.coalesce("device", pl.col("pid").cast(pl.Int64, strict=False)).alias("id"), "launch_id")
        .drop_nulls("id")
        .join(calls, on="launch_id", how="left")
    )
    kind = pl.col("call_cat").replace_strict(ACCELERATOR_OF_CALL, default=None, return_dtype=pl.String)
    named = work.group_by("id").agg(kind.drop_nulls().mode().first().alias("kind")).sort("id")
    return [{"id": i, "name": None if k is None else f"{k} {i}"} for i, k in named.iter_rows()]


def _visible_parents(events: pl.DataFrame, hide_python: bool) -> pl.DataFrame:
    tree = events.select("id", "parent", "track", "pos", "cat").filter(pl.col("pos").is_not_null())
    tree = tree.sort("track", "pos")
    if not hide_python:
        return tree.select("id", "parent")
    from tracetui.trace.nesting import ancestor_ids

    tree = tree.with_columns(parent_pos=_positions(tree))
    shown = ancestor_ids(tree, pl.col("cat") != "python_function", include_self=False)
    return tree.with_columns(parent=shown).filter(pl.col("cat") != "python_function").select("id", "parent")


def _positions(tree: pl.DataFrame) -> pl.Series:
    """Row index of each row's parent within ``tree`` (-1 for roots)."""
    index = tree.select(pl.col("id").alias("parent"), pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    return tree.join(index, on="parent", how="left", maintain_order="left")["row"].fill_null(-1)
