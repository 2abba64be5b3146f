"""The trace model: polars tables plus the facts about the file they came from.

The model does no I/O: the loader builds it and hands it what it may need later, a
:class:`~tracetui.trace.args.RawArgs` provider for the args that are not columns and a
:class:`PartStore` that keeps what it computes after load (the loader's cache entry). A trace
from the cache reads each of its tables on first use, from the loader's :class:`TableSource`, and
so does a trace just loaded for the tables the load kept on disk (:mod:`tracetui.trace.spill`).

What a trace is made of is declared here once: :data:`TABLES` and :data:`FACTS` (what a cache
stores: :meth:`Trace.stored_tables`, :meth:`Trace.stored_facts`, :meth:`Trace.restored`).
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, BinaryIO, Protocol, overload

import msgspec
import polars as pl

from tracetui.errors import TraceError
from tracetui.safetext import clean_value
from tracetui.trace import repair, stats
from tracetui.trace.align import lookup
from tracetui.trace.args import NO_ARGS, RawArgs
from tracetui.trace.categories import ACCELERATOR_OF_CALL, GPU_KIND, GPU_WORK
from tracetui.trace.layout import FACTS, MODEL_TABLES
from tracetui.trace.nesting import ancestor_ids, rows_in_preorder
from tracetui.trace.schema import SHAPE_KEYS
from tracetui.trace.text import clean_series

# The tables that make a trace, and its facts (plain JSON values): what a cache stores (their
# columns and types: tracetui.trace.layout).
TABLES = MODEL_TABLES
LAUNCH_SHAPES = "table:launch_shapes"  # the part that keeps :attr:`Trace.launch_shapes`
COST_SHAPES = ("input_dims", "input_type", "concrete_inputs")  # the recorded shapes an op's cost reads
DEVICES = "facts:devices"  # the part that keeps :attr:`Trace.devices`


class TableSource(Protocol):
    """Where a trace keeps tables it has not read yet (``names``): a cache entry, the load's file of
    tables kept aside (:mod:`tracetui.trace.spill`). Read through :func:`read_table` alone."""

    names: tuple[str, ...]
    files: tuple[str, ...]

    def scan(self, name: str) -> pl.LazyFrame:
        """Table ``name``: its bytes read (and checked) now, decompressed when collected, only the
        columns selected."""
        ...

    def columns(self, name: str) -> list[str]:
        """The columns of table ``name``, in order."""
        ...

    def height(self, name: str) -> int:
        """The rows of table ``name`` (none of it read)."""
        ...

    def file(self, name: str) -> BinaryIO:
        """File ``name``, open and checked (the caller closes it)."""
        ...

    def damaged(self, what: str) -> TraceError:
        """Forget the source (``what`` of it was found damaged while in use); the error to raise."""
        ...


class StoredArgs(Protocol):
    """A raw-args provider whose data a cache can keep as tables and files (the loader rebuilds it
    from them: ``loader._cached_args``), instead of reading the trace file again."""

    def tables(self) -> dict[str, pl.DataFrame]: ...

    def files(self) -> dict[str, Callable[[Path], object]]:
        """By name: a function that writes that file to the path it is given."""
        ...


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
    """A table not read yet: ``source`` holds it (read through :func:`read_table`)."""

    source: TableSource
    name: str


def read_table(source: TableSource, name: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """Table ``name`` of ``source`` (``columns``: only those, in that order; only they are
    decompressed): the one way a table that is not in memory is read, whatever holds it. Checked:
    as many rows as the source lists; a table that cannot be read is the source's one-line error."""
    lazy = source.scan(name)
    try:
        frame = (lazy if columns is None else lazy.select(columns)).collect()
    except pl.exceptions.ColumnNotFoundError:
        raise
    except pl.exceptions.PolarsError as exc:
        raise source.damaged(f"table {name}: {(str(exc).splitlines() or [''])[0]}") from None
    if frame.height != source.height(name):
        raise source.damaged(f"table {name}: {frame.height} rows, not {source.height(name)}")
    return frame


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
                    value = trace._read(self.name, keep=True)
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

    The args of some groups of events are tables of their own, one row per event of the group
    that has some (``id`` first): ``gpu_args`` (GPU work: stream, device, grid, block, …,
    collective metadata; :attr:`gpu` joins them to the GPU rows), ``call_args`` (``cbid``),
    ``op_args`` (``seq``, ``fwd_tid``), ``python_args`` (``py_id``, ``py_parent_id``) and
    ``recorded_shapes`` (every event's recorded shapes, dictionary-encoded; :meth:`shapes`).
    :meth:`event` gives one event's row with its group's args.

    ``raw_args`` reads every arg of an event as written (:meth:`event_args`, :meth:`args_json`);
    ``parts`` keeps what is computed after load (e.g. ``launch_shapes``, the summary).
    """

    path: Path
    metadata: dict[str, Any]
    format: str
    events: Stored = Stored()
    instants: Stored = Stored()
    flows: Stored = Stored()
    meta_events: Stored = Stored()
    counters: Stored = Stored()
    tracks: Stored = Stored()
    anomalies: Stored = Stored()
    gpu_args: Stored = Stored()
    call_args: Stored = Stored()
    op_args: Stored = Stored()
    python_args: Stored = Stored()
    recorded_shapes: Stored = Stored()
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
    _columns: dict[str, dict[str, pl.Series]] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:  # the tables are not read for it
        return f"Trace(path={str(self.path)!r}, format={self.format!r}, from_cache={self.from_cache})"

    # ---- what a cache stores ----------------------------------------------------------
    def stored_tables(self) -> Mapping[str, pl.DataFrame]:
        """The tables that rebuild this trace (:data:`TABLES`, and its raw-args provider's when it
        is a :class:`StoredArgs`), by name. Each is got when asked for: one not read yet (a load
        keeps its flows and recorded shapes on disk) is read for the asker, not kept, so a writer
        that lets each table go once written holds one at a time."""
        kept = getattr(self.raw_args, "tables", None)
        return _TablesOf(self, kept() if callable(kept) else {})

    def stored_files(self) -> dict[str, Callable[[Path], object]]:
        """The files that rebuild this trace with its tables (its raw-args provider's when it is a
        :class:`StoredArgs`), by name: each a function that writes it to the path it is given."""
        kept = getattr(self.raw_args, "files", None)
        return kept() if callable(kept) else {}

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

    def read_once(self, table: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """Table ``table`` (``columns``: only those), read for this caller if it is not read yet,
        and not kept: for a question asked once (a load keeps some tables on disk,
        :mod:`tracetui.trace.spill`; they stay there)."""
        return self._read(table, columns)

    def columns_of(self, table: str, *names: str) -> pl.DataFrame:
        """Only ``names`` of ``table``: for a trace from the cache whose table is not read yet,
        only these columns are read (and kept for later questions and the whole table), so the
        explorer's first frame of a big trace needs a fraction of its events table."""
        return self._read(table, names, keep=True)

    def column(self, table: str, name: str) -> pl.Series:
        """One column of ``table`` (as :meth:`columns_of`)."""
        value = self.__dict__[table]
        if not isinstance(value, Unread):  # the common case, asked often: no frame made for it
            return value[name]  # type: ignore[no-any-return]
        return self._read(table, (name,), keep=True).to_series()

    def height(self, table: str) -> int:
        """Rows of ``table`` (a trace from the cache reads none of it)."""
        value = self.__dict__[table]
        if not isinstance(value, Unread):
            return len(value)  # type: ignore[arg-type]
        return value.source.height(table)

    def _read(self, table: str, columns: Sequence[str] | None = None, keep: bool = False) -> pl.DataFrame:
        """Table ``table`` (``columns``: only those, in that order): every read of a table goes
        here. One not read yet is read from its source (:func:`read_table`), only the columns not
        read before (:meth:`columns_of` keeps them). ``keep``: what is read is kept, the whole table
        in place of its source from then on; else it is read for this caller alone."""
        with self._lock:
            value = self.__dict__[table]
            if not isinstance(value, Unread):
                return value if columns is None else value.select(columns)  # type: ignore[no-any-return]
            if not keep:
                have = dict(self._columns.get(table, {}))
            else:  # read under the lock: a second reader finds it kept
                have = self._columns.setdefault(table, {})
                frame = _with_columns(value, columns, have)
                if columns is None:
                    self.__dict__[table] = frame
                    del self._columns[table]
                else:
                    have.update((column.name, column) for column in frame.get_columns())
                return frame
        return _with_columns(value, columns, have)

    # ---- basic facts -------------------------------------------------------------
    @property
    def event_count(self) -> int:
        """Events of every phase read from the file."""
        phases = sum(self.height(name) for name in ("events", "instants", "flows", "meta_events", "counters"))
        return phases + sum(self.other_phases.values())

    @cached_property
    def t0_ns(self) -> int:
        """Start of the earliest event: time zero for display."""
        start = self.column("events", "start_ns").min()
        return int(start) if start is not None else 0  # type: ignore[arg-type]

    @cached_property
    def devices(self) -> list[dict[str, Any]]:
        """GPUs: ``deviceProperties`` entries, plus devices seen only in GPU events (kept in the
        parts: the explorer's header on a reopen reads no events for them)."""
        kept = self.parts.get(DEVICES)
        if kept is not None:
            with contextlib.suppress(msgspec.MsgspecError, KeyError):
                return msgspec.msgpack.decode(kept["devices.msgpack"], type=list[dict[str, Any]])
        devices = self._devices()
        self.parts.put(DEVICES, {"devices.msgpack": msgspec.msgpack.encode(devices)})
        return devices

    def _devices(self) -> list[dict[str, Any]]:
        props = self.metadata.get("deviceProperties")
        devices = [dict(d) for d in (props if isinstance(props, list) else []) if isinstance(d, dict)]
        for device in devices:  # a name is text, an id a number or text; anything else is dropped
            if not isinstance(device.get("name"), str | None):
                device["name"] = str(device["name"])
            if not isinstance(device.get("id"), int | str | None):
                device["id"] = None
        known = {d.get("id") for d in devices}
        return devices + [d for d in self._devices_of_work() if d["id"] not in known]

    def _devices_of_work(self) -> list[dict[str, Any]]:
        """Devices seen in device work (``args.device``, else its lane's numeric pid), named by the
        accelerator whose runtime launched it (``MTIA 0``) where that is not CUDA's. Reads the
        events' ids and categories, and their pids or launch links only when some device work
        lacks a device or some call is another accelerator's."""
        events = self.columns_of("events", "id", "cat")
        cats = events["cat"]
        rows = cats.is_in(list(GPU_KIND)).arg_true()
        args = self.columns_of("gpu_args", "id", "device")
        device = lookup(args, events["id"].gather(rows), "device")["device"]
        if device.null_count():
            pid = self.column("events", "pid").gather(rows).cast(pl.String).cast(pl.Int64, strict=False)
            device = device.fill_null(pid.cast(device.dtype, strict=False))
        kind = pl.repeat(None, len(rows), dtype=pl.String, eager=True)
        if cats.is_in(list(ACCELERATOR_OF_CALL)).any():
            launch = self.column("events", "launch_id").gather(rows)
            call = lookup(events, launch, "cat")["cat"].cast(pl.String)
            kind = call.replace_strict(ACCELERATOR_OF_CALL, default=None, return_dtype=pl.String)
        work = pl.DataFrame({"id": device, "kind": kind}).drop_nulls("id")
        # the kind most of a device's work has
        named = work.group_by("id").agg(stats.most_common(pl.col("kind").drop_nulls())).sort("id")
        return [{"id": i, "name": None if k is None else f"{k} {i}"} for i, k in named.iter_rows()]

    # ---- views ---------------------------------------------------------------------
    @cached_property
    def gpu(self) -> pl.DataFrame:
        """GPU events (kernels, memcpys, memsets, syncs) with their launch links and args."""
        return self._with_gpu_args(self.events.filter(pl.col("cat").is_in(list(GPU_KIND))))

    def _with_gpu_args(self, rows: pl.DataFrame) -> pl.DataFrame:
        """GPU event rows with their args (``gpu_args``, sorted by id as every args table: found by a
        sorted lookup, not a hash join)."""
        args = self.gpu_args
        return pl.concat([rows, lookup(args, rows["id"], *args.columns[1:])], how="horizontal")

    @cached_property
    def orphans(self) -> pl.DataFrame:
        """GPU work with no runtime call in the trace (read from :attr:`gpu` once that is built)."""
        orphan = pl.col("cat").is_in(GPU_WORK) & pl.col("launch_id").is_null()
        if "gpu" in self.__dict__:
            return self.gpu.filter(orphan)
        return self._with_gpu_args(self.events.filter(orphan))

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
        return stats.span_work(self._span_events)

    @cached_property
    def span_threads(self) -> pl.DataFrame:
        """That work per span and launching thread (the split: "358 here + 666 on pt_autograd_0")."""
        return stats.span_threads(self.span_work, self._span_events, self.tracks)

    @cached_property
    def annotation_instances(self) -> pl.DataFrame:
        return stats.annotation_instances(self._span_events, self.span_work)

    @cached_property
    def annotations(self) -> pl.DataFrame:
        return stats.per_call_table(self.annotation_instances)

    @cached_property
    def step_instances(self) -> pl.DataFrame:
        return stats.step_instances(self._span_events, self.span_work)

    @cached_property
    def span_counts(self) -> pl.DataFrame:
        """Per step and annotation instance: the counts of ``step_instances`` and
        ``annotation_instances`` without busy time and gaps (the tree's rows)."""
        return stats.span_counts(self._span_events, self.span_work)

    @cached_property
    def _span_events(self) -> pl.DataFrame:
        """The events' columns that steps and annotations are counted from (:data:`stats.SPAN_COLUMNS`;
        a trace from the cache reads only these), with ``pid`` a number per process (from the track:
        a gather, not the text column)."""
        events = self.columns_of("events", *stats.SPAN_COLUMNS)
        tracks = self.tracks.select(pl.col("track").cast(pl.Int32), "pid")
        size = len(tracks) and int(tracks["track"].max()) + 1  # type: ignore[arg-type]
        process = pl.Series("pid", [0] * size, dtype=pl.UInt32)
        process = process.scatter(tracks["track"], tracks["pid"].rank("dense").cast(pl.UInt32))
        return events.with_columns(process.gather(events["track"]).alias("pid"))

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
                cached = _visible_parents(self.columns_of("events", *_TREE_COLUMNS), hide_python)
                self._parents[key] = cached
        return cached

    def row(self, event_id: int) -> int:
        """Row of an event id (a file position) in ``events``; KeyError if it is not an X event."""
        ids = self.column("events", "id")
        row: int = ids.search_sorted(event_id)  # type: ignore[assignment]
        if not 0 <= event_id < 1 << 32 or row >= len(ids) or ids[row] != event_id:
            raise KeyError(event_id)
        return row

    def lookup(self, ids: pl.Series, *columns: str) -> pl.DataFrame:
        """``columns`` of the events whose id is each of ``ids`` (null where none): what a left
        join on ``events`` gives, without hashing the whole events table."""
        return lookup(self.events, ids, *columns)

    def event(self, event_id: int) -> dict[str, Any]:
        """One event's row as a dict, with the args of its group (null where it has none)."""
        return self.events.row(self.row(event_id), named=True) | self.group_args(event_id)

    def group_args(self, event_id: int) -> dict[str, Any]:
        """The args tables' columns (``gpu_args``, ``call_args``, ``op_args``, ``python_args``) for
        one event: its values, null where it has none."""
        out: dict[str, Any] = {}
        for table in (self.gpu_args, self.call_args, self.op_args, self.python_args):
            ids = table["id"]  # sorted: the tables are in event order
            at = ids.search_sorted(event_id)
            found = at < len(ids) and ids[at] == event_id
            values = table.row(at, named=True) if found else dict.fromkeys(table.columns)
            out |= {name: value for name, value in values.items() if name != "id"}
        return out

    def group_values(self, table: str, event_id: int, *names: str) -> dict[str, Any]:
        """Columns ``names`` of one args table (``gpu_args``, …) for one event (null where it has
        none): :meth:`group_args` for a few columns, reading only those."""
        ids = self.column(table, "id")  # sorted: the tables are in event order
        at = ids.search_sorted(event_id)
        found = at < len(ids) and ids[at] == event_id
        return {name: self.column(table, name)[at] if found else None for name in names}

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
    def shapes(self, ids: Sequence[int] | None = None, keep: bool = False) -> pl.DataFrame:
        """Recorded shapes of events, as written (JSON text): ``id``, ``input_dims``,
        ``input_type``, ``input_strides``, ``concrete_inputs``, one row per id (null: none
        recorded). Default: every ``cpu_op``. Read at load (``recorded_shapes``, dictionary-
        encoded); text here. ``keep``: keep the recorded shapes in memory once read (a caller
        that asks many times: an export's parts), else they are read for this question alone.
        """
        if ids is None:
            wanted = self.events.filter(pl.col("cat") == "cpu_op").select("id")
        else:
            wanted = pl.Series("id", [i for i in ids if i is not None], dtype=pl.UInt32).to_frame()
        recorded = self.recorded_shapes if keep else self.read_once("recorded_shapes")
        found = wanted.join(recorded, on="id", how="left", maintain_order="left")
        return found.with_columns(pl.col(name).cast(pl.String) for name in SHAPE_KEYS)

    @property
    def launch_shapes(self) -> pl.DataFrame:
        """Shapes of the ops that launched GPU work (what FLOPs and bytes need), kept once read."""
        with self._lock:
            if self._launch_shapes is None and (kept := self.parts.get(LAUNCH_SHAPES)) is not None:
                self._launch_shapes = pl.read_ipc(io.BytesIO(kept["table.arrow"]))
            if self._launch_shapes is None:
                ops = self.column("events", "launch_op_id").drop_nulls().unique().sort().alias("id")
                # dictionary-encoded as recorded: one row per launching op, the same few shapes
                # read for this alone where the load kept them on disk: the shapes are kept by op
                shapes = self.read_once("recorded_shapes", ("id", *COST_SHAPES))
                found = lookup(shapes, ops, *COST_SHAPES)  # no hash join
                del shapes
                self._launch_shapes = pl.concat([ops.to_frame(), found], how="horizontal")
                if self.parts is not NO_PARTS:  # nowhere to keep it: not serialised
                    self.parts.put(LAUNCH_SHAPES, {"table.arrow": _ipc(self._launch_shapes)})
            return self._launch_shapes

    def args_json(self, ids: pl.Series | None = None) -> pl.Series:
        """Every X event's complete args as JSON text (as written), aligned with ``events`` rows;
        ``ids``: those events' only, in that order."""
        raws = self.raw_args.raw((self.events["id"] if ids is None else ids).to_list())
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


def _with_columns(unread: Unread, columns: Sequence[str] | None, have: dict[str, pl.Series]) -> pl.DataFrame:
    """``columns`` of an unread table (None: all), ``have`` (read before) reused, the rest read."""
    wanted = unread.source.columns(unread.name) if columns is None else list(columns)
    rest = [column for column in dict.fromkeys(wanted) if column not in have]
    whole = columns is None and not have
    read = read_table(unread.source, unread.name, None if whole else rest) if rest else pl.DataFrame()
    if rest == wanted:
        return read
    return pl.DataFrame([have[column] if column in have else read[column] for column in wanted])


class _TablesOf(Mapping[str, pl.DataFrame]):
    """:meth:`Trace.stored_tables`: each table got when asked for (:meth:`Trace.read_once`)."""

    def __init__(self, trace: Trace, extra: Mapping[str, pl.DataFrame]) -> None:
        self._trace = trace
        self._extra = extra
        self._names = (*TABLES, *(name for name in extra if name not in TABLES))

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name in self._extra:
            return self._extra[name]
        if name not in TABLES:
            raise KeyError(name)
        return self._trace.read_once(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _ipc(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_ipc(buffer, compression="zstd")
    return buffer.getvalue()


_TREE_COLUMNS = ("id", "parent", "pos", "cat")


def _visible_parents(events: pl.DataFrame, hide_python: bool) -> pl.DataFrame:

    kept = ("id", "parent") if not hide_python else ("id", "parent", "cat")
    tree = events.select(kept)[rows_in_preorder(events["pos"])]
    if not hide_python:
        return tree
    tree = tree.with_columns(parent_pos=_positions(tree))
    shown = ancestor_ids(tree, pl.col("cat") != "python_function", include_self=False)
    return tree.with_columns(parent=shown).filter(pl.col("cat") != "python_function").select("id", "parent")


def _positions(tree: pl.DataFrame) -> pl.Series:
    """Row index of each row's parent within ``tree`` (-1 for roots)."""
    index = tree.select(pl.col("id").alias("parent"), pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    return tree.join(index, on="parent", how="left", maintain_order="left")["row"].fill_null(-1)
