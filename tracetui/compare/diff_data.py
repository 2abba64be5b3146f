"""The data behind ``tracetui diff A B``: one JSON-ready dict with a stable, documented schema.

Schema ``tracetui.diff/1`` (``docs/compare.md``). Annotations are paired by name, steps by
position; every comparison is *per call* (per step for the steps scope) so traces with different
numbers of calls compare. Each pair of values is ``{"a": …, "b": …}`` with ``null`` for a side that
lacks the item. Times are µs. UI-free: the report and the viewer both read this dict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from tracetui import formatting as fmt
from tracetui.compare import scopes
from tracetui.compare.chains import ARROW, dispatch_chains
from tracetui.insight.compile_names import compile_overheads
from tracetui.insight.kernel_names import decode_kernel_name, kernel_name_columns
from tracetui.trace.categories import LAUNCH_CALLS
from tracetui.trace.stats import sum_us

if TYPE_CHECKING:
    from tracetui.trace import Trace

SCHEMA = "tracetui.diff/1"
BOTH, ONLY_A, ONLY_B = "both", "only_a", "only_b"
NUMBERS = (
    "kernels_per_call",
    "memcpys_per_call",
    "memsets_per_call",
    "gpu_events_per_call",
    "gpu_us_per_call",
    "gpu_busy_us_per_call",
    "cpu_us_per_call",
)
STEP_DELTAS = ("cpu_us", "gpu_us", "gpu_busy_us", "gpu_events", "kernels", "memcpys", "memsets")
LONG_NAME = 64  # kernel names longer than this are shown in their decoded short form in headlines
OP_ALIASES = {"bias": "add"}
FAMILY_LABELS = {"aten": "ATen", "inductor": "Inductor", "triton": "Triton", "cublasLt nvjet": "cuBLASLt"}


def diff_data(a: Trace, b: Trace) -> dict[str, Any]:
    """Compare trace ``a`` (before) with trace ``b`` (after)."""
    names_a = a.annotations["name"].to_list()
    names_b = set(b.annotations["name"].to_list())
    paired = [n for n in names_a if n in names_b]
    whole: scopes.Kind = "steps" if len(a.steps) and len(b.steps) else "trace"
    sides = (_Side(a), _Side(b))
    records = _scope_records(sides, "annotation", paired) + _scope_records(sides, whole, None)
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "a": _trace_info(a),
        "b": _trace_info(b),
        "headlines": [],
        "scopes": records,
        "unpaired_annotations": {
            "a": _unpaired(a, set(names_a) - names_b),
            "b": _unpaired(b, names_b - set(names_a)),
        },
        "steps": _steps(a, b),
        "compile_preops": _compile_preops(a, b),
    }
    shown = [r for r in records if r["kind"] == "annotation"] or records
    data["headlines"] = [line for record in shown for line in record["headlines"]]
    for status, what in ((ONLY_B, "new in B"), (ONLY_A, "gone in B")):
        names = [p["name"] for p in data["compile_preops"] if p["status"] == status]
        if names:
            data["headlines"].append(f"torch.compile CPU pre-ops {what}: {', '.join(names)}")
    return data


# ---- per-trace profiles ------------------------------------------------------------------------


class _Side:
    """A trace and its dispatch chains, computed once for every scope."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.chains = dispatch_chains(trace)


@dataclass(frozen=True)
class _Profile:
    """One trace's scopes of one kind: per-scope numbers and what each scope holds, per call."""

    numbers: pl.DataFrame  # scope, calls, NUMBERS
    work: pl.DataFrame  # scope, name, category, per_call, us_per_call
    chains: pl.DataFrame  # scope, chain, per_call, gpu_events_per_call
    calls: pl.DataFrame  # scope, name, per_call, us_per_call


def _profile(side: _Side, kind: scopes.Kind, names: list[str] | None) -> _Profile:
    trace = side.trace
    units = scopes.units(trace, kind, names)
    cpu = scopes.cpu_members(trace, kind, units)
    scope_of = units.select("unit", "scope")
    numbers = units.group_by("scope", maintain_order=True).agg(
        pl.len().alias("calls"),
        *(pl.col(c).mean().alias(f"{c}_per_call") for c in scopes.COUNT_COLUMNS),
        *(pl.col(c).mean().alias(f"{c}_per_call") for c in ("gpu_us", "gpu_busy_us", "cpu_us")),
    )
    calls = numbers.select("scope", "calls")
    work = (
        scopes.gpu_members(trace, kind, units, cpu)
        .join(scope_of, on="unit")
        .group_by("scope", "name")
        .agg(pl.col("cat").first().alias("category"), pl.len().alias("n"), sum_us().alias("us"))
    )
    chains = (
        cpu.join(side.chains, on="id")
        .join(scope_of, on="unit")
        .group_by("scope", "chain")
        .agg(pl.len().alias("n"), pl.col("gpu_events").sum().alias("gpu_events"))
    )
    launch_calls = pl.col("cat").is_in(LAUNCH_CALLS)
    runtime = trace.events.filter(launch_calls).select("id", "name", "start_ns", "end_ns")
    launch = (
        cpu.join(runtime, on="id")
        .join(scope_of, on="unit")
        .group_by("scope", "name")
        .agg(pl.len().alias("n"), sum_us().alias("us"))  # on integer ns: the same sum in any order
    )
    return _Profile(
        numbers=numbers,
        work=_per_call(work, calls, {"n": "per_call", "us": "us_per_call"}),
        chains=_per_call(chains, calls, {"n": "per_call", "gpu_events": "gpu_events_per_call"}),
        calls=_per_call(launch, calls, {"n": "per_call", "us": "us_per_call"}),
    )


def _per_call(frame: pl.DataFrame, calls: pl.DataFrame, columns: dict[str, str]) -> pl.DataFrame:
    return (
        frame.join(calls, on="scope")
        .with_columns((pl.col(c) / pl.col("calls")).alias(new) for c, new in columns.items())
        .drop(*columns, "calls")
    )


# ---- scopes ------------------------------------------------------------------------------------


def _scope_records(
    sides: tuple[_Side, _Side], kind: scopes.Kind, names: list[str] | None
) -> list[dict[str, Any]]:
    if names is not None and not names:
        return []
    pa, pb = (_profile(side, kind, names) for side in sides)
    scope_names = names if names is not None else [kind]
    work = _outer(pa.work, pb.work, ["scope", "name"], ["per_call", "us_per_call"], keep=["category"])
    chains = _outer(pa.chains, pb.chains, ["scope", "chain"], ["per_call", "gpu_events_per_call"])
    chains = chains.with_columns(pl.col("chain").list.join(ARROW).alias("text"))
    launch = _outer(pa.calls, pb.calls, ["scope", "name"], ["per_call", "us_per_call"])
    decoded = _decoded(work["name"])
    records = []
    for name in scope_names:
        record = {
            "kind": kind,
            "name": name,
            **_numbers(pa.numbers, pb.numbers, name),
            "gpu_work": _work_items(work.filter(pl.col("scope") == name), decoded),
            "chains": _chain_items(chains.filter(pl.col("scope") == name)),
            "launch_calls": _items(launch.filter(pl.col("scope") == name), ["name"], by="per_call"),
        }
        record["identical"] = _identical(record["gpu_work"])
        record["replacements"] = _replacements(record["gpu_work"])
        record["headlines"] = scope_headlines(record)
        records.append(record)
    return records


def _numbers(na: pl.DataFrame, nb: pl.DataFrame, name: str) -> dict[str, Any]:
    sides = {}
    for side, frame in (("a", na), ("b", nb)):
        rows = frame.filter(pl.col("scope") == name).drop("scope").to_dicts()
        sides[side] = _finite(rows[0]) if rows else None
    delta: dict[str, Any] = {}
    if sides["a"] and sides["b"]:
        for key in NUMBERS:
            before, after = sides["a"][key], sides["b"][key]
            if before is None or after is None:
                continue
            delta[key] = after - before
            if key.endswith("us_per_call"):
                delta[key.replace("_per_call", "_pct")] = (
                    100.0 * (after - before) / before if before else None
                )
    return {"a": sides["a"], "b": sides["b"], "delta": delta}


def _outer(
    fa: pl.DataFrame, fb: pl.DataFrame, keys: list[str], values: list[str], keep: list[str] | None = None
) -> pl.DataFrame:
    """Full join of A and B on ``keys``: ``a_<value>``/``b_<value>`` columns and a ``status``."""
    keep = keep or []
    left = fa.select(*keys, *keep, *(pl.col(v).alias(f"a_{v}") for v in values), pl.lit(True).alias("in_a"))
    right = fb.select(*keys, *keep, *(pl.col(v).alias(f"b_{v}") for v in values), pl.lit(True).alias("in_b"))
    joined = left.join(right, on=keys, how="full", coalesce=True, suffix="_b")
    for column in keep:
        joined = joined.with_columns(pl.coalesce(column, f"{column}_b").alias(column)).drop(f"{column}_b")
    status = (
        pl.when(pl.col("in_a") & pl.col("in_b"))
        .then(pl.lit(BOTH))
        .when(pl.col("in_a"))
        .then(pl.lit(ONLY_A))
        .otherwise(pl.lit(ONLY_B))
    )
    return joined.with_columns(status=status).drop("in_a", "in_b")


def _items(
    frame: pl.DataFrame, keys: list[str], extra: list[str] | None = None, by: str | None = None
) -> list[dict[str, Any]]:
    """Rows as ``{key…, extra…, status, a: {…}|null, b: {…}|null}``.

    Order: in both, only in A, only in B; within each, ``by`` (A's value, else B's) descending,
    then the keys.
    """
    values = sorted({c[2:] for c in frame.columns if c.startswith(("a_", "b_"))})
    rank = pl.col("status").replace_strict({BOTH: 0, ONLY_A: 1, ONLY_B: 2}, return_dtype=pl.Int8)
    if by is None:
        order = frame.sort(rank, *keys)
    else:
        value = pl.coalesce(f"a_{by}", f"b_{by}")
        order = frame.sort(rank, value, *keys, descending=[False, True, *([False] * len(keys))])
    items = []
    for row in order.iter_rows(named=True):
        item = {k: row[k] for k in (*keys, *(extra or []))}
        item["status"] = row["status"]
        for side, present in (("a", row["status"] != ONLY_B), ("b", row["status"] != ONLY_A)):
            item[side] = _finite({v: row[f"{side}_{v}"] for v in values}) if present else None
        items.append(item)
    return items


def _decoded(names: pl.Series) -> pl.DataFrame:
    columns = ["name", "short", "family", "kind"]
    if names.is_empty():
        return pl.DataFrame(schema=dict.fromkeys(columns, pl.String))
    return kernel_name_columns(names).select(columns)


def _work_items(frame: pl.DataFrame, decoded: pl.DataFrame) -> list[dict[str, Any]]:
    frame = frame.join(decoded, on="name", how="left")
    return _items(frame, ["name"], extra=["category", "short", "family", "kind"], by="us_per_call")


def _chain_items(frame: pl.DataFrame) -> list[dict[str, Any]]:
    items = _items(frame, ["chain"], extra=["text"])
    for item in items:
        per_call = [s["gpu_events_per_call"] for s in (item["a"], item["b"]) if s is not None]
        item["launches"] = any(n > 0 for n in per_call)
    return items


def _identical(work: list[dict[str, Any]]) -> dict[str, Any]:
    """Kernels whose byte-identical names appear in both: the GPU ran the same code."""
    same = [w for w in work if w["status"] == BOTH and w["category"] == "kernel"]
    return {
        "names": [w["name"] for w in same],
        "kernels_per_call": {
            "a": sum(w["a"]["per_call"] for w in same),
            "b": sum(w["b"]["per_call"] for w in same),
        },
    }


def _replacements(work: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kernels only on one side that take the place of kernels only on the other.

    A fused kernel whose fused ops cover kernels present only on the other side replaces them:
    ``triton_poi_fused__unsafe_view_gelu_mul_0`` (only in B) fuses ``gelu`` and ``mul``, so it
    replaces the ATen gelu and mul kernels that are only in A (``"fused"``); the reverse is
    ``"unfused"``. A GEMM with a bias epilogue replaces a plain GEMM and an add. Kernels still
    unpaired on both sides after that (a hand-written ``_geglu_fwd_kernel`` for ATen's gelu and
    mul, another GEMM tile) replace each other as a group (``"other"``).
    """
    kernels = [w for w in work if w["category"] == "kernel"]
    found = _fused_replacements(kernels)
    paired = {name for r in found for name in (*r["a"], *r["b"])}
    rest_a = [w for w in kernels if w["status"] == ONLY_A and w["name"] not in paired]
    rest_b = [w for w in kernels if w["status"] == ONLY_B and w["name"] not in paired]
    if rest_a and rest_b:
        ops = (_op_key(decode_kernel_name(w["name"]).op) for w in rest_a)
        found.append(_replacement("other", rest_a, rest_b, [op for op in dict.fromkeys(ops) if op]))
    return found


def _fused_replacements(kernels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replacements whose fused kernel's name lists the ops it covers."""
    found = []
    for fused_side, other_side, how in ((ONLY_B, ONLY_A, "fused"), (ONLY_A, ONLY_B, "unfused")):
        others = [w for w in kernels if w["status"] == other_side]
        for fused in (w for w in kernels if w["status"] == fused_side):
            ops = _fused_op_keys(fused["name"])
            covered = [w for w in others if _op_key(decode_kernel_name(w["name"]).op) in ops]
            if not covered:
                continue
            covered.sort(key=lambda w: ops.index(_op_key(decode_kernel_name(w["name"]).op)))
            removed, added = (covered, [fused]) if how == "fused" else ([fused], covered)
            covered_ops = dict.fromkeys(_op_key(decode_kernel_name(w["name"]).op) for w in covered)
            found.append(_replacement(how, removed, added, list(covered_ops)))
    return found


def _replacement(
    how: str, removed: list[dict[str, Any]], added: list[dict[str, Any]], ops: list[str]
) -> dict[str, Any]:
    return {
        "how": how,
        "a": [w["name"] for w in removed],
        "b": [w["name"] for w in added],
        "ops": ops,
        "kernels_per_call": {
            "a": sum(w["a"]["per_call"] for w in removed),
            "b": sum(w["b"]["per_call"] for w in added),
        },
        "us_per_call": {
            "a": sum(w["a"]["us_per_call"] for w in removed),
            "b": sum(w["b"]["us_per_call"] for w in added),
        },
    }


def _fused_op_keys(name: str) -> list[str]:
    """What a fused kernel does: its fused ops and its main op (a GEMM with a bias epilogue is
    ``gemm`` and ``add``); empty for a kernel that fuses nothing."""
    decoded = decode_kernel_name(name)
    if not decoded.fused_ops:
        return []
    main = (decoded.op or "").split("+")[0]
    return list(dict.fromkeys(_op_key(op) for op in (main, *decoded.fused_ops) if op))


def _op_key(op: str | None) -> str:
    """``_unsafe_view`` → ``unsafe_view``; ``log_softmax forward`` → ``log_softmax``; an epilogue's
    ``bias`` is an ``add``."""
    key = (op or "").split(" ")[0].strip("_").lower()
    return OP_ALIASES.get(key, key)


# ---- headlines ---------------------------------------------------------------------------------


def display_name(name: str) -> str:
    """A kernel name as a headline shows it: whole when short, else its decoded short form."""
    return name if len(name) <= LONG_NAME else decode_kernel_name(name).short


def scope_headlines(record: dict[str, Any]) -> list[str]:
    """Sentences that say what changed in one scope (the report's and the JSON's headlines)."""
    a, b, delta = record["a"], record["b"], record["delta"]
    if a is None or b is None:
        return []
    per = {"steps": " per step", "trace": ""}.get(record["kind"], " per call")
    label = {"steps": "per step", "trace": "whole trace"}.get(record["kind"], record["name"])
    heading = f"{label}, per call" if record["kind"] == "annotation" else label
    lines = [
        f"{heading}: kernels {_n(a['kernels_per_call'])} → {_n(b['kernels_per_call'])}, "
        f"GPU events {_n(a['gpu_events_per_call'])} → {_n(b['gpu_events_per_call'])}, "
        f"GPU time {_time_change(a, b, delta, 'gpu_us')}, CPU time {_time_change(a, b, delta, 'cpu_us')}"
    ]
    same = record["identical"]
    if same["names"]:
        counts = {w["name"]: w["a"]["per_call"] for w in record["gpu_work"] if w["name"] in same["names"]}
        listed = ", ".join(f"{display_name(n)} ×{_n(c)}" for n, c in counts.items())
        per_call = same["kernels_per_call"]
        count = _n(per_call["a"])
        if per_call["a"] != per_call["b"]:
            count += f" → {_n(per_call['b'])}"
        n = len(same["names"])
        kernels, names = _plural(per_call["a"], "kernel"), _plural(n, "name")
        verb = "is" if per_call["a"] == 1 else "are"
        lines.append(
            f"{label}: {count} {kernels}{per} ({n} {names}) {verb} byte-identical in A and B: {listed}"
        )
    for r in record["replacements"]:
        lines.append(f"{label}: {replacement_text(r, per)}")
    return lines


def replacement_text(r: dict[str, Any], per: str = " per call") -> str:
    """``2 ATen kernels (…; 70.4 µs per call) replaced by 1 Inductor kernel (…; 37.4 µs per call)…``."""
    verb = "split into" if r["how"] == "unfused" else "replaced by"
    a = _kernel_group(r["a"], r["kernels_per_call"]["a"], r["us_per_call"]["a"], per)
    b = _kernel_group(r["b"], r["kernels_per_call"]["b"], r["us_per_call"]["b"], per)
    if r["how"] == "other":
        return f"{a} {verb} {b}: the remaining kernels that differ"
    return f"{a} {verb} {b}: the fused kernel covers {', '.join(r['ops'])}"


def _kernel_group(names: list[str], count: float, time: float, per: str) -> str:
    families = {FAMILY_LABELS.get(f, f) for f in (decode_kernel_name(n).family for n in names)}
    family = families.pop() + " " if len(families) == 1 else ""
    noun = _plural(count, "kernel")
    listed = ", ".join(display_name(n) for n in names)
    return f"{_n(count)} {family}{noun}{per} ({listed}; {fmt.duration(time)})"


def _plural(n: float, word: str) -> str:
    """``kernel`` for one, ``kernels`` otherwise (``2 names``: the caller writes the number)."""
    return word if n == 1 else f"{word}s"


def _time_change(a: dict[str, Any], b: dict[str, Any], delta: dict[str, Any], key: str) -> str:
    before, after = a[f"{key}_per_call"], b[f"{key}_per_call"]
    change = fmt.signed_duration(delta.get(f"{key}_per_call")) or "-"  # no change without both sides
    pct = delta.get(f"{key}_pct")
    relative = f", {fmt.signed_percent(pct)}" if pct is not None else ""
    return f"{fmt.duration(before) or '-'} → {fmt.duration(after) or '-'} ({change}{relative})"


def _n(value: float | None) -> str:
    return fmt.count(value) or "-"


# ---- trace-wide parts --------------------------------------------------------------------------


def _trace_info(trace: Trace) -> dict[str, Any]:
    meta = trace.metadata.get("tracetui")
    return {
        "path": str(trace.path),
        "name": trace.path.name,
        "format": trace.format,
        "events": trace.event_count,
        "devices": [d.get("name") for d in trace.devices],
        "steps": len(trace.steps),
        "annotations": trace.annotations["name"].to_list(),
        "command": meta.get("command") if isinstance(meta, dict) else None,
    }


def _unpaired(trace: Trace, names: set[str]) -> list[dict[str, Any]]:
    rows = trace.annotations.filter(pl.col("name").is_in(list(names)))
    return [
        _finite(r)
        for r in rows.select(
            "name", "calls", "kernels_per_call", "gpu_us_per_call", "cpu_us_per_call"
        ).to_dicts()
    ]


def _steps(a: Trace, b: Trace) -> list[dict[str, Any]]:
    """Steps paired by position (the first step of A with the first of B, …)."""
    columns = ["name", "step", "dur", "gpu_us", "gpu_busy_us", "gpu_events", "kernels", "memcpys", "memsets"]
    sides = [t.steps.select(columns).rename({"dur": "cpu_us"}).to_dicts() for t in (a, b)]
    rows = []
    for position in range(max(len(sides[0]), len(sides[1]))):
        pa, pb = (_finite(s[position]) if position < len(s) else None for s in sides)
        delta = {k: _minus(pb[k], pa[k]) for k in STEP_DELTAS} if pa and pb else None
        rows.append({"position": position, "a": pa, "b": pb, "delta": delta})
    return rows


def _minus(b: float | None, a: float | None) -> float | None:
    """``b - a``; unknown (null: a step without a duration) when either is."""
    return None if a is None or b is None else b - a


def _compile_preops(a: Trace, b: Trace) -> list[dict[str, Any]]:
    """``torch.compile``'s CPU pre-ops in each trace, paired by name (calls, µs per call)."""
    columns = ["calls", "avg_us", "total_us"]
    joined = _outer(compile_overheads(a), compile_overheads(b), ["name"], columns)
    return _items(joined.rename({f"{s}_avg_us": f"{s}_us_per_call" for s in "ab"}), ["name"], by="total_us")


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    """JSON has no inf/nan: write them as null."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}
