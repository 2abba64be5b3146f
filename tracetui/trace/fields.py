"""Which fields of a trace event are read, into which table, of what kind, for which events.

The scan (native or msgspec) routes each event to the tables of its group (:func:`group_of`,
by phase and category): every complete event to ``x``, a kernel's args also to ``gpu_args``,
a flow to ``flows``, a counter sample (``C``: its values are its args) to ``counters``, and so
on (:data:`SCAN_TABLES`). Each row keeps the event's ``id`` (its
index in ``traceEvents``). Free of polars (the native scan starts before polars is imported):
kinds are names, mapped to polars types in :mod:`tracetui.trace.frames`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracetui.trace import limits
from tracetui.trace.categories import CATEGORY_NAMES, GPU_LANE, LAUNCH_CALLS
from tracetui.trace.schema import ARG_KEYS, SHAPE_KEYS

INT, FLOAT, STR, RAW, ID, PH = "int", "float", "str", "raw", "id", "ph"
# RAW: JSON text as written; ID: pid/tid/flow ids, integers or strings, kept as text;
# PH: the phase, a string ("" when absent)
VIEW, DICT = "view", "dict"  # text stored as string views (polars String) or a dictionary (Categorical)

GROUPS = ("x_other", "gpu", "call", "op", "python", "flow", "instant", "meta", "counter", "other")
X_GROUPS = ("x_other", "gpu", "call", "op", "python")
GROUP_CODE = {group: code for code, group in enumerate(GROUPS)}
GPU_SET, CALL_SET = frozenset(GPU_LANE), frozenset(LAUNCH_CALLS)
MODELLED_PHASES = ("X", "i", "I", "s", "t", "f", "M", "C")


def group_of(phase: str, cat: str | None) -> str:
    """The group of an event with this phase and category ("x_other": other complete events)."""
    if phase == "X":
        cat = CATEGORY_NAMES.get(cat or "", cat)
        if cat in GPU_SET:
            return "gpu"
        if cat in CALL_SET:
            return "call"
        return {"cpu_op": "op", "python_function": "python"}.get(cat or "", "x_other")
    if phase in ("s", "t", "f"):
        return "flow"
    if phase in ("i", "I"):
        return "instant"
    if phase == "C":
        return "counter"
    return "meta" if phase == "M" else "other"


@dataclass(frozen=True)
class Field:
    """One column of a scan table: ``key`` of the event (or of its args), of a kind, for the
    rows of ``groups`` (None: every group of the table; others get null)."""

    name: str
    key: str
    kind: str
    in_args: bool = False
    groups: tuple[str, ...] | None = None
    store: str = VIEW


@dataclass(frozen=True)
class ScanTable:
    """A table of the scan: a row per event of ``groups`` (``sparse``: only events with a value
    in one of its fields), the event's ``id`` first, then (:attr:`lanes`) its ``lane``: the
    number of its (pid, tid) pair, the same in every table of a trace."""

    name: str
    groups: tuple[str, ...]
    fields: tuple[Field, ...]
    sparse: bool = False

    @property
    def lanes(self) -> bool:
        return self.name in LANE_TABLES


def _arg(name: str, kind: str, **extra: object) -> Field:
    return Field(name, ARG_KEYS[name], kind, True, **extra)  # type: ignore[arg-type]


BASE = (
    Field("cat", "cat", STR),
    Field("name", "name", STR),
    Field("pid", "pid", ID),
    Field("tid", "tid", ID),
    Field("ts", "ts", FLOAT),
)
SCAN_TABLES = (
    ScanTable(
        "x",
        X_GROUPS,
        (  # as many as the complete events: their text is dictionary-encoded
            Field("cat", "cat", STR, store=DICT),
            Field("name", "name", STR, store=DICT),
            Field("pid", "pid", ID, store=DICT),
            Field("tid", "tid", ID, store=DICT),
            Field("ts", "ts", FLOAT),
            Field("dur", "dur", FLOAT),
            _arg("external_id", INT),
            _arg("correlation", INT, groups=("gpu", "call")),
        ),
    ),
    ScanTable(
        "gpu_args",
        ("gpu",),
        tuple(
            _arg(name, kind)
            for name, kind in {
                "stream": INT,
                "device": INT,
                "grid": RAW,
                "block": RAW,
                "registers": INT,
                "shared_memory": INT,
                "blocks_per_sm": FLOAT,
                "warps_per_sm": FLOAT,
                "occupancy": FLOAT,
                "bytes": INT,
                "bandwidth": FLOAT,
                "collective": STR,
                "in_msg_nelems": INT,
                "out_msg_nelems": INT,
                "group_size": INT,
                "dtype": STR,
                "pg_name": STR,
                "pg_desc": STR,
                "pg_ranks": STR,
                "coll_seq": INT,
            }.items()
        ),
        sparse=True,
    ),
    ScanTable("call_args", ("call",), (_arg("cbid", INT),), sparse=True),
    ScanTable("op_args", ("op",), (_arg("seq", INT), _arg("fwd_tid", INT)), sparse=True),
    ScanTable("python_args", ("python",), (_arg("py_id", INT), _arg("py_parent_id", INT)), sparse=True),
    ScanTable(
        "shapes",
        GROUPS,
        tuple(Field(name, key, RAW, True, store=DICT) for name, key in SHAPE_KEYS.items()),
        sparse=True,
    ),
    ScanTable(
        "flows",
        ("flow",),
        (
            Field("ph", "ph", PH, store=DICT),
            Field("cat", "cat", STR, store=DICT),
            Field("name", "name", STR, store=DICT),
            Field("pid", "pid", ID, store=DICT),
            Field("tid", "tid", ID, store=DICT),
            Field("ts", "ts", FLOAT),
            Field("flow_id", "id", ID),
            Field("bp", "bp", STR, store=DICT),
        ),
    ),
    ScanTable(
        "instants",
        ("instant",),
        (
            *BASE,
            Field("scope", "s", STR),
            *(
                _arg(name, INT)
                for name in (
                    "total_reserved",
                    "total_allocated",
                    "alloc_bytes",
                    "device_id",
                    "device_type",
                    "addr",
                )
            ),
        ),
    ),
    ScanTable(
        "meta",
        ("meta",),
        (
            Field("name", "name", STR),
            Field("pid", "pid", ID),
            Field("tid", "tid", ID),
            _arg("meta_name", STR),
            _arg("labels", STR),
            _arg("sort_index", INT),
        ),
    ),
    ScanTable("counters", ("counter",), BASE),  # the values: the event's raw args ({series: value})
    ScanTable("other", ("other",), (Field("ph", "ph", PH),)),
)
TABLE_NAMES = tuple(table.name for table in SCAN_TABLES)
LANE_TABLES = frozenset({"x", "flows", "instants", "meta"})

# The native scanner's codes (see _scan.c).
_KIND_CODE = {STR: 0, PH: 1, ID: 2, FLOAT: 3, INT: 4, RAW: 5}
_STORE_CODE = {VIEW: 0, DICT: 1}
RAW_CODE = _KIND_CODE[RAW]


def _mask(groups: tuple[str, ...]) -> int:
    return sum(1 << GROUP_CODE[group] for group in groups)


def scan_spec() -> tuple[object, ...]:
    """What :class:`tracetui.trace._scan.Scanner` reads: the fields it stages, where the phase
    and the category are, the groups of phases and categories, the tables, and the limits of
    :mod:`limits` (text values cut, args objects not kept)."""
    slots: list[tuple[bytes, int, bool]] = []
    index: dict[tuple[str, bool, str], int] = {}

    def slot(key: str, kind: str, in_args: bool) -> int:
        ident = (key, in_args, kind)
        if ident not in index:
            if any(k == key and a == in_args for k, a, _ in index):
                raise ValueError(f"field {key!r} read as two kinds")
            index[ident] = len(slots)
            slots.append((key.encode(), _KIND_CODE[kind], in_args))
        return index[ident]

    ph, cat = slot("ph", PH, False), slot("cat", STR, False)
    tables = []
    for table in SCAN_TABLES:
        columns = [
            (slot(f.key, f.kind, f.in_args), _mask(f.groups or table.groups), _STORE_CODE[f.store])
            for f in table.fields
        ]
        tables.append((_mask(table.groups), table.sparse, table.lanes, columns))
    phases = [(b"X", -1)] + [
        (phase.encode(), GROUP_CODE[group_of(phase, None)]) for phase in MODELLED_PHASES if phase != "X"
    ]
    known = {*GPU_SET, *CALL_SET, "cpu_op", "python_function", *CATEGORY_NAMES}
    cats = [(name.encode(), GROUP_CODE[group_of("X", name)]) for name in sorted(known)]
    other = GROUP_CODE["other"]
    return (slots, ph, cat, phases, cats, GROUP_CODE["x_other"], other, tables, limits.spec())
