"""Benchmark: pairing allocations with their frees, and the whole memory reading.

    python benchmarks/bench_memory.py [--events N] [--runs N] [--trace TRACE]

1. Pairing (:func:`tracetui.insight.memory.pairing.pair_events`) on N memory events (default
   30,000) of a made-up caching-allocator history (64 addresses reused in turn, blocks of a few
   sizes, allocated and freed in random order), side by side with the plain-Python replay that
   it replaces (a dict of open blocks per address, one loop over the events). Goal (issue 15):
   well under 0.1 s for 30k events.
2. With a trace (default: ../shared/traces/llama8_train_stack_memory.json.gz when present): the
   whole memory reading of a loaded trace (:func:`memory_of`: the table, the enclosing ops,
   steps, pairing, peaks, per op and per step), loaded once, timed over the runs.

Median of the runs, each after one warm-up run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from tracetui.insight.memory import memory_of
from tracetui.insight.memory.pairing import pair_events
from tracetui.trace import load

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "llama8_train_stack_memory.json.gz"
)


def history(n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` events of an allocator that reuses 64 addresses: the memory table's pairing columns."""
    rng = random.Random(seed)
    live: dict[int, int] = {}
    addrs: list[int] = []
    sizes: list[int] = []
    while len(addrs) < n:
        free = [a for a in range(64) if a not in live]
        if live and (not free or rng.random() < 0.5):
            addr = rng.choice(list(live))
            size = -live.pop(addr)
        else:
            addr = rng.choice(free)
            size = live[addr] = rng.choice((512, 4096, 1 << 20, 1 << 24))
        addrs.append(addr)
        sizes.append(size)
    return pl.DataFrame(
        {
            "id": range(n),
            "device_type": [1] * n,
            "device_id": [0] * n,
            "addr": [0x7F0000000000 + (a << 26) for a in addrs],
            "bytes": sizes,
            "order": range(n),
            "ts_ns": [1000 * i for i in range(n)],
        },
        schema_overrides={"id": pl.UInt32, "order": pl.UInt32, "addr": pl.Int64, "bytes": pl.Int64},
    ).with_columns(kind=pl.when(pl.col("bytes") > 0).then(pl.lit("alloc")).otherwise(pl.lit("free")))


def python_pairing(events: pl.DataFrame) -> dict[int, int]:
    """The loop pairing replaces: open blocks per (device, address, size), in time order."""
    pairs: dict[int, int] = {}
    open_blocks: dict[tuple[int, int, int, int], int] = {}
    for event_id, kind, index, addr, size in events.select(
        "id", "device_type", "device_id", "addr", "bytes"
    ).iter_rows():
        device = (kind, index)
        if size > 0:
            open_blocks[(*device, addr, size)] = event_id
        elif (start := open_blocks.pop((*device, addr, -size), None)) is not None:
            pairs[start], pairs[event_id] = event_id, start
    return pairs


def timed(label: str, work: Callable[[], object], runs: int) -> float:
    work()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        samples.append(time.perf_counter() - start)
    median = statistics.median(samples)
    spread = ", ".join(f"{s * 1000:.1f}" for s in samples)
    print(f"{label:<52} median {median * 1000:7.1f} ms  (runs: {spread})", flush=True)
    return median


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    args = parser.parse_args()

    events = history(args.events)
    found = pair_events(events)
    expected = python_pairing(events)
    assert dict(zip(found["id"].to_list(), found["pair_id"].to_list(), strict=True)) == expected
    print(f"{args.events:,} memory events, {len(expected) // 2:,} pairs")
    polars_s = timed("pairing, polars (one window shift per group)", lambda: pair_events(events), args.runs)
    loop_s = timed(
        "pairing, plain-Python loop (the replay it replaces)", lambda: python_pairing(events), args.runs
    )
    print(f"polars is {loop_s / polars_s:.1f}x the loop; goal: well under 100 ms")

    if args.trace.exists():
        trace = load(args.trace)
        memory = memory_of(trace)
        print(
            f"\n{args.trace.name}: {memory.events.height:,} memory events, {trace.events.height:,} X events"
        )
        timed("memory_of (table, enclosing ops, steps, pairing, peaks)", lambda: memory_of(trace), args.runs)
    else:
        print(f"\n(no trace at {args.trace}: the whole reading is not timed)")


if __name__ == "__main__":
    main()
