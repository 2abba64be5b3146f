"""The dispatch-chain tree as plain data: which node shows under which, and what its row says.

Pure (no widgets): everything is computed from a :class:`~tracetui.trace.Trace` with polars
and answered lazily, so a 200k-event trace costs a few vectorised passes up front and then
O(log n) per question.

Top level. With ``ProfilerStep#N`` spans: one node per step (always top level, never nested
under the python frames that enclose it), holding the step's subtree on its own thread plus one
synthetic *thread* node per other thread with work in that step (backward ops run on
``pt_autograd_N``, outside the main thread's step span; ``step_id`` says which step they belong
to); everything else under *outside steps*, one thread node per thread. Without steps: one
thread node per thread. GPU work hangs under the runtime/driver call that launched it
(``launch_id``); work with no call in the trace under *orphan GPU work*.

Node keys are event ids (``int``) or tuples for the synthetic nodes:
``("thread", step_id | None, track)``, ``("outside",)``, ``("orphans",)``.

The default tree keeps its first frame in the trace's parts (:meth:`TreeModel.first_frame`,
:mod:`tracetui.views.tree_frame`): a reopen from the cache answers the first frame's questions from
it and reads the events only for the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl

from tracetui.insight.kernel_names import decode_kernel_name, kernel_name_columns
from tracetui.insight.spans import thread_splits
from tracetui.trace.align import lookup, rows_of
from tracetui.trace.categories import GPU_KIND, GPU_WORK, LAUNCH_CALLS
from tracetui.trace.links import is_step
from tracetui.trace.model import NoParts
from tracetui.views import tree_frame

if TYPE_CHECKING:
    from tracetui.trace import Trace

SyntheticKey = tuple[Any, ...]
NodeKey = int | SyntheticKey

OUTSIDE: SyntheticKey = ("outside",)
ORPHANS: SyntheticKey = ("orphans",)

GPU_KINDS = frozenset(GPU_KIND.values())
EVALUATE_FUNCTION = "autograd::engine::evaluate_function:"  # the engine's wrapper of a backward node
# The kind of an event's node, by category; a ProfilerStep#N (``links.is_step``) is a "step".
EVENT_KINDS = {
    **GPU_KIND,
    "user_annotation": "annotation",
    "cpu_op": "op",
    "python_function": "python",
    **dict.fromkeys(LAUNCH_CALLS, "call"),
}
KIND = pl.Enum(sorted({*EVENT_KINDS.values(), "step", "cpu"}))

_EVENT_COLUMNS = (
    "id",
    "cat",
    "name",
    "dur",
    "gpu_us",
    "gpu_events",
    "kernels",
    "memcpys",
    "memsets",
    "track",
    "step_id",
    "start_ns",
    "end_ns",
    "launch_id",
)


@dataclass(frozen=True)
class TreeOptions:
    """What the tree shows: python frames, only kernel launchers, a name filter."""

    hide_python: bool = False
    kernels_only: bool = False
    name_filter: str = ""

    def describe(self) -> list[str]:
        """Short words for the active filters (empty when none)."""
        words = []
        if self.hide_python:
            words.append("python hidden")
        if self.kernels_only:
            words.append("kernel launchers only")
        if self.name_filter:
            words.append(f"name ~ {self.name_filter!r}")
        return words


@dataclass(frozen=True, slots=True)
class Node:
    """What one tree row says. Times in µs; ``None`` where a value does not apply."""

    key: NodeKey
    kind: str
    name: str
    full_name: str
    cpu_us: float | None
    gpu_us: float | None
    kernels: int | None
    gpu_events: int | None
    event_id: int | None = None
    device: int | None = None
    stream: int | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    no_kernel: bool = False
    memcpys: int | None = None
    memsets: int | None = None

    @property
    def is_gpu(self) -> bool:
        return self.kind in GPU_KINDS

    @property
    def where(self) -> str:
        """``GPU 0 · stream 7`` for GPU work, else empty."""
        if not self.is_gpu:
            return ""
        device = "?" if self.device is None else self.device
        stream = "?" if self.stream is None else self.stream
        return f"GPU {device} · stream {stream}"


@lru_cache(maxsize=4096)
def short_kernel_name(name: str) -> str:
    """The decoded short form of a kernel name for tree labels (the full name stays in details)."""

    return decode_kernel_name(name).short


class TreeModel:
    """The tree for one trace under one set of :class:`TreeOptions`. Immutable; rebuild to refilter."""

    def __init__(self, trace: Trace, options: TreeOptions | None = None) -> None:
        self.trace = trace
        self.options = options or TreeOptions()
        self._lock = threading.RLock()
        self._shape: _Shape | None = None
        self._node_cache: dict[NodeKey, Node] = {}
        self._splits: dict[int, str] | None = None
        self._shorts: dict[str, str] | None = None
        # The default tree of a trace that kept its first frame (a reopen from the cache): the
        # structure and the first frame's rows from that part; the events are read on demand.
        kept = tree_frame.read(trace.parts, Node) if self.options == TreeOptions() else None
        self._first: tree_frame.Rows | None = None
        if kept is None:
            frame = self._build(trace)
        else:
            frame, self._first = kept
        self._frame = frame
        self.has_gpu = frame.has_gpu
        self.step_ids = frame.step_ids
        self._step_set = frozenset(self.step_ids)
        self._launched = _Index(frame.launched["launch_id"], frame.launched["id"])
        self._gpu_ids = frame.launched["id"]
        self._orphans = frame.orphans
        self._orphan_set = frozenset(self._orphans)
        self._track_names = frame.track_names
        self._thread_roots = frame.thread_roots
        self._thread_stats = frame.thread_stats
        self._spans = frame.spans
        self._visible_steps = frame.visible_steps
        self._profiler_tracks = frame.profiler_tracks
        self._step_threads: dict[int, list[SyntheticKey]] = {}
        outside: list[SyntheticKey] = []
        for key in self._thread_roots:
            if key[1] is None:
                outside.append(key)
            else:
                self._step_threads.setdefault(key[1], []).append(key)
        tops: list[NodeKey] = []
        if self.step_ids:
            tops += [s for s in self.step_ids if self._step_shown(s)]
            if outside:
                tops.append(OUTSIDE)
        else:
            tops += outside
        if self._orphans:
            tops.append(ORPHANS)
        self._outside = outside
        self._tops = tops

    def _build(self, trace: Trace) -> tree_frame.Frame:
        """The tree's structure, computed from the events."""
        # only the columns the tree needs (a trace from the cache reads no others)
        events = trace.columns_of("events", "id", "cat", "pos", "start_ns", "track", "step_id", "launch_id")
        has_gpu = bool(events["cat"].is_in(GPU_WORK).any())
        annotations = (events["cat"] == "user_annotation").arg_true()  # few rows for the name test
        steps = events[annotations].with_columns(trace.column("events", "name")[annotations].cast(pl.String))
        steps = steps.filter(is_step() & pl.col("pos").is_not_null()).sort("start_ns")
        step_ids: list[int] = steps["id"].to_list()
        step_set = frozenset(step_ids)
        kept_cpu, kept_gpu = self._kept(trace, self.options)
        # The CPU structure: with every CPU event shown as nested, read from the events' preorder
        # (nothing sorted or copied per event up front); under filters, sorted indexes
        shape: _Shape = (
            _Preorder(trace, step_set)
            if kept_cpu is None
            else _Filtered(trace, kept_cpu, self.options.hide_python, step_set)
        )
        self._shape = shape
        roots = shape.roots
        gpu = kept_gpu.filter(pl.col("launch_id").is_not_null()).sort("launch_id", "start_ns", "id")
        orphans = kept_gpu.filter(pl.col("launch_id").is_null())
        orphans = orphans.join(events.select("id", "cat"), on="id").filter(pl.col("cat").is_in(GPU_WORK))
        orphans = orphans.sort("start_ns", "id")
        thread_roots: dict[SyntheticKey, list[int]] = {}
        for (step_id, track), ids in _grouped_roots(roots, bool(step_ids)):
            thread_roots[("thread", step_id, track)] = ids
        thread_stats = _sum_stats(roots, trace, bool(step_ids))
        thread_stats.update(_step_threads(trace, thread_stats, step_ids))
        return tree_frame.Frame(
            has_gpu=has_gpu,
            step_ids=step_ids,
            launched=gpu.select("launch_id", "id"),
            orphans=orphans["id"].to_list(),
            track_names=_track_names(trace),
            thread_roots=thread_roots,
            thread_stats=thread_stats,
            spans=_span_totals(trace),
            visible_steps=shape.visible_among(step_ids),
            profiler_tracks=_profiler_tracks(events),
        )

    @property
    def _cpu(self) -> _Shape:
        """The CPU events shown and how they nest (a tree from a kept first frame: built on first use)."""
        shape = self._shape
        if shape is None:
            with self._lock:
                if self._shape is None:
                    self._shape = _Preorder(self.trace, self._step_set, with_roots=False)
                shape = self._shape
        return shape

    def warm(self) -> None:
        """Build now what a first frame drawn from the kept one did not need (the CPU structure,
        the rows' columns): called off the UI thread once it is drawn, so keys do not wait."""
        if self._first is not None:
            self.trace.columns_of("events", *_EVENT_COLUMNS, "pos", "end_pos")
            self._cpu  # noqa: B018 (built)

    def first_frame(self) -> list[NodeKey]:
        """:meth:`hottest_path`, the chain the explorer opens on. The default tree keeps its first
        frame in the trace's parts (the structure, and the rows shown with that chain expanded),
        so that a reopen from the cache draws it without reading the events."""
        path = self.hottest_path()
        keeps = not isinstance(self.trace.parts, NoParts)
        if self._first is None and self.options == TreeOptions() and keeps:
            tree_frame.write(self.trace.parts, self._frame, self._first_rows(path))
        return path

    def _first_rows(self, path: list[NodeKey]) -> tree_frame.Rows:
        """What the first frame shows: the top nodes and the children of the chain's nodes but its
        last (the nodes of the first :data:`tree_frame.MAX_ROWS` rows: the rest are read on demand)."""
        kids = {key: self.children(key) for key in path[:-1]}
        head = list(dict.fromkeys([*self._tops, *path]))  # always kept
        keys = list(dict.fromkeys([*head, *(kid for row in kids.values() for kid in row)]))
        keys = keys[: max(tree_frame.MAX_ROWS, len(head))]
        self._cache_nodes(keys)
        return tree_frame.Rows(
            path=list(path),
            nodes={key: self.node(key) for key in keys},
            has_children=self._has_children_of(keys),
            children=kids,
            steps={key: self.step_of(key) for key in keys},
        )

    # ---- filters -------------------------------------------------------------------------
    @staticmethod
    def _kept(trace: Trace, options: TreeOptions) -> tuple[pl.DataFrame | None, pl.DataFrame]:
        """``(id)`` of the CPU events (None: every one, as nested, python frames included) and
        ``(id, launch_id, start_ns)`` of the GPU rows to show."""
        if not (options.kernels_only or options.name_filter):  # every CPU event, the GPU work they launched
            events = trace.columns_of("events", "id", "cat", "pos", "launch_id", "start_ns")
            gpu = events.filter(pl.col("cat").is_in(list(GPU_KIND))).select("id", "launch_id", "start_ns")
            shown = lookup(events, gpu["launch_id"], "pos")["pos"].is_not_null() | gpu["launch_id"].is_null()
            if not options.hide_python:
                return None, gpu.filter(shown)
            cpu = events.lazy().filter(pl.col("pos").is_not_null()).select("id").collect()
            return cpu, gpu.filter(shown)
        events = trace.events
        cpu = events.select("id", "pos", "end_pos", "gpu_events", "name").filter(pl.col("pos").is_not_null())
        gpu = trace.gpu.select("id", "launch_id", "start_ns", "name")
        if options.kernels_only:
            cpu = cpu.filter(pl.col("gpu_events") > 0)
        if options.name_filter:
            needle = options.name_filter.lower()
            gpu_hit = gpu.filter(
                pl.col("name").cast(pl.String).str.to_lowercase().str.contains(needle, literal=True)
            )
            hit = pl.col("name").cast(pl.String).str.to_lowercase().str.contains(
                needle, literal=True
            ) | pl.col("id").is_in(gpu_hit["launch_id"].drop_nulls().implode())
            below, covered = _subtree_hits(events.filter(pl.col("pos").is_not_null()), hit)
            keep = cpu.join(below, on="id").join(covered, on="id")
            cpu = keep.filter((pl.col("below") > 0) | pl.col("covered")).select(cpu.columns)
            call_covered = covered.rename({"id": "launch_id", "covered": "call_covered"})
            gpu = (
                gpu.join(call_covered, on="launch_id", how="left")
                .filter(
                    pl.col("name").cast(pl.String).str.to_lowercase().str.contains(needle, literal=True)
                    | pl.col("call_covered").fill_null(False)
                )
                .drop("call_covered")
            )
        gpu = gpu.join(cpu.select(pl.col("id").alias("launch_id")), on="launch_id", how="semi").vstack(
            gpu.filter(pl.col("launch_id").is_null())
        )
        return cpu.select("id"), gpu.select("id", "launch_id", "start_ns")

    def _step_shown(self, step_id: int) -> bool:
        return step_id in self._visible_steps or bool(self._step_threads.get(step_id))

    # ---- structure -----------------------------------------------------------------------
    def tops(self) -> list[NodeKey]:
        """Top-level nodes in display order."""
        return list(self._tops)

    def children(self, key: NodeKey) -> list[NodeKey]:
        """Children in display order: CPU children (time order), then launched GPU work, then threads."""
        if self._first is not None and (kept := self._first.children.get(key)) is not None:
            return list(kept)
        if isinstance(key, int):
            kids: list[NodeKey] = []
            kids += self._cpu.children(key)
            kids += self._launched.of(key)
            kids += self._step_threads.get(key, [])
            return kids
        if key == OUTSIDE:
            return list(self._outside)
        if key == ORPHANS:
            return list(self._orphans)
        return list(self._thread_roots.get(key, []))

    def has_children(self, key: NodeKey) -> bool:
        """Whether ``key`` has children (cheap: no list is built)."""
        if self._first is not None and (kept := self._first.has_children.get(key)) is not None:
            return kept
        if isinstance(key, int):
            return self._cpu.has_children(key) or self._launched.has(key) or bool(self._step_threads.get(key))
        return True

    @cached_property
    def kinds(self) -> pl.Series:
        """Every event's node kind (``step``, ``op``, ``kernel``, …), row for row with ``trace.events``."""
        events = self.trace.columns_of("events", "id", "cat")
        kind = pl.col("cat").replace_strict(EVENT_KINDS, default="cpu", return_dtype=KIND)
        step = pl.col("id").is_in(pl.Series(self.step_ids, dtype=pl.UInt32).implode())
        return events.select(pl.when(step).then(pl.lit("step", KIND)).otherwise(kind)).to_series()

    def _kind(self, event_id: int, cat: str | None) -> str:
        """One event's node kind (as :attr:`kinds`)."""
        return "step" if event_id in self._step_set else EVENT_KINDS.get(cat or "", "cpu")

    def row(self, event_id: int) -> int:
        """Row of an event id in ``trace.events`` (KeyError if it is not an X event)."""
        return self.trace.row(event_id)

    def parent_of(self, event_id: int) -> int | None:
        """The visible parent event of a CPU event (``None`` for roots and hidden events)."""
        return self._cpu.parent_of(event_id)

    def _visible(self, event_id: int) -> bool:
        return self._cpu.visible(event_id)

    def path_to(self, event_id: int) -> list[NodeKey] | None:
        """Keys from a top-level node down to the event, or ``None`` if it is hidden or filtered out."""
        try:
            row = self.row(event_id)
        except KeyError:
            return None
        events = self.trace.columns_of("events", "cat", "launch_id", "step_id", "track")
        if events["cat"][row] in GPU_KIND:
            launch = events["launch_id"][row]
            if launch is None:
                return [ORPHANS, event_id] if event_id in self._orphan_set else None
            if event_id not in self._launched.of(launch):
                return None
            above = self.path_to(launch)
            return None if above is None else [*above, event_id]
        if not self._visible(event_id):
            return None
        chain: list[NodeKey] = [event_id]
        current = event_id
        while current not in self._step_set:
            parent = self.parent_of(current)
            if parent is None:
                break
            chain.append(parent)
            current = parent
        chain.reverse()
        if current in self._step_set:
            return chain if current in self._tops else None
        root_row = self.row(current)
        step_id, track = events["step_id"][root_row], events["track"][root_row]
        if not self.step_ids:
            return [("thread", None, track), *chain]
        if step_id is None:
            return [OUTSIDE, ("thread", None, track), *chain]
        return [step_id, ("thread", step_id, track), *chain]

    def path_of(self, key: NodeKey) -> list[NodeKey] | None:
        """Like :meth:`path_to`, for any key (synthetic nodes included)."""
        if isinstance(key, int):
            return self.path_to(key)
        if key in self._tops:
            return [key]
        if key[0] == "thread" and key in self._thread_roots:
            return [key[1], key] if key[1] is not None else [OUTSIDE, key]
        return None

    def walk(self, key: NodeKey) -> Iterator[NodeKey]:
        """Every node below ``key`` (preorder, iterative: safe for any depth)."""
        stack = list(reversed(self.children(key)))
        while stack:
            current = stack.pop()
            yield current
            stack.extend(reversed(self.children(current)))

    # ---- rows --------------------------------------------------------------------------------
    def node(self, key: NodeKey) -> Node:
        """The row for ``key`` (cached)."""
        cached = self._node_cache.get(key)
        if cached is None and self._first is not None:
            cached = self._first.nodes.get(key)
        if cached is None:
            if isinstance(key, int):
                row = self.row(key)
                shown = self.trace.columns_of("events", *_EVENT_COLUMNS)
                values = dict(zip(_EVENT_COLUMNS, shown.row(row), strict=True))
                cached = self._event_node(key, values | {"kind": self._kind(key, values["cat"])})
            else:
                cached = self._synthetic_node(key)
            if len(self._node_cache) > 50_000:
                self._node_cache.clear()
            self._node_cache[key] = cached
        return cached

    def _has_children_of(self, keys: list[NodeKey]) -> dict[NodeKey, bool]:
        """:meth:`has_children` of many keys: the events with no CPU event below them and no GPU
        work in one pass, the others one by one."""
        ids = pl.Series([key for key in keys if isinstance(key, int)], dtype=pl.UInt32)
        events = self.trace.columns_of("events", "id", "pos", "end_pos")
        spans = lookup(events, ids, "pos", "end_pos")
        leaf = (spans["end_pos"] - spans["pos"]).fill_null(0) <= 1
        launched = ids.is_in(self._launched.keys.implode())
        bare = set(ids.filter(leaf & ~launched).to_list()) - set(self._step_threads)
        return {key: key not in bare and self.has_children(key) for key in keys}

    def _cache_nodes(self, keys: list[NodeKey]) -> None:
        """Compute the nodes of many event keys at once (one gather, not a row read each)."""
        ids = [key for key in keys if isinstance(key, int) and key not in self._node_cache]
        if len(ids) <= 8:
            return
        shown = self.trace.columns_of("events", *_EVENT_COLUMNS)
        rows = shown[rows_of(shown, pl.Series(ids, dtype=pl.UInt32))]
        gpu = rows.filter(pl.col("cat").cast(pl.String).is_in(list(GPU_KIND)))["id"]
        places = lookup(self.trace.columns_of("gpu_args", "id", "device", "stream"), gpu, "device", "stream")
        place = dict(zip(gpu.to_list(), places.iter_rows(named=True), strict=True))
        for values in rows.iter_rows(named=True):
            key = values["id"]
            kind = self._kind(key, values["cat"])
            self._node_cache[key] = self._event_node(key, values | {"kind": kind}, place.get(key))

    def _event_node(self, event_id: int, values: dict[str, Any], place: dict[str, Any] | None = None) -> Node:
        name, kind = values["name"], values["kind"]
        if kind in GPU_KINDS:
            if place is None:
                place = self.trace.group_values("gpu_args", event_id, "device", "stream")
            return Node(
                key=event_id,
                kind=kind,
                name=self.short_name(name) if kind in ("kernel", "memcpy", "memset") else name,
                full_name=name,
                cpu_us=None,
                gpu_us=values["dur"],
                kernels=None,
                gpu_events=None,
                event_id=event_id,
                device=place["device"],
                stream=place["stream"],
                start_ns=values["start_ns"],
                end_ns=values["end_ns"],
            )
        counts = (
            values["gpu_us"],
            values["kernels"],
            values["gpu_events"],
            values["memcpys"],
            values["memsets"],
        )
        if event_id in self._spans:  # a step or annotation: the work launched while open, any thread
            counts = self._spans[event_id]
        gpu_us, kernels, gpu_events, memcpys, memsets = counts
        return Node(
            key=event_id,
            kind=kind,
            name=name,
            full_name=name,
            cpu_us=values["dur"],
            gpu_us=max(gpu_us, 0.0),
            kernels=kernels,
            gpu_events=gpu_events,
            event_id=event_id,
            start_ns=values["start_ns"],
            end_ns=values["end_ns"],
            no_kernel=self.has_gpu and gpu_events == 0,
            memcpys=memcpys,
            memsets=memsets,
        )

    def _synthetic_node(self, key: SyntheticKey) -> Node:
        if key == ORPHANS:
            events = self.trace.columns_of("events", "id", "cat", "dur", "start_ns", "end_ns")
            rows = events.filter(pl.col("id").is_in(self._orphans))
            kernels = int((rows["cat"] == "kernel").sum())
            return Node(
                key=key,
                kind="orphans",
                name="orphan GPU work (no launch call in the trace)",
                full_name="orphan GPU work",
                cpu_us=None,
                gpu_us=float(rows["dur"].sum()),
                kernels=kernels,
                gpu_events=len(rows),
                start_ns=rows["start_ns"].min(),  # type: ignore[arg-type]
                end_ns=rows["end_ns"].max(),  # type: ignore[arg-type]
            )
        if key == OUTSIDE:
            stats = [self._thread_stats.get(t, (0.0, 0.0, 0, 0)) for t in self._outside]
            spans = [self._thread_span(t) for t in self._outside]
            return Node(
                key=key,
                kind="outside",
                name="outside steps",
                full_name="events outside every ProfilerStep",
                cpu_us=sum(s[0] for s in stats),
                gpu_us=sum(s[1] for s in stats),
                kernels=sum(s[2] for s in stats),
                gpu_events=sum(s[3] for s in stats),
                start_ns=min((s[0] for s in spans if s[0] is not None), default=None),
                end_ns=max((s[1] for s in spans if s[1] is not None), default=None),
                no_kernel=self.has_gpu and not any(s[3] for s in stats),
            )
        cpu_us, gpu_us, kernels, gpu_events = self._thread_stats.get(key, (0.0, 0.0, 0, 0))
        name = self._track_names.get(key[2], f"track {key[2]}")
        start, end = self._thread_span(key)
        return Node(
            key=key,
            kind="thread",
            name=name,
            full_name=name,
            cpu_us=cpu_us,
            gpu_us=gpu_us,
            kernels=kernels,
            gpu_events=gpu_events,
            start_ns=start,
            end_ns=end,
            no_kernel=self.has_gpu and gpu_events == 0,
        )

    def _thread_span(self, key: SyntheticKey) -> tuple[int | None, int | None]:
        ids = self._thread_roots.get(key, [])
        if not ids:
            return None, None
        first, last = self.node(ids[0]), self.node(ids[-1])
        return first.start_ns, last.end_ns

    def label(self, key: NodeKey) -> str:
        """The plain text a row shows for ``key`` (its name)."""
        return self.node(key).name

    def step_of(self, key: NodeKey) -> int | None:
        """The ``ProfilerStep#N`` event a node belongs to (``None`` outside steps)."""
        if isinstance(key, tuple):
            return key[1] if key[0] == "thread" else None
        if key in self._step_set:
            return key
        if self._first is not None and key in self._first.steps:
            return self._first.steps[key]
        row = self.row(key)
        events = self.trace.columns_of("events", "step_id", "launch_id")
        step = events["step_id"][row]
        launch = events["launch_id"][row]
        if step is None and launch is not None:
            step = events["step_id"][self.row(launch)]
        return step

    def short_name(self, name: str) -> str:
        """A GPU work name's short form, told apart from the trace's other names that decode alike
        (``layer_norm bwd [GammaBetaBackwardCUDAKernelTemplate]``): the tables' and summary's."""
        return self._gpu_shorts().get(name) or short_kernel_name(name)

    def _gpu_shorts(self) -> dict[str, str]:
        """Every GPU work name of the trace and the short form the tree shows for it."""
        if self._shorts is None:
            events = self.trace.columns_of("events", "cat", "name")  # the name may come dictionary-encoded
            names = events["name"].filter(events["cat"].is_in(list(GPU_KIND))).unique(maintain_order=True)
            self._shorts = (
                dict(kernel_name_columns(names).select("name", "short").iter_rows()) if len(names) else {}
            )
        return self._shorts

    def forward_of(self, key: NodeKey) -> int | None:
        """The forward op that created a backward op (``fwd_id``). On the autograd engine's
        ``autograd::engine::evaluate_function: XBackward0`` wrapper (where users land), that of the
        ``XBackward0`` node it evaluates."""
        if not isinstance(key, int) or self.node(key).is_gpu:
            return None
        event = self.trace.event(key)
        if event["fwd_id"] is not None or not event["name"].startswith(EVALUATE_FUNCTION):
            return event["fwd_id"]
        wanted = event["name"].removeprefix(EVALUATE_FUNCTION).strip()
        for child in self._cpu.children(key):
            child_event = self.trace.event(child)
            if child_event["fwd_id"] is not None and child_event["name"] == wanted:
                return child_event["fwd_id"]
        return None

    # ---- what a node counts ------------------------------------------------------------------
    def is_span(self, key: NodeKey) -> bool:
        """Whether ``key`` is a step or an annotation instance (not an Inductor ``## … ##`` marker):
        a node that counts the GPU work launched by any thread while it was open."""
        return isinstance(key, int) and key in self._spans

    def launched(self, key: NodeKey) -> pl.DataFrame:
        """The GPU work a node's numbers count, in time order (rows of ``trace.gpu``): for a step or
        an annotation what any thread of its process launched while it was open
        (``Trace.span_work``), for another CPU node what it and everything below it launched."""
        trace = self.trace
        if not isinstance(key, int) or self.node(key).is_gpu:
            return trace.gpu.clear()
        if self.is_span(key):
            ids = trace.span_work.filter(pl.col("span") == key).select("id")
            return trace.gpu.join(ids, on="id", how="semi").sort("start_ns", "id")
        return trace.launched_below(key)

    def thread_split(self, key: NodeKey) -> str | None:
        """For a step or annotation with kernels launched from other threads while it was open:
        ``358 here + 666 on pt_autograd_0``; else None."""
        if not isinstance(key, int) or not self.is_span(key):
            return None
        if self._splits is None:
            self._splits = dict(thread_splits(self.trace).iter_rows())
        return self._splits.get(key)

    # ---- navigation helpers ------------------------------------------------------------------
    def hottest_child(self, key: NodeKey) -> NodeKey | None:
        """The child with the most GPU time (ties and CPU-only traces: the most CPU time)."""
        kids = self.children(key)
        if not kids:
            return None
        events = [kid for kid in kids if isinstance(kid, int) and kid not in self._step_set]
        heats: dict[NodeKey, tuple[float, float]] = {}
        if len(events) > 8:  # many children: their values in one gather, not a row read each
            # an event's own gpu_us is what lies below it (a span's row counts every thread's
            # work while open, but only its own thread's is below it): :meth:`_heat_below`
            columns = self.trace.columns_of("events", "id", "cat", "dur", "gpu_us")
            found = lookup(columns, pl.Series(events, dtype=pl.UInt32), "cat", "dur", "gpu_us")
            found = found.with_columns(gpu=pl.col("cat").is_in(list(GPU_KIND))).select(
                pl.when("gpu").then("dur").otherwise(pl.col("gpu_us").clip(0.0)).fill_null(0.0),
                pl.when("gpu").then(0.0).otherwise("dur").fill_null(0.0),
            )
            heats = dict(zip(events, found.iter_rows(), strict=True))
        return max(kids, key=lambda kid: heats[kid] if kid in heats else self._heat_below(kid))

    def _heat(self, key: NodeKey) -> tuple[float, float]:
        node = self.node(key)
        return (node.gpu_us or 0.0, node.cpu_us or 0.0)

    def _heat_below(self, key: NodeKey) -> tuple[float, float]:
        """:meth:`_heat` of what lies below ``key``: a step or annotation row counts the work of every
        thread while open, but only its own thread's work is below it (the rest under thread rows)."""
        gpu, cpu = self._heat(key)
        if isinstance(key, int) and key in self._spans:
            gpu = max(float(self.trace.column("events", "gpu_us")[self.row(key)] or 0.0), 0.0)
        return (gpu, cpu)

    def hottest_path(self) -> list[NodeKey]:
        """The hottest chain from the top: the hottest step (else top node), then hottest children."""
        if self._first is not None:
            return list(self._first.path)
        tops: list[NodeKey] = (
            [k for k in self._tops if isinstance(k, int)]
            or [
                k
                for k in self._tops
                if not (isinstance(k, tuple) and k[0] == "thread" and k[2] in self._profiler_tracks)
            ]
            or self._tops
        )
        if not tops:
            return []
        heats = self._step_heats([k for k in tops if isinstance(k, int)])
        path: list[NodeKey] = [max(tops, key=lambda top: heats[top] if top in heats else self._heat(top))]
        while (child := self.hottest_child(path[-1])) is not None:
            path.append(child)
        return path

    def _step_heats(self, steps: list[int]) -> dict[NodeKey, tuple[float, float]]:
        """:meth:`_heat` of many steps at once (their rows' GPU time is the span's, their CPU time
        their duration: one gather instead of a row read each)."""
        steps = [step for step in steps if step in self._spans]
        if len(steps) <= 8:
            return {}
        events = self.trace.columns_of("events", "id", "dur")
        durations = lookup(events, pl.Series(steps, dtype=pl.UInt32), "dur")["dur"].fill_null(0.0)
        return {
            step: (max(self._spans[step][0], 0.0), duration)
            for step, duration in zip(steps, durations.to_list(), strict=True)
        }

    def chain_below(self, key: NodeKey) -> list[NodeKey]:
        """The single-child chain from ``key`` down: at each level the one child that launched
        kernels (else the one child with any GPU work, else an only child); stops where the work
        splits. Returns the keys after ``key`` (empty when the chain ends at once)."""
        return single_child_chain(key, self.children, self._launches_kernels, self._has_gpu_work)

    def _launches_kernels(self, key: NodeKey) -> bool:
        node = self.node(key)
        return node.kind == "kernel" or bool(node.kernels)

    def _has_gpu_work(self, key: NodeKey) -> bool:
        node = self.node(key)
        return node.is_gpu or bool(node.gpu_events)

    # ---- find ------------------------------------------------------------------------------------
    def find(self, query: str, *, exact: bool = False, cats: tuple[str, ...] | None = None) -> list[int]:
        """Event ids whose name contains ``query`` (case-insensitive; ``exact``: equals it), shown
        under the current options, in tree order (step by step, then outside steps, then orphans).
        GPU work is found by the name the tree shows (its decoded short form, ``nvjet gemm bf16 …``)
        as well as by its raw name."""
        events = self.trace.events
        lowered = query.lower()
        shown = [
            raw
            for raw, short in self._gpu_shorts().items()
            if (short == query if exact else lowered in short.lower())
        ]
        if exact:
            hit = pl.col("name") == query
        else:
            hit = pl.col("name").cast(pl.String).str.to_lowercase().str.contains(lowered, literal=True)
        if shown:
            hit = hit | pl.col("name").cast(pl.String).is_in(shown)
        found = events.filter(hit)
        if cats is not None:
            found = found.filter(pl.col("cat").is_in(list(cats)))
        if found.is_empty():
            return []
        visible = self._cpu.visible_ids().implode()
        shown_gpu = self._gpu_ids.implode()
        cpu = found.filter(pl.col("pos").is_not_null() & pl.col("id").is_in(visible))
        gpu = found.filter(pl.col("cat").is_in(list(GPU_KIND)) & pl.col("id").is_in(shown_gpu))
        orphans = found.filter(pl.col("id").is_in(self._orphans))
        calls = events.select(
            pl.col("id").alias("launch_id"),
            pl.col("pos").alias("call_pos"),
            pl.col("track").alias("call_track"),
            pl.col("step_id").alias("call_step"),
        )
        gpu = gpu.join(calls, on="launch_id", how="inner").select(
            "id",
            pl.col("call_step").alias("step_id"),
            pl.col("call_track").alias("track"),
            pl.col("call_pos").alias("pos"),
            "start_ns",
        )
        cpu = cpu.select("id", "step_id", "track", "pos", "start_ns")
        step_rank = pl.DataFrame(
            {"step_id": self.step_ids, "rank": list(range(len(self.step_ids)))},
            schema={"step_id": pl.UInt32, "rank": pl.Int64},
        )
        steps = events.filter(pl.col("id").is_in(self.step_ids)).select(
            pl.col("id").alias("step_id"), pl.col("track").alias("step_track")
        )
        ordered = (
            pl.concat([cpu, gpu])
            .join(step_rank, on="step_id", how="left")
            .join(steps, on="step_id", how="left")
            .with_columns(
                pl.col("rank").fill_null(len(self.step_ids)),
                other_thread=(pl.col("track") != pl.col("step_track")).fill_null(False),
            )
            .sort("rank", "other_thread", "track", "pos", "start_ns", "id")
        )
        ids = ordered["id"].to_list()
        return ids + orphans.sort("start_ns", "id")["id"].to_list()

    def names(self) -> pl.DataFrame:
        """Distinct op, annotation and GPU work names with their kind and count (for the palette)."""
        events = self.trace.events
        kinds = (
            pl.when(pl.col("cat").is_in(list(GPU_KIND)))
            .then(pl.lit("GPU"))
            .when(pl.col("cat") == "user_annotation")
            .then(pl.lit("annotation"))
            .otherwise(pl.lit("op"))
        )
        return (
            events.filter(pl.col("cat").is_in(["cpu_op", "user_annotation", *GPU_WORK]))
            .group_by("name")
            .agg(kinds.first().alias("kind"), pl.len().alias("count"))
            .sort("count", "name", descending=[True, False])
        )


# ---- vectorised helpers -------------------------------------------------------------------------


K = TypeVar("K", bound=Hashable)


def single_child_chain(
    start: K, children: Callable[[K], list[K]], *preferences: Callable[[K], bool]
) -> list[K]:
    """The keys below ``start`` along a single-child chain: at each level the one child that
    satisfies a preference (tried in order; exactly one child must), else an only child; the
    chain stops where that fails."""
    chain: list[K] = []
    current = start
    while kids := children(current):
        picks = ([k for k in kids if prefer(k)] for prefer in preferences)
        nxt = next((pick[0] for pick in picks if len(pick) == 1), None)
        if nxt is None:
            if len(kids) != 1:
                break
            nxt = kids[0]
        chain.append(nxt)
        current = nxt
    return chain


def _subtree_hits(cpu: pl.DataFrame, hit: pl.Expr) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per CPU event: hits in its subtree (``below``) and whether an ancestor-or-self hits
    (``covered``). Positions are global and contiguous, so both are prefix sums over ``pos``."""
    ordered = cpu.sort("pos").with_columns(hit=hit.cast(pl.Int64))
    n = len(ordered)
    prefix = pl.concat([pl.Series([0], dtype=pl.Int64), ordered["hit"].cum_sum()])
    below = ordered.select(
        "id", (prefix.gather(ordered["end_pos"]) - prefix.gather(ordered["pos"])).alias("below")
    )
    marks = ordered.filter(pl.col("hit") > 0)
    delta = (
        pl.concat(
            [
                marks.select(pl.col("pos").alias("at"), pl.lit(1, pl.Int64).alias("d")),
                marks.select(pl.col("end_pos").alias("at"), pl.lit(-1, pl.Int64).alias("d")),
            ]
        )
        .group_by("at")
        .agg(pl.col("d").sum())
    )
    depth = (
        pl.DataFrame({"at": pl.int_range(0, n, dtype=pl.Int64, eager=True)})
        .join(delta, on="at", how="left")
        .select(pl.col("d").fill_null(0).cum_sum() > 0)
        .to_series()
    )
    covered = ordered.select("id", depth.gather(ordered["pos"]).alias("covered"))
    return below, covered


class _Shape:
    """The CPU events shown and how they nest: ``roots`` (``id, track, step_id``, preorder),
    children, parents."""

    roots: pl.DataFrame

    def children(self, event_id: int) -> list[int]:
        raise NotImplementedError

    def has_children(self, event_id: int) -> bool:
        raise NotImplementedError

    def parent_of(self, event_id: int) -> int | None:
        raise NotImplementedError

    def visible(self, event_id: int) -> bool:
        raise NotImplementedError

    def visible_among(self, event_ids: list[int]) -> frozenset[int]:
        """Those of ``event_ids`` that are shown."""
        return frozenset(event_id for event_id in event_ids if self.visible(event_id))

    def visible_ids(self) -> pl.Series:
        raise NotImplementedError


class _Preorder(_Shape):
    """Every CPU event, as nested (no filter, python frames shown). A node's subtree is a range
    of the preorder (``pos`` to ``end_pos``): its children are the rows of that range whose
    parent it is. Up front: the preorder's ids and parents (8 bytes per event), no sort."""

    def __init__(self, trace: Trace, steps: frozenset[int], with_roots: bool = True) -> None:
        """``with_roots``: also :attr:`roots` (for the tree's build; a tree from its kept first
        frame has its roots already)."""
        self.trace, self.steps = trace, steps
        events = trace.columns_of(
            "events", "id", "pos", "parent", *(("track", "step_id") if with_roots else ())
        )
        at = events["pos"].is_not_null().arg_true()
        order = pl.zeros(len(at), pl.UInt32, eager=True).scatter(events["pos"].gather(at), at)
        self.ids, self.parents = events["id"].gather(order), events["parent"].gather(order)
        self.roots = pl.DataFrame(schema={"id": pl.UInt32, "track": pl.Int32, "step_id": pl.UInt32})
        if with_roots:
            step_ids = pl.Series(list(steps), dtype=pl.UInt32).implode()
            roots = self.parents.is_null() & ~self.ids.is_in(step_ids)
            self.roots = events.select("id", "track", "step_id")[order.filter(roots)]

    def _range(self, event_id: int) -> tuple[int, int] | None:
        try:
            row = self.trace.row(event_id)
        except KeyError:
            return None
        pos = self.trace.column("events", "pos")[row]
        return None if pos is None else (pos, self.trace.column("events", "end_pos")[row])

    def _below(self, event_id: int, first_only: bool) -> list[int]:
        span = self._range(event_id)
        if span is None or span[1] <= span[0] + 1:
            return []
        low, high = span[0] + 1, (span[0] + 2 if first_only else span[1])  # the first row below is a child
        kids = self.ids.slice(low, high - low).filter(self.parents.slice(low, high - low) == event_id)
        return [kid for kid in kids.to_list() if kid not in self.steps]

    def children(self, event_id: int) -> list[int]:
        return self._below(event_id, first_only=False)

    def has_children(self, event_id: int) -> bool:
        return bool(self._below(event_id, first_only=True) or self.children(event_id))

    def parent_of(self, event_id: int) -> int | None:
        if self._range(event_id) is None:
            return None
        parent: int | None = self.trace.column("events", "parent")[self.trace.row(event_id)]
        return parent

    def visible(self, event_id: int) -> bool:
        return self._range(event_id) is not None

    def visible_among(self, event_ids: list[int]) -> frozenset[int]:
        events = self.trace.columns_of("events", "id", "pos")
        found = lookup(events, pl.Series(event_ids, dtype=pl.UInt32), "id", "pos")  # one search
        return frozenset(found.filter(pl.col("pos").is_not_null())["id"].to_list())

    def visible_ids(self) -> pl.Series:
        return self.ids


class _Filtered(_Shape):
    """The CPU events a filter keeps (``kept``: their ids), python frames hidden or not: sorted
    keys searched in O(log n) per question (columns, not Python lists)."""

    def __init__(self, trace: Trace, kept: pl.DataFrame, hide_python: bool, steps: frozenset[int]) -> None:
        tree = trace.visible_parents(hide_python).join(kept, on="id", how="semi", maintain_order="left")
        events = trace.columns_of("events", "id", "track", "step_id")
        tree = tree.with_columns(events.select("track", "step_id")[rows_of(events, tree["id"])])
        self._ids = tree["id"]
        by_id = tree.select("id", "parent").sort("id")
        self._parents = _Index(by_id["id"], by_id["parent"])
        step_ids = pl.Series(list(steps), dtype=pl.UInt32).implode()
        nested = tree.filter(pl.col("parent").is_not_null() & ~pl.col("id").is_in(step_ids))
        nested = nested.sort("parent", maintain_order=True)
        self._children = _Index(nested["parent"], nested["id"])
        self.roots = tree.filter(pl.col("parent").is_null() & ~pl.col("id").is_in(step_ids)).drop("parent")

    def children(self, event_id: int) -> list[int]:
        return self._children.of(event_id)

    def has_children(self, event_id: int) -> bool:
        return self._children.has(event_id)

    def parent_of(self, event_id: int) -> int | None:
        parent: int | None = self._parents.one(event_id)
        return parent

    def visible(self, event_id: int) -> bool:
        return self._parents.has(event_id)

    def visible_ids(self) -> pl.Series:
        return self._ids


class _Index:
    """Values by a sorted key (two aligned columns): one key's values in O(log n)."""

    def __init__(self, keys: pl.Series, values: pl.Series) -> None:
        self._keys, self._values = keys, values

    @property
    def keys(self) -> pl.Series:
        """The keys, sorted."""
        return self._keys

    def _span(self, key: int) -> tuple[int, int]:
        keys = self._keys
        return keys.search_sorted(key, "left"), keys.search_sorted(key, "right")  # type: ignore[return-value]

    def of(self, key: int) -> list[Any]:
        """The values of ``key``, in order."""
        low, high = self._span(key)
        return self._values.slice(low, high - low).to_list() if high > low else []

    def has(self, key: int) -> bool:
        low, high = self._span(key)
        return high > low

    def one(self, key: int) -> Any:
        """The (first) value of ``key``, or None."""
        low, high = self._span(key)
        return self._values[low] if high > low else None


def _grouped_roots(roots: pl.DataFrame, by_step: bool) -> list[tuple[tuple[int | None, int], list[int]]]:
    """Root ids grouped by (step or ``None``, track), each group in preorder."""
    step = pl.col("step_id") if by_step else pl.lit(None, pl.UInt32).alias("step_id")
    grouped = (
        roots.with_columns(step)
        .group_by("step_id", "track", maintain_order=True)
        .agg(pl.col("id"))
        .sort("step_id", "track", nulls_last=True)
    )
    return [((s, t), ids) for s, t, ids in grouped.iter_rows()]


def _sum_stats(
    roots: pl.DataFrame, trace: Trace, by_step: bool
) -> dict[SyntheticKey, tuple[float, float, int, int]]:
    """Per thread node: summed (CPU µs, GPU µs, kernels, GPU events) of its roots."""
    step = pl.col("step_id") if by_step else pl.lit(None, pl.UInt32).alias("step_id")
    events = trace.columns_of("events", "id", "track", "step_id", "dur", "gpu_us", "kernels", "gpu_events")
    stats = (
        events.drop("id")[rows_of(events, roots["id"])]
        .with_columns(step)
        .group_by("step_id", "track")
        .agg(
            pl.col("dur").sum(),
            pl.col("gpu_us").sum().clip(0),
            pl.col("kernels").sum(),
            pl.col("gpu_events").sum(),
        )
    )
    return {("thread", s, t): (d, g, int(k), int(e)) for s, t, d, g, k, e in stats.iter_rows()}


def _span_totals(trace: Trace) -> dict[int, tuple[float, int, int, int, int]]:
    """Per step and annotation instance: (GPU µs, kernels, GPU events, memcpys, memsets) launched
    while it was open (``Trace.span_counts``: the numbers of ``step_instances`` /
    ``annotation_instances``, the tables')."""
    if not trace.column("events", "cat").eq("user_annotation").any():
        return {}
    columns = ("id", "gpu_us", "kernels", "gpu_events", "memcpys", "memsets")
    spans = trace.span_counts.select(columns)
    return {i: (g, k, e, c, s) for i, g, k, e, c, s in spans.iter_rows()}


def _step_threads(
    trace: Trace, roots: dict[SyntheticKey, tuple[float, float, int, int]], step_ids: list[int]
) -> dict[SyntheticKey, tuple[float, float, int, int]]:
    """The thread nodes of steps: their roots' CPU time, and the GPU work their thread launched in
    the step's window (``Trace.span_threads``, the split the details pane shows); on the step's own
    thread, the part outside the step's subtree."""
    keys = [k for k in roots if k[1] is not None]
    if not keys:
        return {}
    split = trace.span_threads.filter(pl.col("span").is_in(step_ids))
    work = {
        (s, t): (g, e, k)
        for s, t, g, e, k in split.select("span", "track", "gpu_us", "gpu_events", "kernels").iter_rows()
    }
    events = trace.columns_of("events", "id", "track", "gpu_us", "gpu_events", "kernels")
    ids = pl.Series(step_ids, dtype=pl.UInt32)
    steps = lookup(events, ids, "track", "gpu_us", "gpu_events", "kernels").with_columns(id=ids)
    own = {i: (t, g, e, k) for t, g, e, k, i in steps.iter_rows()}
    result = {}
    for key in keys:
        step, track = key[1], key[2]
        gpu_us, events, kernels = work.get((step, track), (0.0, 0, 0))
        mine = own.get(step)
        if mine is not None and mine[0] == track:  # stray roots on the step's own thread
            gpu_us, events, kernels = gpu_us - mine[1], events - mine[2], kernels - mine[3]
        result[key] = (roots[key][0], max(gpu_us, 0.0), kernels, events)
    return result


def _profiler_tracks(events: pl.DataFrame) -> frozenset[int]:
    """CPU tracks holding only the profiler's own spans (``Trace``, ``overhead``)."""
    own = (  # the test before the filter: a column of flags is filtered, not one of text
        events.select("track", pl.col("cat").is_in(["Trace", "overhead"]).alias("own"), "pos")
        .filter(pl.col("pos").is_not_null())
        .group_by("track")
        .agg(pl.col("own").all())
        .filter("own")
    )
    return frozenset(own["track"].to_list())


def _track_names(trace: Trace) -> dict[int, str]:
    """Display name per track: the thread name, else ``pid/tid``."""
    names = {}
    for track, pid, tid, thread_name in trace.tracks.select("track", "pid", "tid", "thread_name").iter_rows():
        names[track] = thread_name or f"{pid} / {tid}"
    return names
