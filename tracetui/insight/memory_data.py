"""The ``memory`` part of ``summary --json``: per device the peak, what was alive at it, the
steps and the ops (bytes throughout; ``peak_at_us`` is the peak event's ``ts`` as written,
``peak_offset_us`` its time after the trace's first event)."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracetui.insight.memory import DeviceMemory, Memory

LARGEST = 10


def memory_data(memory: Memory, t0_ns: int) -> dict[str, Any]:
    """``{"devices": [...]}``, one entry per device with memory events (none: an empty list);
    ``t0_ns``: the trace's time zero (``peak_offset_us`` counts from it)."""
    return {"devices": [_device(memory, device, t0_ns) for device in memory.devices]}


def _device(memory: Memory, device: DeviceMemory, t0_ns: int) -> dict[str, Any]:
    peak = device.peak
    ops = memory.ops.filter(pl.col("device") == device.device).drop("device")
    return {
        "device": device.device,
        "events": device.events,
        "allocations": device.allocations,
        "frees": device.frees,
        "peak_allocated_bytes": peak["allocated"],
        "peak_reserved_bytes": device.peak_reserved,
        "peak_at_us": peak["ts"],
        "peak_offset_us": None if peak["ts_ns"] is None else (peak["ts_ns"] - t0_ns) / 1000,
        "peak_event_id": peak["id"],
        "peak_step": peak["step"],
        "peak_annotation": peak["annotation"],
        "peak_op": peak["op"],
        "peak_frame": peak["frame"],
        "end_allocated_bytes": device.end_allocated,
        "end_reserved_bytes": device.end_reserved,
        "before_trace_at_peak_bytes": device.before_trace_at_peak,
        "frees_before_trace": device.frees_before_trace,
        "freed_before_trace_bytes": device.freed_before_trace,
        "alive_at_peak": _records(device.alive_by("op")),
        "alive_at_peak_by_annotation": _records(device.alive_by("annotation")),
        "alive_at_peak_by_step": _records(device.alive_by("step")),
        "steps": _records(
            device.steps.select(
                "step",
                pl.col("start").alias("start_bytes"),
                pl.col("peak").alias("peak_bytes"),
                pl.col("end").alias("end_bytes"),
                pl.col("change").alias("change_bytes"),
            )
        ),
        "leak_suspect": device.leak_suspect,
        "verdict": device.verdict,
        "largest": _records(
            memory.largest(LARGEST, device.device).select(
                "id", "ts", "bytes", "op", "annotation", "step", "frame", "lifetime_us", "alive_at_end"
            )
        ),
        "ops": _records(
            ops.rename(
                {
                    "allocated": "allocated_bytes",
                    "freed": "freed_bytes",
                    "net": "net_bytes",
                    "at_peak": "at_peak_bytes",
                    "at_end": "at_end_bytes",
                }
            )
        ),
    }


def _records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return frame.to_dicts()
