"""``tracetui diff``: the readable report (rich) over :func:`~tracetui.compare.diff_data.diff_data`.

Every string that came from a trace is wrapped in ``rich.text.Text``, never parsed as markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text

from tracetui import formatting as fmt
from tracetui.compare.diff_data import BOTH, ONLY_A, ONLY_B
from tracetui.report.table import MISSING, Cell, table
from tracetui.safetext import shown

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

ROWS = 25  # rows per table; --json has every row
CHANGED = "changed"  # in both, with another count per call (report only)
MARKS = {BOTH: ("=", "dim"), CHANGED: ("~", "yellow"), ONLY_A: ("−", "red"), ONLY_B: ("+", "green")}
LEGEND = "= in both (byte-identical names), ~ in both with another count, − only in A, + only in B"


def diff_renderable(data: dict[str, Any]) -> RenderableType:
    """The whole comparison as one rich renderable."""
    parts: list[RenderableType] = [_header(data)]
    annotations = [s for s in data["scopes"] if s["kind"] == "annotation"]
    for scope in data["scopes"]:
        full = scope["kind"] == "annotation" or not annotations
        parts.extend(_scope(scope, full))
    parts.extend(p for p in (_steps(data), _compile(data)) if p is not None)
    parts.append(_unpaired(data))
    return Group(*parts)


def _header(data: dict[str, Any]) -> Text:
    text = Text()
    for side in ("a", "b"):
        info = data[side]
        text.append(f"{side.upper()}  ", style="bold")
        text.append(shown(info["name"]), style="bold")  # outside text: file names, commands, devices
        if info["command"]:
            text.append(f"  ({shown(info['command'])})", style="dim")
        devices = shown(fmt.tally(str(d) for d in info["devices"] if d)) or "no GPU"
        text.append(
            f"\n   {devices}; {fmt.count(info['steps'])} steps; {fmt.count(info['events'])} events\n",
            style="dim",
        )
    if data["headlines"]:
        text.append("\nWhat changed\n", style="bold")
        for line in data["headlines"]:
            text.append("  • ")
            text.append(shown(line))
            text.append("\n")
    text.append(LEGEND, style="dim")
    return text


def _scope(scope: dict[str, Any], full: bool) -> list[RenderableType]:
    a, b = scope["a"], scope["b"]
    unit = "step" if scope["kind"] == "steps" else "call"
    per = {"steps": " (per step)", "trace": ""}.get(scope["kind"], " (per call)")
    title = Text("\n")
    title.append(
        {"steps": "Per step", "trace": "Whole trace"}.get(scope["kind"], shown(scope["name"])),
        style="bold underline",
    )
    calls = f"{fmt.count(a['calls'])} {unit}s in A, {fmt.count(b['calls'])} in B"
    title.append(f"  ({calls}; numbers per {unit})", style="dim")
    parts: list[RenderableType] = [title, _numbers(a, b)]
    if not full:
        return parts
    parts += [t for t in (_work(scope, per), _chains(scope, per), _launch(scope, per)) if t is not None]
    return parts


def _numbers(a: dict[str, Any], b: dict[str, Any]) -> Table:
    keys = [
        ("kernels", "kernels_per_call", False),
        ("memcpys", "memcpys_per_call", False),
        ("memsets", "memsets_per_call", False),
        ("GPU events", "gpu_events_per_call", False),
        ("GPU time", "gpu_us_per_call", True),
        ("GPU busy", "gpu_busy_us_per_call", True),
        ("CPU time", "cpu_us_per_call", True),
    ]
    rows: list[list[Cell]] = []
    for label, key, is_time in keys:
        if key.startswith("memc") and not (a[key] or b[key]):
            continue
        write = fmt.duration if is_time else fmt.count
        change = fmt.duration_change if is_time else fmt.count_change
        rows.append([label, write(a[key]) or MISSING, write(b[key]) or MISSING, change(a[key], b[key])])
    return table(None, [("", "name"), ("A", "num"), ("B", "num"), ("change", "num")], rows)


def _mark(item: dict[str, Any], key: str = "per_call") -> Text:
    status = item["status"]
    if status == BOTH and item["a"][key] != item["b"][key]:
        status = CHANGED
    mark, style = MARKS[status]
    return Text(mark, style=style)


def _side(item: dict[str, Any], side: str, key: str, shown: Any) -> str:
    values = item[side]
    return (shown(values[key]) or MISSING) if values is not None else MISSING


def _work(scope: dict[str, Any], per: str) -> Table | None:
    items = scope["gpu_work"]
    if not items:
        return None
    rows: list[list[Cell]] = [
        [
            _mark(item),
            Text(item["short"] or item["name"]),
            _side(item, "a", "per_call", fmt.count),
            _side(item, "b", "per_call", fmt.count),
            _side(item, "a", "us_per_call", fmt.duration),
            _side(item, "b", "us_per_call", fmt.duration),
        ]
        for item in items[:ROWS]
    ]
    columns = [("", "mark"), ("kernel (decoded)", "name"), ("A", "num"), ("B", "num")]
    columns += [("A time", "num"), ("B time", "num")]
    return _more(table(f"GPU work{per}", columns, rows), len(items))


def _chains(scope: dict[str, Any], per: str) -> Table | None:
    items = scope["chains"]
    if not items:
        return None
    changed = [i for i in items if i["status"] != BOTH] + [i for i in items if i["status"] == BOTH]
    rows: list[list[Cell]] = [
        [
            _mark(item),
            Text(item["text"]),
            _side(item, "a", "per_call", fmt.count),
            _side(item, "b", "per_call", fmt.count),
            "GPU work" if item["launches"] else "nothing",
        ]
        for item in changed[:ROWS]
    ]
    columns = [("", "mark"), ("chain", "wrap"), ("A", "num"), ("B", "num"), ("launches", "num")]
    return _more(table(f"Dispatch chains{per}", columns, rows), len(items))


def _launch(scope: dict[str, Any], per: str) -> Table | None:
    items = scope["launch_calls"]
    if not items:
        return None
    rows: list[list[Cell]] = [
        [
            _mark(item),
            Text(item["name"]),
            _side(item, "a", "per_call", fmt.count),
            _side(item, "b", "per_call", fmt.count),
            _side(item, "a", "us_per_call", fmt.duration),
            _side(item, "b", "us_per_call", fmt.duration),
        ]
        for item in items[:ROWS]
    ]
    columns = [("", "mark"), ("call", "name"), ("A", "num"), ("B", "num"), ("A CPU", "num"), ("B CPU", "num")]
    return _more(table(f"Runtime / driver calls{per}", columns, rows), len(items))


def _steps(data: dict[str, Any]) -> Table | None:
    if not data["steps"]:
        return None
    rows: list[list[Cell]] = []
    for pair in data["steps"][:ROWS]:
        a, b = pair["a"] or {}, pair["b"] or {}
        rows.append(
            [
                Text(a.get("name", MISSING)),
                Text(b.get("name", MISSING)),
                f"{fmt.count(a.get('kernels')) or MISSING} → {fmt.count(b.get('kernels')) or MISSING}",
                fmt.duration(a.get("gpu_us")) or MISSING,
                fmt.duration(b.get("gpu_us")) or MISSING,
                fmt.duration_change(a.get("gpu_us"), b.get("gpu_us")),
                fmt.duration_change(a.get("cpu_us"), b.get("cpu_us")),
            ]
        )
    columns = [("A step", "name"), ("B step", "name"), ("kernels", "num"), ("A GPU", "num"), ("B GPU", "num")]
    columns += [("GPU change", "num"), ("CPU change", "num")]
    return _more(table("\nSteps (paired by position)", columns, rows), len(data["steps"]))


def _compile(data: dict[str, Any]) -> Table | None:
    items = data["compile_preops"]
    if not items:
        return None
    rows: list[list[Cell]] = [
        [
            _mark(item, "calls"),
            Text(item["name"]),
            _side(item, "a", "calls", fmt.count),
            _side(item, "b", "calls", fmt.count),
            _side(item, "a", "us_per_call", fmt.duration),
            _side(item, "b", "us_per_call", fmt.duration),
        ]
        for item in items
    ]
    columns = [("", "mark"), ("pre-op", "name"), ("A calls", "num"), ("B calls", "num")]
    columns += [("A avg", "num"), ("B avg", "num")]
    return table("\ntorch.compile CPU pre-ops", columns, rows)


def _unpaired(data: dict[str, Any]) -> Text:
    text = Text()
    for side, other in (("a", "B"), ("b", "A")):
        rows = data["unpaired_annotations"][side]
        if rows:
            text.append(f"\nAnnotations only in {side.upper()} (no {other} counterpart): ", style="bold")
            text.append(", ".join(f"{shown(r['name'])} ({fmt.count(r['calls'])} calls)" for r in rows))
    return text


def _more(grid: Table, total: int) -> Table:
    if total > ROWS:
        grid.caption = f"… {total - ROWS} more rows (--json lists all)"
        grid.caption_justify = "left"
    return grid
