"""Measure a GPU's copy bandwidth for working sets that stay in L2, beside the DRAM copy roof.

    python benchmarks/measure_l2.py [--sizes-mib 4 8 16 24 32 40] [--dram-gib 2] [--repeats 200]

Vendors publish no L2 bandwidth, so the roofline's L2 roof (``DeviceSpec.measured_l2_gbs`` in
``tracetui/insight/devices.py``) is measured: ``dst.copy_(src)`` of a buffer pair small enough to stay
in L2 (together under the L2 size), repeated back to back between two CUDA events, counting bytes
read and written as the DRAM figure does (a 2 GiB copy). Prints one line per working set and the
figure to enter (the median of the sets that fit in half of L2, where eviction is rare). Needs
torch with CUDA; run it on the device machine, e.g. ``python benchmarks/measure_l2.py``.
"""

from __future__ import annotations

import argparse
import statistics


def copy_gbs(nbytes: int, repeats: int) -> float:
    """GB/s (10⁹ bytes/s, read + written) of ``repeats`` back-to-back copies of ``nbytes``."""
    import torch as t

    src = t.empty(nbytes // 2, dtype=t.bfloat16, device="cuda").uniform_()
    dst = t.empty_like(src)
    for _ in range(10):  # warm up, and bring both buffers into L2
        dst.copy_(src)
    start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
    t.cuda.synchronize()
    start.record()
    for _ in range(repeats):
        dst.copy_(src)
    end.record()
    t.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3
    return 2 * nbytes * repeats / seconds / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes-mib", type=float, nargs="+", default=[4, 8, 12, 16, 20, 24, 32, 40])
    parser.add_argument("--dram-gib", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    import torch

    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 0)
    print(f"{props.name}: {props.multi_processor_count} SMs, L2 {l2 / 2**20:.1f} MiB")
    dram = copy_gbs(int(args.dram_gib * 2**30), max(5, args.repeats // 50))
    print(f"DRAM copy, {args.dram_gib:g} GiB: {dram:,.0f} GB/s")
    fitting = []
    for mib in args.sizes_mib:
        gbs = copy_gbs(int(mib * 2**20), args.repeats)
        working_set = 2 * mib * 2**20  # source and destination
        note = "in L2" if l2 and working_set <= l2 / 2 else ("near L2 size" if working_set <= l2 else "")
        if note == "in L2":
            fitting.append(gbs)
        print(f"copy of {mib:g} MiB (working set {2 * mib:g} MiB): {gbs:,.0f} GB/s  {note}")
    if fitting:
        print(f"measured_l2_gbs = {statistics.median(fitting):.0f}  # median of the in-L2 sets")


if __name__ == "__main__":
    main()
