"""``python -m tracetui.workloads.bench``: the GeGLU kernels against copy, cuBLAS and Inductor; the MLP.

Prints Markdown tables (docs/workloads.md keeps the H200 figures):
1. device-to-device copy bandwidth (bytes read + written) and a large bf16 GEMM's rate: the ceilings;
2. gelu·mul at [rows, hidden]: this project's Triton kernel, Inductor's fused kernel and eager
   gelu + mul, timed from CUDA-graph replays (no launch overhead; two buffer sets in turn), GB/s
   over the bytes the op must move (read g and u, write out; the backward reads dy, g, u and
   writes dg, du), % of the copy bandwidth, and the kernel's own time read off a trace;
3. the MLP's front half, ``gelu(x @ Wg.T) * (x @ Wu.T)`` at the blog shape: cuBLAS's two GEMMs
   (alone, then with eager gelu + mul or the GeGLU kernel) against the fused gate/up GEMM kernel
   (``--kernel triton-fused``), graph replay over four inputs in turn, TFLOP/s and % of the GEMM floor;
4. the MLP at the blog shape, eager / compiled (default, max-autotune) / triton / triton-fused: GPU
   time and kernels per forward (from a trace), graph-replay time, ``do_bench`` time (which
   includes the CPU's launch overhead), % of the GEMM floor, and the output against eager's and
   against float64.
``--sweep`` also times the GeGLU kernel over launch configurations and lists the fused kernel's
tuning. Exit status 1 when a goal is missed: the GeGLU kernel at ≥ 90% of the copy bandwidth
(graph-replay time) and no slower than Inductor's (the kernel's duration in a trace, as the blog
reads it); the fused MLP correct (see ``FUSED_TOLERANCE``), ≤ 0.75× eager and faster than
max-autotune, its kernel within 85% of cuBLAS's two GEMMs.
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
FUSED_HALF = "fused gate/up GEMM + GeGLU (Triton)"
GEMM_SIZE = 8192  # the square bf16 GEMM whose rate is the matrix ceiling
# ‖out − ref‖ / ‖ref‖ allowed for the fused MLP, against eager's output and against float64: bf16
# (8-bit mantissa) rounds each output by up to 2⁻⁹ ≈ 2e-3, and eager rounds g, u, gelu(g) and h too
FUSED_TOLERANCE = {"bf16": 2e-2, "fp16": 5e-3}
FUSED_OF_EAGER = 0.75  # the fused MLP forward's goal: at most this fraction of eager's time
FUSED_OF_CUBLAS = 0.85  # the fused kernel's goal: cuBLAS's two GEMMs take at least this fraction of its time
FUSED_SETS = 4  # inputs x used in turn when timing the MLP's front half (4 × 12.6 MB: past the L2)
MLP_VARIANTS = (
    ("eager", Variant()),
    ("compiled", Variant(compile=True)),
    # max-autotune's kernels without its own CUDA graphs, so that it is graph-timed like the rest
    ("compiled max-autotune", Variant(compile=True, mode="max-autotune-no-cudagraphs")),
    ("triton", Variant(kernel="triton")),
    ("triton-fused", Variant(kernel="triton-fused")),
)

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


def gemm_tflops(dtype: torch.dtype) -> float:
    """The rate of a large square GEMM on random data (``do_bench`` median): the matrix ceiling."""
    from tracetui.workloads.gpu_timing import median_us

    a, b = (torch.randn(GEMM_SIZE, GEMM_SIZE, device="cuda", dtype=dtype) for _ in range(2))
    return 2 * GEMM_SIZE**3 / median_us(partial(torch.mm, a, b)) / 1e6


def _mlp_shapes() -> dict[str, int]:
    return dict(make_config("mlp").shapes)


def gate_up_table(dtype: torch.dtype, tflops: float) -> tuple[str, dict[str, float]]:
    """The MLP's front half at the blog shape: cuBLAS's two GEMMs (+ eager or Triton gelu·mul)
    against the fused kernel; the table and each case's µs (graph replay)."""
    from tracetui.workloads.fused_mlp_triton import gate_up_geglu_forward, tuning
    from tracetui.workloads.geglu_triton import geglu_forward
    from tracetui.workloads.gpu_timing import gpu_events, interleaved_us, kernel_median_us
    from tracetui.workloads.mlp import geglu_torch

    shapes = _mlp_shapes()
    rows, dim, hidden = shapes["batch"] * shapes["seq"], shapes["dim"], shapes["hidden"]
    wg, wu = (torch.randn(hidden, dim, device="cuda", dtype=dtype) / dim**0.5 for _ in range(2))
    sets = [
        {
            "x": torch.randn(rows, dim, device="cuda", dtype=dtype),
            **{k: torch.empty(rows, hidden, device="cuda", dtype=dtype) for k in ("g", "u", "h")},
        }
        for _ in range(FUSED_SETS)
    ]

    def gemms(b: Buffers) -> None:
        torch.mm(b["x"], wg.t(), out=b["g"])
        torch.mm(b["x"], wu.t(), out=b["u"])

    def gemms_eager_geglu(b: Buffers) -> object:
        gemms(b)
        return geglu_torch(b["g"], b["u"])

    def gemms_triton_geglu(b: Buffers) -> object:
        gemms(b)
        return geglu_forward(b["g"], b["u"], out=b["h"])

    cases: dict[str, Callable[[Buffers], object]] = {
        "cuBLAS gate + up (2 GEMMs)": gemms,
        "cuBLAS 2 GEMMs + eager gelu, mul": gemms_eager_geglu,
        "cuBLAS 2 GEMMs + Triton gelu·mul": gemms_triton_geglu,
        FUSED_HALF: lambda b: gate_up_geglu_forward(b["x"], wg, wu, out=b["h"]),
    }
    gate_up_geglu_forward(sets[0]["x"], wg, wu)  # tunes (every candidate once) before anything is timed
    timed = interleaved_us({name: _rotating(body, sets) for name, body in cases.items()})
    flops = 2 * 2 * rows * dim * hidden
    floor_us = flops / tflops / 1e6
    events = gpu_events(_rotating(cases[FUSED_HALF], sets), PROFILE_ITERS)
    _, kernel_us = kernel_median_us(events, "_gate_up_gemm_geglu_kernel")
    cublas_us = timed["cuBLAS gate + up (2 GEMMs)"]
    table = _table(
        [
            "x @ Wg.T, x @ Wu.T, gelu·mul",
            "µs (graph replay)",
            "TFLOP/s",
            "% of GEMM floor",
            "cuBLAS GEMMs / this",
        ],
        [
            [
                name,
                f"{us:.1f}",
                f"{flops / us / 1e6:.0f}",
                f"{100 * floor_us / us:.1f}",
                f"{cublas_us / us:.2f}",
            ]
            for name, us in timed.items()
        ],
    )
    tuned = tuning(sets[0]["x"], wg)
    best = tuned.best.label() if tuned else "?"
    table += (
        f"\n\n(x [{rows}, {dim}], Wg and Wu [{hidden}, {dim}]; {flops / 1e9:.1f} GFLOP, floor "
        f"{floor_us:.1f} µs at {tflops:.0f} TFLOP/s; the fused kernel's launch: {best}; its duration in a "
        f"trace {kernel_us:.1f} µs)"
    )
    return table, {**timed, "fused kernel (trace)": kernel_us}


def fused_sweep_table(dtype: torch.dtype, tflops: float, top: int = 16) -> str:
    """Every launch the fused kernel's tuner tried at the blog shape, fastest first (its ``do_bench``
    medians, L2 flushed before each call), and the ones that failed."""
    from tracetui.workloads.fused_mlp_triton import gate_up_geglu_forward, tuning

    shapes = _mlp_shapes()
    rows, dim, hidden = shapes["batch"] * shapes["seq"], shapes["dim"], shapes["hidden"]
    x = torch.randn(rows, dim, device="cuda", dtype=dtype)
    wg, wu = (torch.randn(hidden, dim, device="cuda", dtype=dtype) / dim**0.5 for _ in range(2))
    gate_up_geglu_forward(x, wg, wu)
    tuned = tuning(x, wg)
    assert tuned is not None
    flops = 2 * 2 * rows * dim * hidden
    ran = sorted((t.us, i, t) for i, t in enumerate(tuned.timings) if t.us is not None)
    rows_out = [
        [
            t.config.label(),
            f"{us:.1f}",
            f"{flops / us / 1e6:.0f}",
            f"{100 * flops / us / 1e6 / tflops:.1f}",
            t.resources,
            "← chosen" if t.config == tuned.best else "",
        ]
        for us, _, t in ran[:top]
    ]
    failed = [f"{t.config.label()}: {t.error}" for t in tuned.timings if t.us is None]
    header = [
        "launch (block m×n×k, warps, stages)",
        "µs (do_bench)",
        "TFLOP/s",
        "% of GEMM rate",
        "resources",
        "",
    ]
    table = _table(header, rows_out)
    if failed:
        table += "\n\nfailed: " + "; ".join(failed)
    return table


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def _float64_reference(dtype_name: str) -> torch.Tensor:
    """The MLP's output in float64 for the parameters and input every variant is built with."""
    from tracetui.workloads.mlp import build
    from tracetui.workloads.runner import torch_dtype

    torch.manual_seed(0)  # as runner.prepare does, so the same weights and x
    model, x = build(_mlp_shapes(), torch_dtype(dtype_name), torch.device("cuda"))
    model = model.double()
    with torch.no_grad():
        return model(x.double())


def mlp_table(
    dtype_name: str, tflops: float, variants: Sequence[tuple[str, Variant]] = MLP_VARIANTS
) -> tuple[str, dict[str, dict[str, float]]]:
    """The MLP forward at the blog shape, per variant: GPU time and kernels per forward, timings,
    % of the GEMM floor, the output against eager's and against float64; the table and its figures."""
    from tracetui.workloads.gpu_timing import GraphTimer, gpu_events, median_us
    from tracetui.workloads.runner import prepare

    reference = _float64_reference(dtype_name)
    shapes = _mlp_shapes()
    floor_us = 3 * 2 * shapes["batch"] * shapes["seq"] * shapes["dim"] * shapes["hidden"] / tflops / 1e6
    rows, figures, eager_out = [], {}, None
    for name, variant in variants:
        prepared = prepare(make_config("mlp", variant=variant, dtype=dtype_name), torch.device("cuda"))
        out = prepared.forward()
        eager_out = out if eager_out is None else eager_out
        events = gpu_events(prepared.step, PROFILE_ITERS)
        replay = statistics.median(GraphTimer(prepared.step, calls=10).sample(reps=15))
        figures[name] = {
            "gpu_us": sum(e.dur_us for e in events) / PROFILE_ITERS,
            "kernels": sum(e.cat == "kernel" for e in events) / PROFILE_ITERS,
            "memsets": sum(e.cat == "gpu_memset" for e in events) / PROFILE_ITERS,
            "replay_us": replay,
            "do_bench_us": median_us(prepared.step),
            "vs_eager": _rel(out, eager_out),
            "vs_float64": _rel(out, reference),
        }
        f = figures[name]
        rows.append(
            [
                name,
                f"{f['gpu_us']:.1f}",
                f"{f['kernels']:g}",
                f"{f['memsets']:g}",
                f"{replay:.1f}",
                f"{f['do_bench_us']:.1f}",
                f"{replay / figures['eager']['replay_us']:.2f}",
                f"{100 * floor_us / replay:.1f}",
                f"{f['vs_eager']:.1e}",
                f"{f['vs_float64']:.1e}",
            ]
        )
        del prepared, out
    header = [
        "mlp forward",
        "GPU µs (trace)",
        "kernels",
        "memsets",
        "µs (graph replay)",
        "µs (do_bench, with launches)",
        "× eager",
        "% of GEMM floor",
        "‖out − eager‖/‖eager‖",
        "‖out − fp64‖/‖fp64‖",
    ]
    note = (
        f"\n\n(GEMM floor: 3 GEMMs at {tflops:.0f} TFLOP/s = {floor_us:.1f} µs; × eager and % of floor "
        "from graph replay)"
    )
    return _table(header, rows) + note, figures


def fused_goals(dtype_name: str, mlp: dict[str, dict[str, float]] | None, half: dict[str, float]) -> bool:
    """Print the fused MLP's goals, met or not; True when all are met."""
    tolerance = FUSED_TOLERANCE[dtype_name]
    fused = half[FUSED_HALF]
    cublas = half["cuBLAS gate + up (2 GEMMs)"]
    checks = [
        (
            f"fused kernel within {FUSED_OF_CUBLAS:.0%} of cuBLAS's two GEMMs (graph replay)",
            cublas / fused >= FUSED_OF_CUBLAS,
            f"{fused:.1f} µs against {cublas:.1f} µs: {cublas / fused:.2f}",
        )
    ]
    if mlp is not None:
        f, eager, autotune = mlp["triton-fused"], mlp["eager"], mlp["compiled max-autotune"]
        worst = max(f["vs_eager"], f["vs_float64"])
        checks += [
            (
                f"fused MLP correct (‖·‖ relative to eager's and to float64 < {tolerance:g})",
                worst < tolerance,
                f"{f['vs_eager']:.1e} and {f['vs_float64']:.1e} "
                f"(eager against float64: {eager['vs_float64']:.1e})",
            ),
            (
                f"fused MLP ≤ {FUSED_OF_EAGER}× eager",
                f["replay_us"] <= FUSED_OF_EAGER * eager["replay_us"],
                f"{f['replay_us']:.1f} against {eager['replay_us']:.1f} µs: "
                f"{f['replay_us'] / eager['replay_us']:.2f}×",
            ),
            (
                "fused MLP faster than torch.compile max-autotune",
                f["replay_us"] < autotune["replay_us"],
                f"{f['replay_us']:.1f} against {autotune['replay_us']:.1f} µs",
            ),
        ]
    for what, ok, figures in checks:
        print(f"goal ({what}): {'met' if ok else 'MISSED'}: {figures}")
    return all(ok for _, ok, _ in checks)


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
    parser.add_argument(
        "--no-fused", action="store_true", help="skip the fused gate/up kernel's table (and its goals)"
    )
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
    dtype = getattr(torch, DTYPES[args.dtype])
    tflops = gemm_tflops(dtype)
    print(f"device: {_environment()}\n")
    print(f"{GEMM_SIZE}³ {args.dtype} GEMM (torch.mm, random data, do_bench median): {tflops:.0f} TFLOP/s\n")
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
    fused = not args.no_fused and args.dtype in ("bf16", "fp16")
    half: dict[str, float] = {}
    if fused:
        print(f"\nThe MLP's front half at the blog shape, {args.dtype}: {FUSED_SETS} inputs in turn\n")
        table, half = gate_up_table(dtype, tflops)
        print(table)
        if args.sweep:
            print("\nFused gate/up kernel: the launches its tuner timed\n")
            print(fused_sweep_table(dtype, tflops))
    mlp = None
    if not args.no_mlp:
        print(f"\nMLP forward at the blog shape (batch 64, seq 128, dim 768, hidden 3072, {args.dtype})\n")
        variants = MLP_VARIANTS if fused else [v for v in MLP_VARIANTS if v[1].kernel != "triton-fused"]
        table, mlp = mlp_table(args.dtype, tflops, variants)
        print(table)
    (ours, ours_kernel), (theirs, theirs_kernel) = figures[TRITON_FWD], figures[INDUCTOR_FWD]
    of_copy = moved / ours / 1e3 / copy_gbps
    ok = of_copy >= GOAL_OF_COPY and ours_kernel <= theirs_kernel
    print(
        f"\ngoal (≥ {GOAL_OF_COPY:.0%} of copy in graph replay; kernel no slower than Inductor's, as the "
        f"trace shows it): {'met' if ok else 'MISSED'}: triton {ours:.1f} µs = {of_copy:.1%} of copy, "
        f"kernel {ours_kernel:.1f} µs; inductor {theirs:.1f} µs, kernel {theirs_kernel:.1f} µs"
    )
    if fused:
        ok = fused_goals(args.dtype, mlp, half) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
