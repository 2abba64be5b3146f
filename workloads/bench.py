"""``python -m workloads.bench``: the GeGLU kernel against copy and Inductor; the MLP per forward.

Prints Markdown tables (docs/workloads.md keeps the H200 figures):
1. device-to-device copy bandwidth (bytes read + written), the ceiling;
2. gelu·mul at [rows, hidden]: this project's Triton kernel, Inductor's fused kernel and eager
   gelu + mul: do_bench median, GB/s over the bytes the op must move (read g and u, write out;
   the backward reads dy, g, u and writes dg, du), % of the copy bandwidth, kernel time from a trace;
3. the MLP at the blog shape, eager / compiled / triton: GPU time and kernels per forward (from a
   trace) and the event-timed time per forward.
``--sweep`` also times the Triton kernel over block sizes and warp counts.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import torch

from workloads.registry import DTYPES, Variant, make_config

COPY_BYTES = 1 << 30
PROFILE_ITERS = 20
GOAL_OF_COPY = 0.90


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: list[str], rows: list[list[object]]) -> str:
    lines = [_row(*header), _row(*["---"] * len(header)), *(_row(*r) for r in rows)]
    return "\n".join(lines)


def _environment() -> str:
    import triton

    props = torch.cuda.get_device_properties(0)
    return (
        f"{props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}, "
        f"triton {triton.__version__}, CUDA {torch.version.cuda}"
    )


def sweep(g: torch.Tensor, u: torch.Tensor, copy_gbps: float) -> str:
    """Time the forward kernel over BLOCK × num_warps; a Markdown table."""
    from workloads.geglu_triton import geglu_forward
    from workloads.gpu_timing import median_us

    out = torch.empty_like(g)
    moved = 3 * g.numel() * g.element_size()
    rows = []
    for block in (1024, 2048, 4096, 8192, 16384):
        for warps in (4, 8, 16):
            us = median_us(lambda b=block, w=warps: geglu_forward(g, u, out=out, block=b, num_warps=w))
            rows.append(
                [
                    block,
                    warps,
                    f"{us:.1f}",
                    f"{moved / us / 1e3:.0f}",
                    f"{100 * moved / us / 1e3 / copy_gbps:.1f}",
                ]
            )
    return _table(["BLOCK", "num_warps", "µs", "GB/s", "% copy"], rows)


def geglu_table(rows: int, hidden: int, dtype: torch.dtype, copy_gbps: float) -> tuple[str, dict[str, float]]:
    """The gelu·mul kernels at [rows, hidden]; the table and the figures the goal is judged on."""
    from workloads.geglu_triton import geglu_backward, geglu_forward
    from workloads.gpu_timing import gpu_events, kernel_median_us, median_us
    from workloads.mlp import geglu_torch

    g = torch.randn(rows, hidden, device="cuda", dtype=dtype)
    u = torch.randn(rows, hidden, device="cuda", dtype=dtype)
    dy = torch.randn(rows, hidden, device="cuda", dtype=dtype)
    out = torch.empty_like(g)
    tensor_bytes = g.numel() * g.element_size()
    inductor = torch.compile(geglu_torch)
    inductor(g, u)
    torch.cuda.synchronize()
    cases: list[tuple[str, Callable[[], object], str, int]] = [
        ("triton forward (this project)", lambda: geglu_forward(g, u, out=out), "_geglu_fwd_kernel", 3),
        ("inductor fused forward", lambda: inductor(g, u), "triton_", 3),
        ("eager gelu + mul (2 kernels)", lambda: geglu_torch(g, u), "", 3),
        ("triton backward (this project)", lambda: geglu_backward(dy, g, u), "_geglu_bwd_kernel", 5),
    ]
    table, figures = [], {}
    for name, fn, prefix, n_tensors in cases:
        us = median_us(fn)
        events = gpu_events(fn, PROFILE_ITERS)
        if prefix:
            kernel, kernel_us = kernel_median_us(events, prefix)
        else:  # all the case's kernels, per call
            kernel = f"{len(events) // PROFILE_ITERS} kernels"
            kernel_us = sum(e.dur_us for e in events) / PROFILE_ITERS
        gbps = n_tensors * tensor_bytes / us / 1e3
        figures[name] = us
        row = [
            name,
            f"{us:.1f}",
            f"{gbps:.0f}",
            f"{100 * gbps / copy_gbps:.1f}",
            f"{kernel_us:.1f}",
            f"`{kernel[:48]}`",
        ]
        table.append(row)
    header = ["gelu·mul", "µs (do_bench median)", "GB/s", "% of copy", "kernel µs (trace)", "kernel"]
    return _table(header, table), figures


def mlp_table(dtype_name: str) -> str:
    """Eager, compiled and Triton MLP forwards at the blog shape: GPU time and kernels per forward."""
    from workloads.gpu_timing import gpu_events, median_us
    from workloads.runner import prepare

    rows = []
    for name, variant in (
        ("eager", Variant()),
        ("compiled", Variant(compile=True)),
        ("triton", Variant(kernel="triton")),
    ):
        prepared = prepare(make_config("mlp", variant=variant, dtype=dtype_name), torch.device("cuda"))
        events = gpu_events(prepared.step, PROFILE_ITERS)
        per = PROFILE_ITERS
        kernels = [e for e in events if e.cat == "kernel"]
        gpu_us = sum(e.dur_us for e in events) / per
        memsets = sum(e.cat == "gpu_memset" for e in events) / per
        rows.append(
            [
                name,
                f"{gpu_us:.1f}",
                f"{len(kernels) / per:g}",
                f"{memsets:g}",
                f"{median_us(prepared.step):.1f}",
            ]
        )
    header = [
        "mlp forward",
        "GPU µs / forward (trace)",
        "kernels / forward",
        "memsets / forward",
        "µs (event median)",
    ]
    return _table(header, rows)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables; exit 1 when the kernel misses its goal."""
    parser = argparse.ArgumentParser(prog="python -m workloads.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8192, help="rows of g and u (default 8192 = 64 × 128)")
    parser.add_argument("--hidden", type=int, default=3072, help="hidden size (default 3072)")
    parser.add_argument("--dtype", choices=list(DTYPES), default="bf16")
    parser.add_argument("--sweep", action="store_true", help="also time the kernel over BLOCK × num_warps")
    parser.add_argument("--no-mlp", action="store_true", help="skip the MLP per-forward table")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("python -m workloads.bench: needs a CUDA GPU and there is none here", file=sys.stderr)
        return 2
    from workloads.gpu_timing import copy_bandwidth_gbps

    dtype = getattr(torch, DTYPES[args.dtype])
    torch.manual_seed(0)
    tensor_bytes = args.rows * args.hidden * torch.finfo(dtype).bits // 8
    copies = {COPY_BYTES: copy_bandwidth_gbps(COPY_BYTES), tensor_bytes: copy_bandwidth_gbps(tensor_bytes)}
    copy_gbps = max(copies.values())
    print(f"device: {_environment()}\n")
    print(
        _table(
            ["device-to-device copy", "GB/s (read + write)"],
            [[f"{n / 2**20:.0f} MiB", f"{v:.0f}"] for n, v in copies.items()],
        )
    )
    moved_mb = 3 * tensor_bytes / 1e6
    print(f"\ngelu·mul at [{args.rows}, {args.hidden}] {args.dtype}: {moved_mb:.0f} MB moved per forward\n")
    table, figures = geglu_table(args.rows, args.hidden, dtype, copy_gbps)
    print(table)
    if args.sweep:
        g = torch.randn(args.rows, args.hidden, device="cuda", dtype=dtype)
        u = torch.randn_like(g)
        print("\nTriton forward kernel, launch configurations\n")
        print(sweep(g, u, copy_gbps))
    if not args.no_mlp:
        print(f"\nMLP forward, blog shape (batch 64, seq 128, dim 768, hidden 3072, {args.dtype})\n")
        print(mlp_table(args.dtype))
    ours, theirs = figures["triton forward (this project)"], figures["inductor fused forward"]
    of_copy = 3 * tensor_bytes / ours / 1e3 / copy_gbps
    ok = of_copy >= GOAL_OF_COPY and ours <= theirs
    print(
        f"\ngoal (≥ {GOAL_OF_COPY:.0%} of copy, no slower than Inductor): {'met' if ok else 'MISSED'} — "
        f"triton {ours:.1f} µs = {of_copy:.1%} of copy; inductor {theirs:.1f} µs"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
