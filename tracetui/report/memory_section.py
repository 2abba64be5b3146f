"""The summary's Memory section (rich), over :func:`tracetui.insight.memory_data.memory_data`:
per device the peak and where it happened, what was alive at it by allocating op, the steps'
levels with the leak verdict, and the largest allocations. Trace text stays ``Text``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text

from tracetui import formatting as fmt
from tracetui.insight.memory import NO_OP
from tracetui.report.table import Cell, nums, table
from tracetui.safetext import shown

if TYPE_CHECKING:
    from rich.console import RenderableType

TOP = 10
LARGEST = 5
MAX_STEPS = 8


def memory_renderable(memory: dict[str, Any]) -> RenderableType | None:
    """The section, or None when the trace has no memory events."""
    devices = memory["devices"]
    if not devices:
        return None
    parts: list[RenderableType] = []
    for device in devices:
        parts += _device(device)
    return Group(*parts)


def _op(name: str | None) -> Text:
    return Text(shown(name)) if name is not None else Text(NO_OP, style="dim")  # a trace name


def _device(device: dict[str, Any]) -> list[RenderableType]:
    head = Text(f"Memory on {shown(str(device['device']))}", style="bold")
    reserved = device["peak_reserved_bytes"]
    head.append(
        f": peak {fmt.size(device['peak_allocated_bytes'])} allocated"
        + (f" ({fmt.size(reserved)} reserved at most)" if reserved else "")
        + f", {fmt.size(device['end_allocated_bytes'])} at the end; "
        f"{fmt.count(device['allocations'])} allocations, {fmt.count(device['frees'])} frees"
    )
    where = Text("  the peak: ", style="dim")
    if device["peak_offset_us"] is not None:
        where.append(f"at {fmt.offset(round(device['peak_offset_us'] * 1000), 0)}", style="dim")
    for label, key in (("step", "peak_step"), ("annotation", "peak_annotation")):
        if device[key] is not None:
            where.append(f", {label} ", style="dim")
            where.append(shown(device[key]))
    where.append(", op ", style="dim")
    where.append_text(_op(device["peak_op"]))
    parts: list[RenderableType] = [head, where]
    alive = device["alive_at_peak"]
    before = device["before_trace_at_peak_bytes"]
    if alive or before:
        parts.append(_alive(device, alive, before))
        for label, key, name in (
            ("by step", "alive_at_peak_by_step", "step"),
            ("by annotation", "alive_at_peak_by_annotation", "annotation"),
        ):
            parts.append(_grouped(label, device[key], name))
    if device["ops"] or device["frees_before_trace"]:
        parts.append(_ops(device["ops"], device["frees_before_trace"], device["freed_before_trace_bytes"]))
    steps = _steps(device["steps"])
    if steps is not None:
        parts.append(steps)
    verdict = Text("  end of step: ", style="dim")
    verdict.append(shown(device["verdict"]), style="bold yellow" if device["leak_suspect"] else "")
    parts.append(verdict)
    if device["largest"]:
        parts.append(_largest(device["largest"]))
    return parts


def _alive(device: dict[str, Any], alive: list[dict[str, Any]], before: int) -> RenderableType:
    peak = device["peak_allocated_bytes"] or 0
    rows: list[list[Cell]] = [
        [
            _op(a["op"]),
            fmt.size(a["bytes"]),
            fmt.count(a["count"]),
            fmt.percent(100 * a["bytes"] / peak if peak else None),
        ]
        for a in alive[:TOP]
    ]
    if len(alive) > TOP:
        rest = sum(a["bytes"] for a in alive[TOP:])
        count = sum(a["count"] for a in alive[TOP:])
        rows.append(
            [Text(f"… {len(alive) - TOP} more ops", style="dim"), fmt.size(rest), fmt.count(count), ""]
        )
    if before:
        rows.append(
            [
                Text("(allocated before the trace)", style="dim"),
                fmt.size(before),
                "",
                fmt.percent(100 * before / peak if peak else None),
            ]
        )
    header = [("allocating op", "name"), *nums("bytes", "blocks", "of peak")]
    return table(f"Alive at the peak of {device['device']}, by allocating op", header, rows)


def _grouped(label: str, groups: list[dict[str, Any]], key: str) -> Text:
    """``  alive at the peak by step: ProfilerStep#2 3.0 MiB (4 blocks), …`` (none: outside any)."""
    line = Text(f"  alive at the peak {label}: ", style="dim")
    for n, group in enumerate(groups[:TOP]):
        if n:
            line.append(", ", style="dim")
        if group[key] is None:
            line.append(f"(no {key})", style="dim")
        else:
            line.append(group[key])
        blocks = "block" if group["count"] == 1 else "blocks"
        line.append(f" {fmt.size(group['bytes'])} ({fmt.count(group['count'])} {blocks})")
    if len(groups) > TOP:
        line.append(f", … {len(groups) - TOP} more", style="dim")
    return line


OP_COLUMNS = ("allocated_bytes", "allocs", "freed_bytes", "at_peak_bytes", "at_end_bytes")


def _ops(ops: list[dict[str, Any]], frees_before: int, freed_before: int) -> RenderableType:
    """Per allocating op (by bytes allocated): what it allocated, how much of that was freed
    (wherever the free happened), alive at the peak and at the end (never freed); then the frees
    of blocks allocated before the trace."""
    ranked = sorted(ops, key=lambda o: (-o["allocated_bytes"], o["op"] is None, o["op"] or ""))

    def cells(values: dict[str, int]) -> list[Cell]:
        return [fmt.count(values[k]) if k == "allocs" else fmt.size(values[k]) for k in OP_COLUMNS]

    rows: list[list[Cell]] = [[_op(o["op"]), *cells(o)] for o in ranked[:TOP]]
    if len(ranked) > TOP:
        rest = {k: sum(o[k] for o in ranked[TOP:]) for k in OP_COLUMNS}
        rows.append([Text(f"… {len(ranked) - TOP} more ops", style="dim"), *cells(rest)])
    if frees_before:
        rows.append(
            [Text("(allocated before the trace)", style="dim"), "", "", fmt.size(freed_before), "", ""]
        )
    header = [("allocating op", "name"), *nums("allocated", "blocks", "freed", "at peak", "at end")]
    grid = table(f"Memory by allocating op (of {len(ops)}, by bytes allocated)", header, rows)
    caption = Text(
        "  freed: of those bytes, what the trace freed (in any op); at peak: alive at the peak; "
        "at end: never freed in the trace",
        style="dim",
    )
    return Group(grid, caption)


def _steps(steps: list[dict[str, Any]]) -> RenderableType | None:
    if not steps:
        return None
    shown = steps if len(steps) <= MAX_STEPS else [*steps[: MAX_STEPS - 1], steps[-1]]
    rows: list[list[Cell]] = [
        [
            Text(s["step"] or ""),
            fmt.size(s["start_bytes"]),
            fmt.size(s["peak_bytes"]),
            fmt.size(s["end_bytes"]),
            ("+" if s["change_bytes"] > 0 else "") + fmt.size(s["change_bytes"]),
        ]
        for s in shown
    ]
    if len(shown) < len(steps):
        rows.insert(MAX_STEPS - 1, [Text(f"… {len(steps) - len(shown)} more"), "", "", "", ""])
    return table(None, [("step", "name"), *nums("start", "peak", "end", "change")], rows)


def _largest(largest: list[dict[str, Any]]) -> RenderableType:
    rows: list[list[Cell]] = []
    for a in largest[:LARGEST]:
        life = "alive at the end" if a["alive_at_end"] else fmt.duration(a["lifetime_us"])
        rows.append([_op(a["op"]), fmt.size(a["bytes"]), life, Text(a["annotation"] or a["step"] or "")])
    header = [("largest allocations", "name"), *nums("bytes", "lifetime"), ("in", "text")]
    return table(None, header, rows)
