"""Measure a GPU's copy bandwidth for working sets that stay in L2, beside the DRAM copy roof.

    python benchmarks/measure_l2.py [--sizes-mib 4 8 16 24 32 40] [--dram-gib 2] [--repeats 200]

Vendors publish no L2 bandwidth, so the roofline's L2 roof (``DeviceSpec.measured_l2_gbs`` in
``tracetui/insight/devices.py``) is measured. Two ways, side by side:

- ``dst.copy_(src)`` of a buffer pair small enough to stay in L2, repeated back to back between two
  CUDA events, counting bytes read and written as the DRAM figure does (a 2 GiB copy). On the H200
  this is *launch-bound*: a 4–12 MiB copy lasts a few µs, and each kernel's start and tail cost as
  much, so it measures below DRAM (1.2–3.9 TB/s against 4.2 TB/s).
- One Triton kernel (``--triton``) whose programs read an L2-resident buffer over and over with
  volatile loads (never hoisted out of the loop, served by L2, not L1), a different slice each
  pass: the L2's read bandwidth with one launch. Checked against the same kernel on a 2 GiB buffer
  (DRAM).

Prints one line per working set and the figure to enter (the median of the sets that fit in half
of L2, where eviction is rare). Needs torch with CUDA (and triton for ``--triton``); run it on the
device machine, e.g. ``python benchmarks/measure_l2.py --triton``.
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


def read_loop_gbs(nbytes: int, passes: int) -> float:
    """GB/s read by one Triton kernel that reads an ``nbytes`` buffer ``passes`` times."""
    import torch as t
    import triton
    import triton.language as tl

    @triton.jit
    def read_loop(src, out, n, passes, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        pid = tl.program_id(0)
        programs = tl.num_programs(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        chunks = tl.cdiv(n, BLOCK)
        for p in range(passes):
            for c in range((pid + p) % programs, chunks, programs):  # another slice each pass
                offs = c * BLOCK + tl.arange(0, BLOCK)
                acc += tl.load(src + offs, mask=offs < n, other=0.0, volatile=True).to(tl.float32)
        tl.store(out + pid * BLOCK + tl.arange(0, BLOCK), acc)

    block = 2048
    src = t.empty(nbytes // 2, dtype=t.bfloat16, device="cuda").uniform_()
    programs = t.cuda.get_device_properties(0).multi_processor_count * 8
    out = t.empty(programs * block, dtype=t.float32, device="cuda")
    read_loop[(programs,)](src, out, src.numel(), 2, BLOCK=block)  # compile, warm L2
    start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
    t.cuda.synchronize()
    start.record()
    read_loop[(programs,)](src, out, src.numel(), passes, BLOCK=block)
    end.record()
    t.cuda.synchronize()
    return nbytes * passes / (start.elapsed_time(end) / 1e3) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes-mib", type=float, nargs="+", default=[4, 8, 12, 16, 20, 24, 32, 40])
    parser.add_argument("--dram-gib", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--triton", action="store_true", help="also the single-kernel read loop")
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
        print(f"copies: median of the in-L2 sets {statistics.median(fitting):,.0f} GB/s")
    if args.triton:
        dram_read = read_loop_gbs(int(args.dram_gib * 2**30), 3)
        print(f"read loop, {args.dram_gib:g} GiB (DRAM): {dram_read:,.0f} GB/s")
        in_l2 = []
        for mib in args.sizes_mib:
            gbs = read_loop_gbs(int(mib * 2**20), max(50, args.repeats))
            note = "in L2" if l2 and mib * 2**20 <= l2 / 2 else ("near L2 size" if mib * 2**20 <= l2 else "")
            if note == "in L2":
                in_l2.append(gbs)
            print(f"read loop of {mib:g} MiB: {gbs:,.0f} GB/s  {note}")
        if in_l2:
            print(f"measured_l2_gbs = {statistics.median(in_l2):.0f}  # median of the in-L2 read loops")


if __name__ == "__main__":
    main()
