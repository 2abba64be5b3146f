"""``tracetui summary``: the one-screen readable report (rich), over :func:`summary_data`.

Every string that came from the trace is wrapped in ``rich.text.Text`` so it is never parsed
as markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from tracetui import formatting as fmt
from tracetui.insight.why_data import path_parts
from tracetui.report.memory_section import memory_renderable
from tracetui.report.table import MISSING, Cell, nums, table
from tracetui.safetext import shown
from tracetui.trace.nesting import PROFILER_OVERLAP

if TYPE_CHECKING:
    from rich.console import RenderableType


TOP = 10
MAX_STEPS = 8


def summary_renderable(data: dict[str, Any]) -> RenderableType:
    """The whole report as one rich renderable."""
    parts: list[RenderableType] = [_header(data)]
    parts += [t for t in (_steps(data), _why(data), _advice(data)) if t is not None]
    parts += [t for t in (_annotations(data), _threads_note(data), _ops(data)) if t is not None]
    parts.append(_no_kernel_line(data))
    parts += [t for t in (_kernels(data), _rooflines(data), _runtime(data), _compile(data)) if t is not None]
    if "memory" in data and (memory := memory_renderable(data["memory"])) is not None:
        parts.append(memory)
    parts.append(_problems(data))
    return Group(*parts)


def _header(data: dict[str, Any]) -> RenderableType:
    info = data["trace"]
    counts = data["counts"]
    lines = Text()
    lines.append(shown(info["name"]), style="bold")  # a file name: outside text
    lines.append(f"  {info['format']}  {fmt.count(info['events'])} events", style="dim")
    for device in info["devices"]:
        lines.append("\n")
        lines.append_text(_device(device))
    lines.append(
        f"\nspan {fmt.duration(info['span_us']) or MISSING}, GPU busy {fmt.duration(info['gpu_busy_us'])}; "
        f"{fmt.count(counts['kernels'])} kernels, {fmt.count(counts['memcpys'])} memcpys, "
        f"{fmt.count(counts['memsets'])} memsets"
    )
    by_cat = ", ".join(f"{cat or '(none)'} {fmt.count(n)}" for cat, n in counts["by_category"].items())
    lines.append("\nevents: ", style="dim")
    lines.append(shown(by_cat), style="dim")
    if info["truncated"]:
        lines.append("\nwarning: the file is truncated; every complete event was read", style="bold yellow")
    for repair in info["repairs"]:
        lines.append(f"\nwarning: repaired: {repair}", style="yellow")
    if info["other_files"]:
        lines.append(
            f"\n{len(info['other_files'])} other trace file(s) in the directory; showing the newest",
            style="dim",
        )
    return lines


def _device(device: dict[str, Any]) -> Text:
    text = Text(f"GPU {device.get('id')}: ")
    text.append(shown(str(device.get("name") or "unknown device")))
    if device.get("arch"):
        text.append(f" ({device['arch']}", style="dim")
        if device.get("numSms"):  # an AMD GPU's multiprocessors are its compute units
            units = "CUs" if device.get("vendor") == "amd" else "SMs"
            text.append(f", {device['numSms']} {units}", style="dim")
        text.append(")", style="dim")
    return text


def _steps(data: dict[str, Any]) -> RenderableType | None:
    steps = data["steps"]
    if not steps:
        return None
    listed = steps if len(steps) <= MAX_STEPS else [*steps[: MAX_STEPS - 1], steps[-1]]
    rows: list[list[Cell]] = [
        [
            Text(s["name"]),
            fmt.duration(s["cpu_us"]) or MISSING,
            fmt.duration(s["gpu_busy_us"]),
            fmt.percent(s.get("gpu_busy_pct")) or MISSING,
            fmt.count(s["kernels"]),
            fmt.count(s["memsets"]),
            fmt.count(s["memcpys"]),
            _bound(s.get("bound")),
        ]
        for s in listed
    ]
    if len(listed) < len(steps):
        more = Text(f"… {fmt.count(len(steps) - len(listed))} more")
        rows.insert(MAX_STEPS - 1, [more, "", "", "", "", "", "", Text("")])
    header = [
        ("step", "name"),
        *nums("CPU", "GPU busy", "busy", "kernels", "memsets", "memcpys"),
        ("bound by", "text"),
    ]
    steps_table = table("Steps", header, rows, drop_zero=("memsets", "memcpys"))
    timed = sorted((s for s in steps if s["cpu_us"] is not None), key=lambda s: s["cpu_us"])
    if not timed:  # no step has a duration
        return steps_table
    median = timed[len(timed) // 2]
    reading = Text("Median step: ", style="bold")
    reading.append(shown(median.get("verdict") or ""))
    reading.append(" (CPU times include the profiler's own overhead)", style="dim")
    return Group(steps_table, reading)


def _median_step(data: dict[str, Any]) -> dict[str, Any] | None:
    """The step of median critical-path length (the one the Why section reads)."""
    steps = [s for s in data["steps"] if s.get("critical_path")]
    if not steps:
        return None
    steps.sort(key=lambda s: (s["critical_path"]["length_us"], s["name"]))
    return steps[len(steps) // 2]


def _why(data: dict[str, Any]) -> RenderableType | None:
    """Why this step is slow: the median step's critical path (its parts and what took most of it),
    its GPU idle time explained and its launch figures."""
    step = _median_step(data)
    if step is None:
        return None
    path = step["critical_path"]
    text = Text("Why this step is slow ", style="bold")
    text.append(
        f"(median step {step['name']}, critical path {fmt.duration(path['length_us'])}): ", style="bold"
    )
    shares = [(label, share) for label, us, share in path_parts(path) if us > 0 and share is not None]
    text.append(", ".join(f"{label} {fmt.percent(100 * share)}" for label, share in shares))
    top = [t for t in path["top"] if t["us"] > 0][:4]
    if top:
        text.append("\n  most of it: ")
        for i, item in enumerate(top):
            if i:
                text.append(", ")
            text.append(shown(_short_name(data, item["name"])))
            text.append(f" {fmt.duration(item['us'])} ({item['kind']})", style="dim")
    idle = step.get("idle")
    if idle is not None:
        text.append("\n  GPU idle ")
        text.append(
            f"{fmt.duration(idle['idle_us'])} ({fmt.percent(idle['idle_pct']) or MISSING} of the window): "
        )
        text.append(
            f"waiting for the host {fmt.duration(idle['host_wait_us'])}, between kernels "
            f"{fmt.duration(idle['kernel_wait_us'])}, other {fmt.duration(idle['other_us'])}"
        )
    launch = step.get("launch")
    if launch is not None and launch.get("launch_delay_p50_us") is not None:
        text.append(
            f"\n  launch delay p50 {fmt.duration(launch['launch_delay_p50_us'])}, p90 "
            f"{fmt.duration(launch['launch_delay_p90_us'])}, "
            f"max {fmt.duration(launch['launch_delay_max_us'])}; "
            f"queue up to {fmt.count(launch['queue_max'])} launched and not started "
            f"(mean {fmt.number(launch['queue_mean'])})",
            style="dim",
        )
    return text


def _short_name(data: dict[str, Any], name: str) -> str:
    """A kernel's decoded short name where the kernels table has it."""
    for kernel in data["kernels"]:
        if kernel["name"] == name:
            return str(kernel.get("short") or name)
    return name


def _advice(data: dict[str, Any]) -> RenderableType | None:
    """What to try: the advice, largest saving first."""
    items = data.get("advice") or []
    text = Text("What to try", style="bold")
    if not items:
        text.append(": nothing stands out (no rule's threshold is met; docs/why.md lists them)", style="dim")
        return text if data["steps"] or data["kernels"] else None
    for i, item in enumerate(items[:5], 1):
        text.append(f"\n  {i}. ")
        text.append(shown(item["action"]))
        text.append(
            f" — saves ~{fmt.duration(item['saving_us'])} per step ({item['confidence']})", style="bold"
        )
        text.append("\n     ")
        text.append(shown(item["evidence"]), style="dim")
    return text


def _annotations(data: dict[str, Any]) -> Table | None:
    if not data["annotations"]:
        return None
    rows: list[list[Cell]] = []
    for a in data["annotations"]:
        kernels = fmt.count(a["kernels_per_call"])
        if a["kernels_min"] != a["kernels_max"]:
            kernels += f" ({fmt.count(a['kernels_min'])}–{fmt.count(a['kernels_max'])})"
        rows.append(
            [
                Text(a["name"]),
                fmt.count(a["calls"]),
                kernels,
                fmt.count(a["memsets_per_call"]),
                fmt.count(a["memcpys_per_call"]),
                fmt.duration(a["gpu_us_per_call"]),
                fmt.duration(a["cpu_us_per_call"]),
                _bound(a.get("bound")),
            ]
        )
    header = [
        ("annotation", "name"),
        *nums("calls", "kernels", "memsets", "memcpys", "GPU", "CPU"),
        ("bound by", "text"),
    ]
    return table("Annotations (per call)", header, rows, drop_zero=("memsets", "memcpys"))


def _threads_note(data: dict[str, Any]) -> Text | None:
    """Whose kernels came from other threads too (the autograd thread's backward): the split of the
    steps and of each annotation, as the details pane shows it."""
    parts = []
    steps = sorted((s for s in data["steps"] if s.get("kernels_split")), key=lambda s: s["kernels"])
    if steps:
        splits = {s["kernels_split"] for s in steps}
        median = steps[len(steps) // 2]
        who = "each step" if len(splits) == 1 and len(steps) == len(data["steps"]) else median["name"]
        parts.append(f"{who} {median['kernels_split']}")
    parts += [
        f"{a['name']} {a['kernels_split']} per call" for a in data["annotations"] if a.get("kernels_split")
    ]
    if not parts:
        return None
    text = Text("Kernels launched by any thread while open: ", style="bold")
    text.append("; ".join(parts))
    return text


def _ops(data: dict[str, Any]) -> Table | None:
    if not data["ops"]:
        return None
    rows: list[list[Cell]] = [
        [
            Text(o["name"]),
            fmt.count(o["calls"]),
            fmt.duration(o["cpu_total_us"]),
            fmt.duration(o["cpu_self_us"]),
            fmt.duration(o["gpu_us"]),
            fmt.kernel_count(o["kernels"], o["gpu_events"]),
        ]
        for o in data["ops"][:TOP]
    ]
    header = [("op", "name"), *nums("calls", "CPU total", "CPU self", "GPU", "kernels")]
    return table(f"Top ops (of {fmt.count(len(data['ops']))}, by GPU time)", header, rows)


def _no_kernel_line(data: dict[str, Any]) -> Text:
    if not data["ops"]:
        return Text("No ops in this trace (no cpu_op events).", style="dim")
    idle = [o["name"] for o in data["ops"] if not o["launches_kernels"]]
    if not idle:
        return Text("Every op launched GPU work.", style="dim")
    text = Text("Launched no GPU work (metadata only or CPU): ", style="bold")
    text.append(
        ", ".join(shown(name) for name in idle[:24])
        + (f", … ({fmt.count(len(idle))} ops)" if len(idle) > 24 else "")
    )
    return text


def _kernels(data: dict[str, Any]) -> Table | None:
    if not data["kernels"]:
        return None
    rows: list[list[Cell]] = []
    for k in data["kernels"][:TOP]:
        launched = ", ".join(k["launched_by"] or k.get("launched_via") or []) or (
            "orphan" if k["orphans"] else "?"
        )
        rows.append(
            [
                Text(k.get("short") or k["name"]),
                fmt.count(k["calls"]),
                fmt.duration(k["total_us"]),
                fmt.duration(k["avg_us"]),
                Text(launched),
            ]
        )
    header = [("kernel (decoded)", "name"), *nums("calls", "total", "avg"), ("launched by", "text")]
    return table(f"Top GPU work (of {fmt.count(len(data['kernels']))} names)", header, rows)


def _rooflines(data: dict[str, Any]) -> Table | None:
    if not data["rooflines"]:
        return None
    rows: list[list[Cell]] = []
    for r in data["rooflines"][:TOP]:
        rate = fmt.number(r["tflops"]) if r["tflops"] is not None else MISSING
        bw = fmt.number(r["gbs"]) if r["gbs"] is not None else MISSING
        roof = (
            f"{r['bound'].removesuffix('-bound')} {fmt.percent(r['roof_fraction'] * 100)}"
            if r["bound"] and r["roof_fraction"] is not None
            else MISSING
        )
        rows.append([Text(r["short"] or r["name"]), fmt.duration(r["time_us"]), rate, bw, roof])
    header = [("kernel (decoded)", "name"), *nums("time", "TFLOP/s", "GB/s", "roof")]
    return table("Roofline (cost from the launching op's shapes)", header, rows)


def _runtime(data: dict[str, Any]) -> Table | None:
    if not data["runtime"]:
        return None
    rows: list[list[Cell]] = [
        [Text(r["name"]), fmt.count(r["calls"]), fmt.duration(r["cpu_us"]), fmt.count(r["gpu_events"])]
        for r in data["runtime"][:TOP]
    ]
    return table("Runtime / driver calls", [("call", "name"), *nums("calls", "CPU", "GPU events")], rows)


def _compile(data: dict[str, Any]) -> Table | None:
    if not data["compile_overheads"]:
        return None
    rows: list[list[Cell]] = [
        [Text(c["name"]), fmt.count(c["calls"]), fmt.duration(c["avg_us"]), fmt.duration(c["total_us"])]
        for c in data["compile_overheads"]
    ]
    return table("torch.compile CPU pre-ops", [("pre-op", "name"), *nums("calls", "avg", "total")], rows)


def _problems(data: dict[str, Any]) -> Text:
    text = Text()
    orphans, anomalies = data["orphans"], data["anomalies"]
    text.append(
        f"Orphans: {fmt.count(orphans['count'])} GPU events with no launching call in the trace",
        style="bold" if orphans["count"] else "dim",
    )
    for o in orphans["items"][:5]:
        text.append("\n  ")
        text.append(
            f"{shown(o['name'])} (id {o['id']}, stream {o['stream']}, correlation {o['correlation']})"
        )
    text.append(
        f"\nAnomalies: {fmt.count(anomalies['count'])}", style="bold" if anomalies["count"] else "dim"
    )
    real = {k: n for k, n in anomalies["by_kind"].items() if k != PROFILER_OVERLAP}
    if real:
        text.append(" (" + ", ".join(f"{k} {fmt.count(n)}" for k, n in real.items()) + ")")
    if anomalies.get("benign"):
        text.append(
            f"; {fmt.count(anomalies['benign'])} benign profiler overlaps (with_stack: record_function's "
            "__enter__/__exit__ frames straddle their annotation; in the anomalies table)",
            style="dim",
        )
    for a in [a for a in anomalies["items"] if a["kind"] != PROFILER_OVERLAP][:5]:
        text.append(f"\n  {a['kind']}: ")
        text.append(f"{shown(str(a.get('event')))} (id {a['event_id']})")
        if a.get("other_id") is not None:
            text.append(f" vs {shown(str(a.get('other')))} (id {a['other_id']})")
    return text


BOUND_LABELS = {"launch-bound": "launches", "gpu-bound": "GPU", "gpu-waits": "waits", "idle": "idle"}


def _bound(bound: str | None) -> str:
    """Short reading for a table cell (the JSON and details carry the full sentence)."""
    return BOUND_LABELS.get(bound or "", bound or "")
