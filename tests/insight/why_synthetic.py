"""Synthetic steps whose critical path and idle time are known by construction (issue 39).

One thread launches kernels one op at a time on one stream; each kernel starts when both its launch
call has returned (plus a latency) and the kernel before it has ended, as a GPU does. What the walk
must find follows from that construction alone (:func:`expected_path`), not from tracetui's code:
walking back from the step's end, a kernel that started right at the end of the one before it was
queued behind it (the chain goes on), one that started after its launch returned waited for the
host (the path goes to the launch). An optional ``.item()`` (``aten::_local_scalar_dense`` with a
synchronous device-to-host copy) ends the step, and annotations can mark a data loader or an
optimizer step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PID, TID, STREAM = 7, 7, 7
LATENCY = 2.0  # µs from a launch call's end to the earliest start of its kernel
Event = dict[str, Any]


@dataclass(frozen=True)
class Launch:
    """One op: ``gap`` µs of untraced host time before it, ``cpu`` µs of op (its launch call inside,
    ``call`` µs long, ending 1 µs before the op), then a kernel of ``kernel`` µs."""

    gap: float
    cpu: float
    call: float
    kernel: float


@dataclass
class Built:
    document: dict[str, Any]
    step_start: float
    step_end: float
    kernels: list[tuple[float, float]] = field(default_factory=list)  # (start, end)
    item_call: tuple[float, float] = (0.0, 0.0)
    item_op: tuple[float, float] = (0.0, 0.0)
    launches: list[tuple[float, float]] = field(default_factory=list)  # the calls' (start, end)
    ops: list[tuple[float, float]] = field(default_factory=list)


def _x(cat: str, name: str, ts: float, dur: float, pid: int = PID, tid: int = TID, **args: Any) -> Event:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": round(ts, 3),
        "dur": round(dur, 3),
        "args": args,
    }


def build(
    launches: list[Launch], tail: float = 5.0, item: bool = False, annotation: str | None = None
) -> Built:
    """A trace of one step: the launches, then ``tail`` µs of host time (or an ``.item()``)."""
    events: list[Event] = []
    t = 1000.0
    step_start = t
    previous_end = 0.0
    built = Built({}, step_start, 0.0)
    for index, launch in enumerate(launches):
        t += launch.gap
        op_start = t
        call_end = op_start + launch.cpu - 1.0
        call_start = call_end - launch.call
        correlation = 100 + index
        events.append(
            _x("cpu_op", f"aten::op{index % 3}", op_start, launch.cpu, **{"External id": index + 1})
        )
        events.append(
            _x("cuda_runtime", "cudaLaunchKernel", call_start, launch.call, correlation=correlation)
        )
        start = max(call_end + LATENCY, previous_end)
        events.append(
            _x(
                "kernel",
                f"kernel_{index % 4}",
                start,
                launch.kernel,
                pid=0,
                tid=STREAM,
                correlation=correlation,
                stream=STREAM,
                device=0,
            )
        )
        built.kernels.append((round(start, 3), round(start + launch.kernel, 3)))
        built.launches.append((round(call_start, 3), round(call_end, 3)))
        built.ops.append((round(op_start, 3), round(op_start + launch.cpu, 3)))
        previous_end = start + launch.kernel
        t = op_start + launch.cpu
    if item:
        op_start = t + 1.0
        call_start = op_start + 1.0
        copy_start = max(call_start + 1.0, previous_end)
        copy_end = copy_start + 2.0
        call_end = copy_end + 1.0
        op_end = call_end + 1.0
        correlation = 900
        events.append(_x("cpu_op", "aten::_local_scalar_dense", op_start, op_end - op_start))
        events.append(
            _x("cuda_runtime", "cudaMemcpyAsync", call_start, call_end - call_start, correlation=correlation)
        )
        events.append(
            _x(
                "gpu_memcpy",
                "Memcpy DtoH (Device -> Pageable)",
                copy_start,
                2.0,
                pid=0,
                tid=STREAM,
                correlation=correlation,
                stream=STREAM,
                device=0,
                bytes=4,
            )
        )
        built.kernels.append((round(copy_start, 3), round(copy_end, 3)))
        built.item_call = (round(call_start, 3), round(call_end, 3))
        built.item_op = (round(op_start, 3), round(op_end, 3))
        t = op_end
        step_end = t + tail
    else:
        step_end = max(t, previous_end) + tail  # the host outlasts the GPU
    if annotation is not None:
        events.append(_x("user_annotation", annotation, step_start + 0.5, step_end - step_start - 1.0))
    events.append(_x("user_annotation", "ProfilerStep#1", step_start, step_end - step_start))
    events.append(
        {
            "name": "thread_name",
            "ph": "M",
            "ts": 0,
            "pid": PID,
            "tid": TID,
            "args": {"name": "thread 7 (python3)"},
        }
    )
    built.step_end = round(step_end, 3)
    built.document = {"schemaVersion": 1, "deviceProperties": [], "traceEvents": events}
    return built


def expected_path(built: Built, item: bool) -> dict[str, float]:
    """The critical path's parts by construction. Without ``item`` the GPU is done before the host
    (the builder's tail outlasts it): the path is the thread's time, op self time as CPU, calls as
    launches, the rest as gaps. With ``item`` the host waits for the copy at the end: the path is the
    tail and the op's time after the call (host), the wait from the copy's end to the call's return
    (sync), the copy, then back along the stream while each work was queued behind the one before it
    (its call started before that one ended: the gap between them is a launch cost), to the first
    work that waited for its launch (the launch latency), then the thread up to that launch's end."""
    parts = dict.fromkeys(("cpu_us", "gpu_us", "launch_us", "sync_wait_us", "gap_us"), 0.0)
    start, end = built.step_start, built.step_end
    calls = list(built.launches)
    if not item:
        _thread(built.ops, calls, start, end, parts)
        parts["gap_us"] = (end - start) - parts["cpu_us"] - parts["launch_us"]
        return parts
    copy_end = built.kernels[-1][1]
    call_start, call_end = built.item_call
    op_start, op_end = built.item_op
    parts["gap_us"] += end - op_end
    parts["cpu_us"] += op_end - call_end
    parts["sync_wait_us"] += call_end - copy_end
    work = [*built.kernels]
    calls.append((call_start, call_end))
    index = len(work) - 1
    while True:
        w_start, w_end = work[index]
        parts["gpu_us"] += w_end - w_start
        previous = work[index - 1][1] if index > 0 else None
        if previous is None or calls[index][0] > previous:  # waited for its launch
            at = min(calls[index][1], w_start)
            parts["launch_us"] += w_start - at
            break
        parts["launch_us"] += max(w_start - previous, 0.0)
        index -= 1
    if index == len(work) - 1:  # the copy itself waited for its call: the path enters the call
        parts["sync_wait_us"] += at - call_start
        parts["cpu_us"] += call_start - op_start
        covered = _thread(built.ops, calls, start, op_start, parts) + (at - op_start)
    else:
        covered = _thread(built.ops[: index + 1], calls[: index + 1], start, at, parts)
    parts["gap_us"] += (at - start) - covered
    return parts


def _thread(
    ops: list[tuple[float, float]],
    calls: list[tuple[float, float]],
    start: float,
    t: float,
    parts: dict[str, float],
) -> float:
    """Adds the ops' self time and the calls' time in ``[start, t]``; returns the ops' time there."""
    covered = 0.0
    for (o_start, o_end), (c_start, c_end) in zip(ops, calls, strict=False):
        op_part = max(0.0, min(o_end, t) - max(o_start, start))
        call_part = max(0.0, min(c_end, t) - max(c_start, start))
        parts["cpu_us"] += op_part - call_part
        parts["launch_us"] += call_part
        covered += op_part
    return covered
