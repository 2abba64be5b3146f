"""What the details pane says about one node, as Textual ``Content`` (trace text stays plain text).

Pure functions of the trace and the tree model; the pane calls :func:`describe` from a worker.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from textual.content import Content

from tracetui import formatting as fmt
from tracetui.errors import TraceError
from tracetui.insight.kernel_names import decode_kernel_name
from tracetui.insight.kernel_names.cpp import collapse_templates
from tracetui.safetext import MAX_SHOWN, shown
from tracetui.views.distribution import DistributionView, distribution_view
from tracetui.views.insight import Insight
from tracetui.views.memory import node_memory
from tracetui.views.tree import GPU_KINDS, Node, NodeKey, TreeModel

if TYPE_CHECKING:
    from tracetui.insight.memory import Memory
    from tracetui.trace import Trace

LABEL = "$text-muted"
HEADING = "bold $text-accent"
WARN = "$text-warning"
KEY = "bold $text-primary"
MAX_LISTED = 20

NO_KERNEL_REASON = {
    "op": (
        "no kernel: this op launched no GPU work. It only rewrote tensor metadata (shape, strides, "
        "a view) or ran on the CPU: 0 µs of GPU time."
    ),
    "call": "no kernel: this runtime/driver call launched no GPU work (a query, a sync or an allocation).",
    "annotation": "no kernel: no thread of its process launched GPU work while this annotation was open.",
    "step": "no kernel: no thread of its process launched GPU work during this step.",
    "python": "no kernel: nothing below this python frame launched GPU work.",
    "cpu": "no kernel: nothing below this event launched GPU work.",
    "thread": "no kernel: nothing on this thread here launched GPU work.",
}

KERNEL_FIELDS = (
    ("grid", "grid"),
    ("block", "block"),
    ("registers", "registers / thread"),
    ("shared_memory", "shared memory"),
    ("blocks_per_sm", "blocks / SM"),
    ("warps_per_sm", "warps / SM"),
    ("occupancy", "est. occupancy %"),
    ("bytes", "bytes"),
    ("bandwidth", "bandwidth (GB/s)"),
    ("device", "device"),
    ("stream", "stream"),
    ("correlation", "correlation"),
)

DECODED_FIELDS = (
    "family",
    "kind",
    "op",
    "arch",
    "dtype",
    "tile",
    "stages",
    "cluster",
    "layout",
    "mma",
    "alignment",
    "vector_width",
    "variant",
    "kernel_id",
    "collective",
    "reduce_op",
    "algorithm",
    "protocol",
)


class Lines:
    """A small builder of ``Content`` lines."""

    def __init__(self) -> None:
        self.parts: list[Content] = []

    def line(self, *parts: str | tuple[str, str] | Content) -> None:
        """A line of ``parts``; text (trace names, args) as a terminal may show it."""
        self.parts.append(Content.assemble(*(_shown(part) for part in parts)))

    def heading(self, text: str) -> None:
        if self.parts:
            self.parts.append(Content(""))
        self.parts.append(Content.styled(shown(text), HEADING))

    def field(self, label: str, value: Any, style: str = "") -> None:
        if value is None or value == "":
            return
        self.parts.append(Content.assemble((f"  {label:<18} ", LABEL), (shown(str(value)), style)))

    def content(self) -> Content:
        return Content("\n").join(self.parts)


def _shown(part: str | tuple[str, str] | Content) -> str | tuple[str, str] | Content:
    if isinstance(part, str):
        return shown(part)
    if isinstance(part, tuple):
        return shown(part[0]), part[1]
    return part


def describe(
    trace: Trace, model: TreeModel, key: NodeKey, insight: Insight, memory: Memory | None = None
) -> Content:
    """Everything the pane shows for ``key`` (with ``memory``, a CPU node's allocations and frees)."""
    node = model.node(key)
    out = Lines()
    title = display_name(node.full_name)
    if node.is_gpu and title != node.full_name:  # a long kernel name: its decoded short form first
        out.line((node.name, "bold"), ("   " + title, LABEL))
    else:
        out.line((title, "bold"))
    if isinstance(key, tuple):
        _synthetic(out, trace, model, node)
        return out.content()
    event = trace.event(key)
    out.line((_kind_words(node, event), LABEL))
    _times(out, trace, node, event)
    _distribution(out, trace, node, insight)
    if node.kind in GPU_KINDS:
        _launch(out, trace, event)
        _roofline(out, insight.get(key))
        _decoded(out, node, insight.get(key))
        _kernel_config(out, node, event)
    else:
        _verdict(out, insight.get(key))
        _cpu_event(out, trace, model, node, event)
        if memory is not None and memory.present:
            _memory(out, memory, trace, node, event)
    _args(out, trace, key)
    _ancestors(out, trace, model, key)
    _full_name(out, node.full_name)
    return out.content()


def _kind_words(node: Node, event: Mapping[str, Any]) -> str:
    words = {
        "step": "profiler step",
        "annotation": "user annotation",
        "op": "operator",
        "python": "python frame",
        "call": "runtime / driver call",
        "kernel": "GPU kernel",
        "memcpy": "GPU memcpy",
        "memset": "GPU memset",
        "sync": "GPU sync",
    }.get(node.kind, "CPU event")
    where = node.where or f"thread {event['tid']} (pid {event['pid']})"
    return f"{words} · cat {event['cat']} · {where} · id {event['id']}"


def _times(out: Lines, trace: Trace, node: Node, event: Mapping[str, Any]) -> None:
    out.heading("Time")
    out.field("start", fmt.offset(event["start_ns"], trace.t0_ns))
    out.field("duration", fmt.duration(event["dur"]))
    if event.get("cpu_self_us") is not None:
        out.field("self (CPU)", fmt.duration(event["cpu_self_us"]))


def _distribution(out: Lines, trace: Trace, node: Node, insight: Insight) -> None:
    """GPU work: the durations of every call of its name; a step: of every step. The slowest are
    listed, ``s`` walks them."""
    if node.kind in GPU_KINDS:
        row, what = insight.distribution(node.full_name), f"calls of this {node.kind}"
    elif node.kind == "step":
        row, what = insight.step_distribution(), "steps"
    else:
        return
    if row is None or row["calls"] < 2:
        return
    view = distribution_view(row, trace, what, current=node.key if isinstance(node.key, int) else None)
    show_distribution(out, view)


def show_distribution(out: Lines, view: DistributionView) -> None:
    """The histogram as a sparkline over its axis, the percentiles, and the slowest calls."""
    out.heading(view.title)
    out.line((f"  {view.low} ", LABEL), (view.bars, "bold $text-accent"), (f" {view.high}", LABEL))
    out.line("  ", view.stats)
    out.line(("  slowest", LABEL), ("   s: go to each in turn", KEY))
    for call in view.slowest:
        out.line(
            (f"  {call.duration:>10}  ", "bold" if call.current else ""),
            (call.where, LABEL),
            ("  ← this one" if call.current else "", KEY),
        )


def _cpu_event(out: Lines, trace: Trace, model: TreeModel, node: Node, event: Mapping[str, Any]) -> None:
    if model.is_span(node.key):
        out.heading("GPU work launched while open, any thread")
    else:
        out.heading("GPU work launched below")
    if node.no_kernel:
        out.line(("  " + NO_KERNEL_REASON.get(node.kind, NO_KERNEL_REASON["cpu"]), WARN))
    elif not model.has_gpu:
        out.line(("  this trace has no GPU activity", LABEL))
    else:
        out.field("GPU time", fmt.duration(node.gpu_us))
        split = model.thread_split(node.key)
        out.field("kernels", fmt.count(node.kernels) + (f" ({split})" if split else ""))
        out.field("memcpys", fmt.count(node.memcpys))
        out.field("memsets", fmt.count(node.memsets))
        launched = model.launched(node.key)
        if launched.height:
            out.heading(f"Launched ({fmt.count(launched.height)})")
            for row in launched.head(MAX_LISTED).iter_rows(named=True):
                out.line(
                    ("  " + f"{fmt.duration(row['dur']):>9} ", LABEL),
                    model.node(row["id"]).name,
                )
            if launched.height > MAX_LISTED:
                out.line((f"  … {fmt.count(launched.height - MAX_LISTED)} more", LABEL))
    if event.get("op_id") is not None and node.kind in ("call", "python", "cpu"):
        out.heading("Enclosing op")
        out.line("  ", trace.event(event["op_id"])["name"], ("   g: go there", KEY))
    forward = model.forward_of(node.key)
    if forward is not None:
        out.heading("Forward op")
        out.line("  ", trace.event(forward)["name"], ("   f: go there", KEY))


def _memory(out: Lines, memory: Memory, trace: Trace, node: Node, event: Mapping[str, Any]) -> None:
    """The allocations and frees below a CPU node (a step: in its window), with their fates."""
    found = node_memory(memory, trace, dict(event), step=node.kind == "step")
    if found is None:
        return
    out.heading("Memory")
    for level in found.levels:
        out.line(("  " + level, LABEL))
    out.line(("  " + found.summary, KEY))
    for row in found.rows:
        out.line(
            (f"  {row.offset:>14} ", LABEL), (f"{row.size:>12} ", "bold"), row.op, (f"  {row.note}", LABEL)
        )
    if found.more:
        out.line((f"  … {fmt.count(found.more)} more (the Memory table, 7, lists every one)", LABEL))


def _launch(out: Lines, trace: Trace, event: Mapping[str, Any]) -> None:
    out.heading("Launch")
    if event["launch_id"] is None:
        out.line(("  orphan: no runtime call with this correlation id is in the trace", WARN))
        return
    out.field("runtime call", trace.event(event["launch_id"])["name"])
    if event["launch_op_id"] is not None:
        out.line(
            (f"  {'launching op':<18} ", LABEL),
            trace.event(event["launch_op_id"])["name"],
            ("   g: go there", KEY),
        )
    else:
        out.line((f"  {'launching op':<18} ", LABEL), ("none (the call is not inside an op)", LABEL))


def _kernel_config(out: Lines, node: Node, event: Mapping[str, Any]) -> None:
    out.heading("Launch configuration" if node.kind == "kernel" else "GPU event")
    for column, label in KERNEL_FIELDS:
        value = event.get(column)
        if column in ("shared_memory", "bytes") and value is not None:
            value = fmt.size(value)
        out.field(label, value)


def _roofline(out: Lines, row: Mapping[str, Any] | None) -> None:
    """FLOPs and bytes of the launching op spread over its kernels, achieved rates, the verdict; a
    copy's own bytes against the roof of its kind of copy."""
    if row and row.get("copy") is not None:
        _copy(out, row)
        return
    if not row or (row.get("flops") is None and row.get("bytes_read") is None):
        return
    out.heading("Roofline (from the launching op's shapes)")
    out.field("op cost", " ".join(str(v) for v in (row.get("cost_kind"), row.get("cost_dtype")) if v))
    if row.get("flops") is not None:
        out.field("FLOPs", fmt.si(row["flops"], "FLOP"))
    out.field("bytes read", fmt.size(row.get("bytes_read")))
    out.field("bytes written", fmt.size(row.get("bytes_written")))
    if row.get("intensity") is not None:
        out.field("intensity", f"{fmt.number(row['intensity'])} FLOP/B")
    out.field("achieved", _rates(row.get("tflops"), row.get("gbs")))
    out.field("device peak", _rates(row.get("peak_tflops"), row.get("peak_gbs")))
    if row.get("roof_fraction") is not None:
        out.field("of its roof", fmt.percent(row["roof_fraction"] * 100))
    if row.get("verdict"):
        out.line(("  " + row["verdict"], KEY))
    for note in row.get("cost_notes") or ():
        out.line(("  • ", LABEL), (note, LABEL))


def _copy(out: Lines, row: Mapping[str, Any]) -> None:
    """A memcpy: its rate against the roof of what it crosses (device memory, host link, peer link)."""
    out.heading("Copy (its own bytes and time)")
    out.field("copies", COPY_WORDS.get(row["copy"], row["copy"]))
    out.field("achieved", _rates(None, row.get("gbs")))
    out.field("roof", _rates(None, row.get("peak_gbs")))
    if row.get("roof_fraction") is not None:
        out.field("of its roof", fmt.percent(row["roof_fraction"] * 100))
    if row.get("verdict"):
        out.line(("  " + row["verdict"], KEY))


COPY_WORDS = {
    "device": "within device memory",
    "host-pinned": "over the host link, pinned host memory",
    "host-pageable": "over the host link, pageable host memory (staged)",
    "host": "over the host link",
    "peer": "over the peer link, GPU to GPU",
}


def _rates(tflops: float | None, gbs: float | None) -> str:
    """``FLOP/s · B/s`` from TFLOP/s and GB/s, either may be missing."""
    parts = []
    if tflops is not None:
        parts.append(fmt.flops_rate(tflops))
    if gbs is not None:
        parts.append(fmt.byte_rate(gbs))
    return " · ".join(parts)


def _verdict(out: Lines, row: Mapping[str, Any] | None) -> None:
    """A step's or annotation's reading: launch/overhead-bound or GPU-bound, with its numbers."""
    if not row or not row.get("verdict"):
        return
    out.heading("Verdict")
    out.line(("  " + row["verdict"], KEY))
    out.field("GPU busy", fmt.percent(row.get("gpu_busy_pct")))
    out.field("idle gaps ≥ 1 µs", fmt.count(row.get("idle_gaps")))
    out.field("largest gap", fmt.duration(row.get("largest_gap_us")))
    out.field("CPU launching", fmt.duration(row.get("cpu_launch_us")))
    out.field("in synchronize", fmt.duration(row.get("sync_us")))


def _decoded(out: Lines, node: Node, row: Mapping[str, Any] | None) -> None:

    decoded = decode_kernel_name(node.full_name)
    out.heading("Decoded name")
    # the reading's: told apart from the trace's other names, as in the tree and the tables
    out.field("short", (row or {}).get("short") or decoded.short)
    for field in DECODED_FIELDS:
        value = getattr(decoded, field)
        if field == "dtype":
            value = kernel_dtype(value, (row or {}).get("cost_dtype"))
        out.field(field.replace("_", " "), value)
    if decoded.fused_ops:
        out.field("fused ops", ", ".join(decoded.fused_ops))
    for note in decoded.notes:
        out.line(("  • ", LABEL), (note, LABEL))


def kernel_dtype(named: str | None, inputs: str | None) -> str | None:
    """The dtype a kernel computes in: its launching op's recorded types when known (they win over
    what the name says), with a disagreement shown: ``bf16 (launching op's types; the name says fp16)``."""
    if inputs is None:
        return named
    if named is not None and named != inputs:
        return f"{inputs} (launching op's types; the name says {named})"
    return inputs


LONG_NAME = 120  # characters: longer names show shortened, and whole (up to MAX_SHOWN) at the end


def display_name(name: str) -> str:
    """The title line: a long (templated, mangled) name with its templates and parameters collapsed."""
    if len(name) <= LONG_NAME:
        return name

    short = collapse_templates(name)
    return short if len(short) <= LONG_NAME else short[: LONG_NAME - 1] + "…"


def _full_name(out: Lines, name: str) -> None:
    """A long name whole, at the end (past MAX_SHOWN characters cut as every outside text is)."""
    if len(name) <= LONG_NAME:
        return
    out.heading(f"Full name ({fmt.count(len(name))} characters)")
    out.line("  ", (name, LABEL))  # shown() cuts it: "…(+N chars)"
    if len(name) > MAX_SHOWN:
        out.line(("  (whole in `tracetui export --table kernels`)", LABEL))


def _args(out: Lines, trace: Trace, event_id: int) -> None:
    try:
        args = trace.event_args(event_id)
    except TraceError as exc:  # the args' source is gone (a damaged cache entry, a changed file)
        out.heading("Args")
        out.line(("  not readable: ", LABEL), exc.problem)
        return
    if not args:
        return
    out.heading("Args")
    for name, value in args.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out.line((f"  {name}: ", LABEL), text)


def _ancestors(out: Lines, trace: Trace, model: TreeModel, key: int) -> None:
    path = model.path_to(key)
    if not path or len(path) < 2:
        return
    out.heading("Ancestors")
    names = [model.node(k).name for k in path[:-1]]
    if len(names) > 40:
        names = [*names[:10], f"… {len(names) - 20} levels …", *names[-10:]]
    for depth, name in enumerate(names):
        out.line(("  " + "› " * min(depth, 12), LABEL), name)


def _synthetic(out: Lines, trace: Trace, model: TreeModel, node: Node) -> None:
    kind = {"thread": "thread (synthetic node)", "outside": "synthetic node", "orphans": "synthetic node"}
    out.line((kind.get(node.kind, ""), LABEL))
    if node.kind == "thread" and isinstance(node.key, tuple) and node.key[1] is not None:
        step = trace.event(node.key[1])["name"]
        out.line(
            (
                f"  work of this thread inside {step}'s time window; backward ops run on the autograd "
                "thread, outside the main thread's step span.",
                LABEL,
            )
        )
    if node.kind == "orphans":
        out.line(("  GPU work whose launch call is not in the trace (see the orphans table: o)", LABEL))
    out.heading("Totals")
    out.field("CPU time", fmt.duration(node.cpu_us))
    out.field("GPU time", fmt.duration(node.gpu_us))
    out.field("kernels", fmt.count(node.kernels))
    out.field("GPU events", fmt.count(node.gpu_events))
    out.field("children", fmt.count(len(model.children(node.key))))
    if node.start_ns is not None:
        out.field(
            "span", f"{fmt.offset(node.start_ns, trace.t0_ns)} – {fmt.offset(node.end_ns, trace.t0_ns)}"
        )
    if node.no_kernel:
        out.line(("  " + NO_KERNEL_REASON["thread"], WARN))
