"""``tracetui summary`` of a distributed run: the readable report (rich) over
:func:`~tracetui.ranks.summary_data.ranks_data`.

The run (ranks, their sources and what is missing or duplicated), the Ranks table, the straggler
verdict, the collectives that cost the most waiting, the kernels that differ most between ranks,
the slowest rank per step, then the single-trace report of the chosen rank. Trace text is
``Text``, never markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.rule import Rule
from rich.text import Text

from tracetui import formatting as fmt
from tracetui.ranks.cause import breakdown_line
from tracetui.ranks.collectives import pretty
from tracetui.ranks.discover import rank_list
from tracetui.report.summary import summary_renderable
from tracetui.report.table import MISSING, Cell, nums, table
from tracetui.safetext import shown

if TYPE_CHECKING:
    from rich.console import RenderableType

TOP = 10
MAX_STEPS = 8
STRAGGLER_MARK = "◀"  # beside the straggler's rank in the Ranks table
WORST = 20  # a run of more ranks shows its worst this many first, then every rank


def ranks_renderable(data: dict[str, Any]) -> RenderableType:
    """The whole report of a run as one rich renderable."""
    run = data["distributed"]
    verdict = Text("Stragglers: ", style="bold")
    verdict.append(run["verdict"], style="bold red" if run["straggler"] else "")
    parts: list[RenderableType] = [_header(data), verdict, *_why(run)]
    if len(data["ranks"]) > WORST:
        parts.append(_ranks(data, worst(data)))
    parts.append(_ranks(data))
    parts += [t for t in (_collectives(data), _kernels(run), _steps(run)) if t is not None]
    parts.append(Rule(Text(f"rank {run['rank']}: {_file_of(run, run['rank'])}"), align="left"))
    parts.append(summary_renderable(data))
    return Group(*parts)


def _why(run: dict[str, Any]) -> list[Text]:
    """Why the straggler is late: the sentence and the per-kind breakdown (none without one)."""
    if run["straggler"] is None:
        return []
    cause = run["straggler"]["cause"]
    if cause is None:
        return [Text("Why: not known (no stretch before a late collective to compare)", style="dim")]
    why = Text("Why: ", style="bold")
    why.append(shown(cause["sentence"], None), style="bold" if cause["kind"] else "")
    return [why, Text("  " + shown(breakdown_line(cause["rank"], cause["totals"]), None), style="dim")]


def _file_of(run: dict[str, Any], rank: int) -> str:
    return next((_name(f["file"]) for f in run["files"] if f["rank"] == rank), "?")


def _name(path: str) -> str:
    """A file's name from a path in the report's data, safe to print."""
    return shown(path.rsplit("/", 1)[-1])


def _header(data: dict[str, Any]) -> Text:
    run = data["distributed"]
    text = Text()
    text.append(f"{len(run['files'])} ranks", style="bold")
    text.append(" from ")
    text.append(shown(run["label"]))
    text.append(f"; rank from {' and '.join(run['rank_sources'])}", style="dim")
    if run["world_size"] is not None:
        text.append(f", world size {run['world_size']}", style="dim")
    if run["backend"]:
        text.append(", backend ", style="dim")
        text.append(shown(run["backend"]), style="dim")
    warn = "yellow"
    if run["missing"]:
        text.append(f"\nmissing: rank {rank_list(run['missing'])} (no trace)", style=warn)
    for dup in run["duplicates"]:
        text.append(f"\nanother run of rank {dup['rank']} not used (the newest is): ", style="dim")
        text.append(_name(dup["file"]), style="dim")
    for item in run["skipped"]:
        text.append("\nskipped ", style="dim")
        text.append(f"{_name(item['file'])}: {shown(item['why'])}", style="dim")
    for item in run["failed"]:
        text.append(f"\nrank {item['rank']} not loaded: ", style=warn)
        text.append(shown(item["error"]), style=warn)
    for note in run["notes"]:
        text.append("\nnote: ", style=warn)
        text.append(shown(note))
    return text


def worst(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The :data:`WORST` ranks that held the others up most (the time the others waited for them),
    then the slowest (median step time)."""
    waited = {s["rank"]: s["others_wait_us"] or 0.0 for s in data["stragglers"]}
    order = sorted(
        data["ranks"], key=lambda r: (-waited.get(r["rank"], 0.0), -(r["step_us_median"] or 0.0), r["rank"])
    )
    return order[:WORST]


def _ranks(data: dict[str, Any], only: list[dict[str, Any]] | None = None) -> RenderableType:
    """The Ranks table (``only``: the worst ranks' rows, in that order); the straggler marked."""
    last = {s["rank"]: s["last_count"] for s in data["stragglers"]}
    straggler = (data["distributed"]["straggler"] or {}).get("rank")
    ranks = data["ranks"] if only is None else only
    devices = {(r["device"] or "").split(" (")[0] for r in ranks}
    steps = {r["steps"] for r in ranks}
    rows: list[list[Cell]] = []
    for r in ranks:
        parts = [r[k] for k in ("compute_us", "comm_us", "memory_us", "idle_us")]
        window = sum(p or 0.0 for p in parts)
        marked = Text(f"{r['rank']} {STRAGGLER_MARK}", style="bold red")
        row: list[Cell] = [marked if r["rank"] == straggler else str(r["rank"])]
        row += [Text((r["device"] or "").split(" (")[0])] if len(devices) > 1 else []
        row += [fmt.count(r["steps"])] if len(steps) > 1 else []
        row += [us(r["step_us_median"]), us(r["gpu_busy_us"]), *(_share(p, window) for p in parts)]
        row += [fmt.percent(r["overlap_pct"]) or MISSING, us(r["host_comm_us"])]
        rows.append([*row, fmt.count(last.get(r["rank"], 0))])
    header = [("rank", "num")]
    header += [("device", "text")] if len(devices) > 1 else []
    header += [("steps", "num")] if len(steps) > 1 else []
    header += nums("step", "busy", "comp", "comm", "mem", "idle", "overlap", "host", "last")
    title = "Ranks" if only is None else f"The worst {len(ranks)} of {len(data['ranks'])} ranks"
    if len(devices) == 1 and ranks:
        title += f", each on {ranks[0]['device']}"
    if len(steps) == 1 and ranks:
        title += f", {ranks[0]['steps']} steps each"
    legend = Text(
        "step: median step time; busy: GPU busy (whole trace); comp/comm/mem/idle: compute, "
        "communication, memcpy/memset and idle share of the steps' GPU time; overlap: collective time "
        "spent computing too; host: CPU time in collectives; last: collectives it arrived at last"
        + (f"; {STRAGGLER_MARK}: the straggler" if straggler is not None else ""),
        style="dim",
    )
    if only is not None:
        legend = Text(
            "(by the time the others waited for them, then by step time; every rank below)", style="dim"
        )
    return Group(table(title, header, rows), legend)


def _share(value: float | None, window: float) -> str:
    return fmt.percent(100.0 * value / window) if window and value is not None else MISSING


def us(value: float | None) -> str:
    """A duration (µs) as every report writes it; ``-`` for none."""
    return fmt.duration(value) or MISSING


def _collectives(data: dict[str, Any]) -> RenderableType | None:
    rows_in = sorted(data["collectives"], key=lambda c: (-(c["wait_us"] or 0.0), c["group"], c["seq"]))
    if not rows_in:
        return None
    rows: list[list[Cell]] = [
        [
            Text(c["group"]),
            str(c["seq"]),
            pretty(c["name"]),
            fmt.size(c["bytes"]) or MISSING,
            fmt.count(c["ranks"]),
            us(c["arrival_skew_us"]),
            str(c["last_rank"]),
            us(c["wait_us"]),
        ]
        for c in rows_in[:TOP]
    ]
    header = [
        ("group", "text"),
        *nums("seq"),
        ("collective", "text"),
        *nums("size", "ranks", "skew", "last", "wait"),
    ]
    return table(f"Collectives (of {len(rows_in)}, by the time the others waited)", header, rows)


def _kernels(run: dict[str, Any]) -> RenderableType | None:
    kernels = run["kernels"]
    if not kernels:
        return None
    rows: list[list[Cell]] = []
    for k in kernels[:TOP]:
        calls = fmt.count(k["calls_min"])
        if k["calls_min"] != k["calls_max"]:
            calls = f"{fmt.count(k['calls_min'])}–{fmt.count(k['calls_max'])}"
        rows.append(
            [
                Text(k["short"] or k["name"]),
                fmt.count(k["ranks"]),
                calls,
                us(k["time_min_us"]),
                us(k["time_median_us"]),
                us(k["time_max_us"]),
                str(k["max_rank"]),
            ]
        )
    header = [("kernel", "name"), *nums("ranks", "calls", "min", "median", "max", "max on")]
    return table(f"GPU work across ranks (of {len(kernels)} names, by median time per rank)", header, rows)


def _steps(run: dict[str, Any]) -> Text | None:
    steps = run["steps"]
    if not steps:
        return None
    text = Text("Slowest rank per step: ", style="bold")
    shown = steps[:MAX_STEPS]
    text.append(", ".join(f"#{s['step']} rank {s['slowest_rank']} ({us(s['slowest_us'])})" for s in shown))
    if len(steps) > len(shown):
        text.append(f", … ({len(steps)} steps)")
    times = run.get("step_times")
    if times:
        text.append("\nStep times across ranks: ", style="bold")
        spread = " · ".join(f"{p} {us(times[f'{p}_us'])}" for p in ("p50", "p90", "p99", "max"))
        worst = times["slowest"][0]
        text.append(f"{spread} ({worst['name']} on rank {worst['rank']}; {times['count']} steps)")
    return text
