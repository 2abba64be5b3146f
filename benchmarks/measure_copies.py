"""Measure a GPU's copies by kind: host to device and back (pinned, pageable) and device to device.

    python benchmarks/measure_copies.py [--mib 256] [--repeats 20] [--trace copies.json.gz]

The copy roofs (``tracetui/insight/devices.py``: the host link per direction, half the memory roof
for a device copy) are checked against these: each line gives the median GB/s of ``--repeats``
copies of ``--mib`` MiB, counting the bytes copied once (as a memcpy's ``bytes`` arg and the
trace's ``memory bandwidth (GB/s)`` do). With ``--trace``, one profiled copy of each kind (and a
4-byte one, as ``.item()`` makes) is written as a Chrome trace: the copy fixture of the tests.
Needs torch with CUDA; run it on the device machine.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable


def timed_gbs(copy: Callable[[], object], nbytes: int, repeats: int) -> float:
    """Median GB/s (10⁹ bytes copied per second) of ``repeats`` runs of ``copy``."""
    import torch as t

    for _ in range(3):
        copy()
    t.cuda.synchronize()
    rates = []
    for _ in range(repeats):
        start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        start.record()
        copy()
        end.record()
        t.cuda.synchronize()
        rates.append(nbytes / (start.elapsed_time(end) / 1e3) / 1e9)
    return statistics.median(rates)


def copies(nbytes: int) -> dict[str, Callable[[], object]]:
    """One copy of ``nbytes`` of each kind, by name."""
    import torch as t

    n = nbytes // 4
    device = t.empty(n, dtype=t.float32, device="cuda").uniform_()
    other = t.empty_like(device)
    pinned = t.empty(n, dtype=t.float32).pin_memory()
    pageable = t.empty(n, dtype=t.float32)
    return {
        "HtoD pinned": lambda: device.copy_(pinned, non_blocking=True),
        "DtoH pinned": lambda: pinned.copy_(device, non_blocking=True),
        "HtoD pageable": lambda: device.copy_(pageable),
        "DtoH pageable": lambda: pageable.copy_(device),
        "DtoD": lambda: other.copy_(device),
    }


def write_trace(path: str, nbytes: int) -> None:
    """One profiled copy of each kind, and a 4-byte one, as a Chrome trace at ``path``."""
    import torch as t
    from torch.profiler import ProfilerActivity, profile

    kinds = copies(nbytes)
    scalar = t.ones(1, device="cuda")
    for copy in kinds.values():  # warm
        copy()
    t.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for copy in kinds.values():
            copy()
            t.cuda.synchronize()
        scalar.sum().item()
    prof.export_chrome_trace(path)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mib", type=int, default=256, help="size of each copy (MiB)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--trace", default=None, help="also write a profiled copy of each kind here")
    parser.add_argument("--trace-mib", type=int, default=64, help="size of each traced copy (MiB)")
    args = parser.parse_args()
    import torch as t

    nbytes = args.mib << 20
    print(f"{t.cuda.get_device_name()}: {args.mib} MiB copies, median of {args.repeats}")
    for name, copy in copies(nbytes).items():
        print(f"  {name:<14} {timed_gbs(copy, nbytes, args.repeats):8.1f} GB/s copied")
    if args.trace:
        write_trace(args.trace, args.trace_mib << 20)
        print(f"wrote {args.trace}")


if __name__ == "__main__":
    main()
