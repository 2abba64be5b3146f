"""Which fields of a trace event become columns, of what kind, for which events.

Free of polars (the native scan starts before polars is imported): kinds are names, mapped
to polars types in :mod:`tracetui.trace.frames`. Events fall into groups by phase and category
(:func:`group_of`); each group keeps its own promoted args.
"""

from __future__ import annotations

from tracetui.trace.categories import GPU_LANE, LAUNCH_CALLS
from tracetui.trace.schema import ARG_KEYS

INT, FLOAT, STR, RAW, ID = "int", "float", "str", "raw", "id"  # RAW: JSON text as written;
# ID: pid/tid/flow ids, integers or strings, kept as text

BASE_FIELDS = {"ph": STR, "cat": STR, "name": STR, "pid": ID, "tid": ID, "ts": FLOAT, "dur": FLOAT}
# Promoted args per group of events, with their column kinds.
GROUP_ARGS: dict[str, dict[str, str]] = {
    "x": {"external_id": INT},
    "gpu": {
        "correlation": INT,
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
    },
    "call": {"correlation": INT, "cbid": INT},
    "op": {"seq": INT, "fwd_tid": INT},
    "python": {"py_id": INT, "py_parent_id": INT},
    "instant": {
        "total_reserved": INT,
        "total_allocated": INT,
        "alloc_bytes": INT,
        "device_id": INT,
        "device_type": INT,
        "addr": INT,
    },
    "meta": {"meta_name": STR, "labels": STR, "sort_index": INT},
}
# Fields of the event itself (not its args) kept for some groups.
GROUP_FIELDS: dict[str, dict[str, str]] = {"instant": {"s": STR}, "flow": {"id": ID, "bp": STR}}
X_GROUPS = ("gpu", "call", "op", "python")
GPU_SET, CALL_SET = frozenset(GPU_LANE), frozenset(LAUNCH_CALLS)
MODELLED_PHASES = ("X", "i", "I", "s", "t", "f", "M")
GROUPS = ("x_other", *X_GROUPS, "flow", "instant", "meta", "other")
GROUP_CODE = {group: code for code, group in enumerate(GROUPS)}


def group_of(phase: str, cat: str | None) -> str:
    """The group of an event with this phase and category ("x_other": other complete events)."""
    if phase == "X":
        if cat in GPU_SET:
            return "gpu"
        if cat in CALL_SET:
            return "call"
        return {"cpu_op": "op", "python_function": "python"}.get(cat or "", "x_other")
    if phase in ("s", "t", "f"):
        return "flow"
    if phase in ("i", "I"):
        return "instant"
    return "meta" if phase == "M" else "other"


def column_kinds() -> dict[str, str]:
    """Every field as one full-length column, with its kind (the event's ``id`` as ``id_field``)."""
    kinds = dict(BASE_FIELDS)
    for group in (*GROUP_ARGS.values(), *GROUP_FIELDS.values()):
        kinds |= {("id_field" if name == "id" else name): kind for name, kind in group.items()}
    return kinds


# The native scanner's field spec: (JSON key, kind code, inside args) per column of
# column_kinds(), then the two byte offsets of each event's args object.
_SCAN_CODE = {STR: 0, ID: 2, FLOAT: 3, INT: 4, RAW: 5}
RAW_CODE = _SCAN_CODE[RAW]
_PHASE_CODE = 1  # a string, absent = "" (the msgspec type's default)
_ARGS_SPAN = [(b"args", 6, False), (b"args", 7, False)]


def scan_fields() -> list[tuple[bytes, int, bool]]:
    """What :func:`tracetui.trace._scan.scan` reads, in :func:`column_kinds` order."""
    fields = []
    for name, kind in column_kinds().items():
        in_args = name in ARG_KEYS
        key = ARG_KEYS[name] if in_args else {"id_field": "id"}.get(name, name)
        fields.append((key.encode(), _PHASE_CODE if name == "ph" else _SCAN_CODE[kind], in_args))
    return fields + _ARGS_SPAN
