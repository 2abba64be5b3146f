"""``python -m tracetui.workloads.bench``: the GeGLU kernel against copy and Inductor; the MLP per forward.

Prints Markdown tables (docs/workloads.md keeps the H200 figures):
1. device-to-device copy bandwidth (bytes read + written): the ceiling;
2. gelu·mul at [rows, hidden]: this project's Triton kernel, Inductor's fused kernel and eager
   gelu + mul, timed from CUDA-graph replays (no launch overhead; two buffer sets in turn), GB/s
   over the bytes the op must move (read g and u, write out; the backward reads dy, g, u and
   writes dg, du), % of the copy bandwidth, and the kernel's own time read off a trace;
3. the MLP at the blog shape, eager / compiled / triton: GPU time and kernels per forward (from a
   trace), graph-replay time, and ``do_bench`` time (which includes the CPU's launch overhead).
``--sweep`` also times the forward kernel over launch configurations. Exit status 1 when the
kernel misses its goal: ≥ 90% of the copy bandwidth (graph-replay time) and a kernel no slower
than Inductor's (the kernel's duration in a trace, as the blog reads it).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

import torch

from tracetui.workloads.registry import DTYPES, Variant, make_config

if TYPE_CHECKING:
    from tracetui.workloads.geglu_triton import LaunchConfig

COPY_BYTES = 1 << 30
PROFILE_ITERS = 20
GOAL_OF_COPY = 0.90
TRITON_FWD = "triton forward (this project)"
INDUCTOR_FWD = "inductor fused forward"

Buffers = dict[str, torch.Tensor]


def _table(header: list[str], rows: Sequence[Sequence[object]]) -> str:
    lines: list[Sequence[object]] = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(str(c) for c in line) + " |" for line in lines)


def _environment() -> str:
    import triton

    props = torch.cuda.get_device_properties(0)
    return (
        f"{props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}, "
        f"triton {triton.__version__}, CUDA {torch.version.cuda}"
    )


def _buffer_sets(rows: int, hidden: int, dtype: torch.dtype, count: int = 2) -> list[Buffers]:
    def randn() -> torch.Tensor:
        return torch.randn(rows, hidden, device="cuda", dtype=dtype)

    return [
        {
            "g": randn(),
            "u": randn(),
            "dy": randn(),
            "out": torch.empty(rows, hidden, device="cuda", dtype=dtype),
        }
        for _ in range(count)
    ]


def _forward_into(forward: Callable[..., object], buffers: Buffers, *, config: LaunchConfig) -> object:
    """``forward`` (the Triton forward's launcher) on one buffer set, into its ``out``."""
    return forward(buffers["g"], buffers["u"], out=buffers["out"], config=config)


def _rotating(fn: Callable[[Buffers], object], sets: list[Buffers]) -> Callable[[], object]:
    """``fn`` on the next buffer set at each call, so no call finds its inputs in L2."""
    cycle = itertools.cycle(sets)
    return lambda: fn(next(cycle))


def geglu_table(sets: list[Buffers], copy_gbps: float) -> tuple[str, dict[str, tuple[float, float]]]:
    """The gelu·mul kernels; the table and each case's (graph-replay µs, kernel µs from a trace)."""
    from tracetui.workloads.geglu_triton import geglu_backward, geglu_forward
    from tracetui.workloads.gpu_timing import gpu_events, interleaved_us, kernel_median_us
    from tracetui.workloads.mlp import geglu_torch

    inductor = torch.compile(geglu_torch)
    tensor_bytes = sets[0]["g"].numel() * sets[0]["g"].element_size()
    cases: list[tuple[str, Callable[[Buffers], object], str, int]] = [
        (TRITON_FWD, lambda b: geglu_forward(b["g"], b["u"], out=b["out"]), "_geglu_fwd_kernel", 3),
        (INDUCTOR_FWD, lambda b: inductor(b["g"], b["u"]), "triton_", 3),
        ("eager gelu + mul", lambda b: geglu_torch(b["g"], b["u"]), "", 3),
        (
            "triton backward (this project)",
            lambda b: geglu_backward(b["dy"], b["g"], b["u"]),
            "_geglu_bwd_kernel",
            5,
        ),
    ]
    timed = interleaved_us({name: _rotating(body, sets) for name, body, _, _ in cases})
    rows, figures = [], {}
    for name, body, prefix, n_tensors in cases:
        fn = _rotating(body, sets)
        us = timed[name]
        events = gpu_events(fn, PROFILE_ITERS)
        if prefix:
            kernel, kernel_us = kernel_median_us(events, prefix)
        else:  # all of the case's kernels, per call
            kernel = f"{len(events) // PROFILE_ITERS} kernels"
            kernel_us = sum(e.dur_us for e in events) / PROFILE_ITERS
        gbps = n_tensors * tensor_bytes / us / 1e3
        figures[name] = (us, kernel_us)
        rows.append(
            [
                name,
                f"{us:.1f}",
                f"{gbps:.0f}",
                f"{100 * gbps / copy_gbps:.1f}",
                f"{kernel_us:.1f}",
                f"`{kernel[:40]}`",
            ]
        )
    header = ["gelu·mul", "µs (graph replay)", "GB/s", "% of copy", "kernel µs (trace)", "kernel"]
    return _table(header, rows), figures


def sweep_table(sets: list[Buffers], copy_gbps: float, top: int = 12) -> str:
    """Time the forward kernel over block size × warps × eviction hint; the fastest ``top`` rows."""
    from tracetui.workloads.geglu_triton import DEFAULT, LaunchConfig, geglu_forward
    from tracetui.workloads.gpu_timing import GraphTimer

    moved = 3 * sets[0]["g"].numel() * sets[0]["g"].element_size()
    results = []
    for block, warps, evict in itertools.product(
        (512, 1024, 2048, 4096, 8192), (2, 4, 8, 16), ("", "evict_first")
    ):
        if block < 32 * warps:
            continue
        config = LaunchConfig(block=block, num_warps=warps, evict=evict)
        timer = GraphTimer(_rotating(partial(_forward_into, geglu_forward, config=config), sets))
        us = statistics.median(timer.sample(reps=15))
        results.append((us, config))
    results.sort(key=lambda r: r[0])
    rows = [
        [
            c.block,
            c.num_warps,
            c.evict or "-",
            f"{us:.1f}",
            f"{moved / us / 1e3:.0f}",
            f"{100 * moved / us / 1e3 / copy_gbps:.1f}",
            "← default" if c == DEFAULT else "",
        ]
        for us, c in results[:top] + [r for r in results[top:] if r[1] == DEFAULT]
    ]
    return _table(["BLOCK", "num_warps", "eviction", "µs", "GB/s", "% of copy", ""], rows)


def mlp_table(dtype_name: str) -> str:
    """Eager, compiled and Triton MLP forwards at the blog shape: GPU time and kernels per forward."""
    from tracetui.workloads.gpu_timing import GraphTimer, gpu_events, median_us
    from tracetui.workloads.runner import prepare

    rows = []
    for name, variant in (
        ("eager", Variant()),
        ("compiled", Variant(compile=True)),
        ("triton", Variant(kernel="triton")),
    ):
        prepared = prepare(make_config("mlp", variant=variant, dtype=dtype_name), torch.device("cuda"))
        events = gpu_events(prepared.step, PROFILE_ITERS)
        kernels = sum(e.cat == "kernel" for e in events) / PROFILE_ITERS
        memsets = sum(e.cat == "gpu_memset" for e in events) / PROFILE_ITERS
        gpu_us = sum(e.dur_us for e in events) / PROFILE_ITERS
        rows.append(
            [
                name,
                f"{gpu_us:.1f}",
                f"{kernels:g}",
                f"{memsets:g}",
                f"{statistics.median(GraphTimer(prepared.step, calls=10).sample(reps=15)):.1f}",
                f"{median_us(prepared.step):.1f}",
            ]
        )
    header = [
        "mlp forward",
        "GPU µs (trace)",
        "kernels",
        "memsets",
        "µs (graph replay)",
        "µs (do_bench, with launches)",
    ]
    return _table(header, rows)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables; exit 1 when the kernel misses its goal."""
    parser = argparse.ArgumentParser(
        prog="python -m tracetui.workloads.bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--rows", type=int, default=8192, help="rows of g and u (default 8192 = 64 × 128)")
    parser.add_argument("--hidden", type=int, default=3072, help="hidden size (default 3072)")
    parser.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    parser.add_argument(
        "--sweep", action="store_true", help="also time the kernel over launch configurations"
    )
    parser.add_argument("--no-mlp", action="store_true", help="skip the MLP per-forward table")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("python -m tracetui.workloads.bench: needs a CUDA GPU and there is none here", file=sys.stderr)
        return 2
    from tracetui.workloads.gpu_timing import copy_bandwidth_gbps, warm_up_gpu

    torch.manual_seed(0)
    sets = _buffer_sets(args.rows, args.hidden, getattr(torch, DTYPES[args.dtype]))
    moved = 3 * sets[0]["g"].numel() * sets[0]["g"].element_size()
    warm_up_gpu()
    copies = copy_bandwidth_gbps([COPY_BYTES, 256 << 20, moved // 2])
    copy_gbps = max(copies.values())
    print(f"device: {_environment()}\n")
    print(
        _table(
            ["device-to-device copy", "GB/s (read + write)"],
            [[f"{n / 2**20:.0f} MiB", f"{v:.0f}"] for n, v in copies.items()],
        )
    )
    print(
        f"\ngelu·mul at [{args.rows}, {args.hidden}] {args.dtype}: {moved / 1e6:.0f} MB moved per forward\n"
    )
    table, figures = geglu_table(sets, copy_gbps)
    print(table)
    if args.sweep:
        print("\nTriton forward kernel, fastest launch configurations\n")
        print(sweep_table(sets, copy_gbps))
    if not args.no_mlp:
        print(f"\nMLP forward at the blog shape (batch 64, seq 128, dim 768, hidden 3072, {args.dtype})\n")
        print(mlp_table(args.dtype))
    (ours, ours_kernel), (theirs, theirs_kernel) = figures[TRITON_FWD], figures[INDUCTOR_FWD]
    of_copy = moved / ours / 1e3 / copy_gbps
    ok = of_copy >= GOAL_OF_COPY and ours_kernel <= theirs_kernel
    print(
        f"\ngoal (≥ {GOAL_OF_COPY:.0%} of copy in graph replay; kernel no slower than Inductor's, as the "
        f"trace shows it): {'met' if ok else 'MISSED'}: triton {ours:.1f} µs = {of_copy:.1%} of copy, "
        f"kernel {ours_kernel:.1f} µs; inductor {theirs:.1f} µs, kernel {theirs_kernel:.1f} µs"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
