"""``tracetui capture``: the click command, flag validation and what is printed after a capture.

Importing this module needs click and the (torch-free) workload registry only; torch, triton and
the profiling loop are imported when the command runs.
"""

from __future__ import annotations

import importlib
import math
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from tracetui.capture.device import device_for, gpu_count
from tracetui.compare.expectations import load_expectations
from tracetui.errors import EXIT_BAD_INPUT
from tracetui.safetext import shown
from tracetui.workloads.registry import (
    BACKENDS,
    COMPILE_MODES,
    DISTRIBUTED,
    DISTRIBUTED_FLAGS,
    DTYPES,
    KERNELS,
    SHAPE_FLAGS,
    SHAPE_HELP,
    STRAGGLER_MS,
    WORKLOADS,
    ConfigError,
    RunConfig,
    Variant,
    flag_name,
    make_config,
)

if TYPE_CHECKING:
    import torch


class CaptureCommand(click.Command):
    """A click command whose unknown-option error lists every valid option, on one line."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            valid = " ".join(o for p in self.get_params(ctx) for o in p.opts if o.startswith("--"))
            raise click.NoSuchOption(
                exc.option_name, message=f"no such option: {exc.option_name}; valid: {valid}", ctx=ctx
            ) from None


def _shape_help(key: str) -> str:
    defaults = ", ".join(f"{w.name} {w.defaults[key]}" for w in WORKLOADS.values() if key in w.defaults)
    return f"{SHAPE_HELP[key]} [default: {defaults}]."


def _epilog() -> str:
    rows = "\n".join(f"  {w.name:<11} {w.summary}  [{w.flags()}]" for w in WORKLOADS.values())
    return (
        "\b\nWorkloads:\n"
        f"{rows}\n\n"
        "\b\nExamples:\n"
        "  tracetui capture mlp                  # eager, writes mlp_eager.json.gz\n"
        "  tracetui capture mlp --compile        # mlp_compiled.json.gz\n"
        "  tracetui capture mlp --kernel triton --train\n"
        "  tracetui capture mlp --kernel triton-fused   # gate, up and GeGLU in one GEMM kernel\n"
        "  tracetui capture ddp --ranks 4 --straggler 2   # one trace per rank in ./ddp_gloo_4ranks/\n"
        "  tracetui capture fsdp --ranks 2 --backend nccl # ./fsdp_nccl_2ranks/ (a GPU per rank)\n"
    )


def _shape_options(func: click.decorators.FC) -> click.decorators.FC:
    for key in reversed(SHAPE_FLAGS):
        func = click.option(
            flag_name(key), key, type=click.IntRange(min=1), default=None, help=_shape_help(key)
        )(func)
    return func


@click.command(
    "capture", cls=CaptureCommand, epilog=_epilog(), context_settings={"help_option_names": ["-h", "--help"]}
)
@click.argument("workload", type=click.Choice(list(WORKLOADS)), metavar="WORKLOAD")
@click.option("--compile", "compile_", is_flag=True, help="Run the model under torch.compile.")
@click.option(
    "--mode", type=click.Choice(COMPILE_MODES), default=None, help="torch.compile mode (with --compile)."
)
@click.option(
    "--cuda-graph",
    is_flag=True,
    help="Capture the step once in a CUDA graph, replay it while profiling (GPU).",
)
@click.option(
    "--train",
    is_flag=True,
    help="Forward, backward and an AdamW step (labels: WORKLOAD_fwd, backward, optimizer).",
)
@click.option(
    "--kernel",
    type=click.Choice(KERNELS),
    default="torch",
    show_default=True,
    help="mlp: gelu·mul as torch ops, this project's one-pass Triton kernel (triton), or gate, up and "
    "gelu·mul in one Triton GEMM kernel (triton-fused; bf16, fp16) (GPU).",
)
@click.option(
    "--dtype",
    type=click.Choice(list(DTYPES)),
    default=None,
    help="Parameter and input dtype [default: bf16 on a GPU, fp32 on a CPU].",
)
@_shape_options
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Trace file (.json.gz, or .json for plain text) [default: ./WORKLOAD_VARIANT.json.gz]; for ddp "
    "and fsdp the directory of the rank traces [default: ./WORKLOAD_BACKEND_Nranks].",
)
@click.option(
    "--ranks",
    type=click.IntRange(1, 64),
    default=None,
    help="ddp, fsdp: processes, one per rank [default: 2].",
)
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    default=None,
    help="ddp, fsdp: the process group's backend [default: nccl with a GPU per rank, else gloo].",
)
@click.option(
    "--straggler",
    type=click.IntRange(min=0),
    default=None,
    help="ddp, fsdp: this rank spends --straggler-ms on the host in each step's backward.",
)
@click.option(
    "--straggler-ms",
    type=click.FloatRange(0.0, 10_000.0),
    default=None,
    callback=lambda _ctx, _param, value: _finite("--straggler-ms", value),
    help=f"ddp, fsdp: the straggler's delay a step in ms, ± a third at random [default: {STRAGGLER_MS:g}].",
)
@click.option(
    "--steps", type=click.IntRange(1, 100), default=3, show_default=True, help="Active profiler steps."
)
@click.option("--with-stack", is_flag=True, help="Record Python call stacks (a much bigger trace).")
@click.option("--memory", is_flag=True, help="Record memory allocations (profile_memory).")
@click.option("--open", "open_", is_flag=True, help="Open the trace in the explorer afterwards.")
@click.option(
    "--expect",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Check the trace (ddp, fsdp: every rank's trace) against this expectations file afterwards "
    "(like `tracetui check`; exit 1 if any expectation fails).",
)
def capture_command(
    workload: str,
    compile_: bool,
    mode: str | None,
    cuda_graph: bool,
    train: bool,
    kernel: str,
    dtype: str | None,
    output: Path | None,
    steps: int,
    with_stack: bool,
    memory: bool,
    open_: bool,
    expect: Path | None,
    ranks: int | None,
    backend: str | None,
    straggler: int | None,
    straggler_ms: float | None,
    **shapes: int | None,
) -> None:
    """Profile a built-in WORKLOAD with the blog's settings and write a Chrome trace.

    schedule(wait=1, warmup=1, active=STEPS), one record_function label per forward
    (matmul_add_fwd, linear_fwd, mlp_fwd), record_shapes, CPU + CUDA activities. Without a
    GPU the workload runs on the CPU and the trace has CPU ops only.
    """
    variant = Variant(compile=compile_, mode=mode, cuda_graph=cuda_graph, train=train, kernel=kernel)
    config = _config(workload, variant, shapes, dtype)
    if config.workload.distributed:
        _capture_ranks(
            config, dtype, output, ranks or 2, backend, straggler, straggler_ms, steps, open_, expect
        )
        return
    values = (ranks, backend, straggler, straggler_ms)
    given = [flag for flag, value in zip(DISTRIBUTED_FLAGS, values, strict=True) if value is not None]
    if given:
        raise click.UsageError(f"{given[0]} applies to {' and '.join(DISTRIBUTED)} only")
    if output is not None and output.is_dir():
        raise click.UsageError(f"{output} is a directory; -o names the trace file")
    if expect is not None:
        _validate_expectations(expect)
    config, device = _on_device(config, dtype)
    path = output if output is not None else Path(f"{config.file_stem()}.json.gz")

    from tracetui.capture.profile import run_capture

    run_capture(config, path, steps=steps, with_stack=with_stack, memory=memory, device=device)
    click.echo(f"wrote {shown(shlex.quote(str(path)))} ({path.stat().st_size / 1024:.0f} KiB)")
    code = _after(path, open_, expect)
    if code:
        raise click.exceptions.Exit(code)


def _config(
    workload: str, variant: Variant, shapes: dict[str, int | None], dtype: str | None, device: str = "cuda"
) -> RunConfig:
    """The validated configuration, or the UsageError that says what is wrong with the flags."""
    try:
        return make_config(workload, variant=variant, shapes=shapes, dtype=dtype, device=device)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def _on_device(config: RunConfig, dtype: str | None) -> tuple[RunConfig, torch.device]:
    """The device to run on and the configuration with that device's defaults (``dtype``: as the
    user gave it): on a CPU the dtype is fp32 unless given, said in one line."""
    device = device_for(config)
    if device.type == config.device:
        return config, device
    chosen = _config(config.workload.name, config.variant, dict(config.shapes), dtype, device.type)
    if dtype is None and chosen.dtype != config.dtype:
        click.echo(
            f"on the {device.type.upper()} the default dtype is {chosen.dtype}, not {config.dtype} (a CPU "
            f"without AVX-512 BF16 or AMX runs {config.dtype} matmuls ~20x slower); --dtype {config.dtype} "
            f"to run in {config.dtype}",
            err=True,
        )
    return chosen, device


def _finite(flag: str, value: float | None) -> float | None:
    """``value`` unless it is NaN (a float range lets NaN through: no comparison is true of it)."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number", param_hint=f"'{flag}'")
    return value


def _capture_ranks(
    config: RunConfig,
    dtype: str | None,
    output: Path | None,
    ranks: int,
    backend: str | None,
    straggler: int | None,
    straggler_ms: float | None,
    steps: int,
    open_: bool,
    expect: Path | None,
) -> None:
    """``capture ddp|fsdp``: one process per rank, one trace per rank in one directory, then the
    summary of the run and, with ``--expect``, the check of every rank's trace."""
    name = config.workload.name
    if straggler is not None and straggler >= ranks:
        raise click.UsageError(f"--straggler {straggler} is not a rank of {ranks}")
    if straggler is None and straggler_ms is not None:
        raise click.UsageError("--straggler-ms is the delay of --straggler RANK; name the rank")
    if open_:
        raise click.UsageError(f"--open applies to one trace; run `tracetui open DIR` after {name}")
    if expect is not None:
        _validate_expectations(expect)
    config, device = _on_device(config, dtype)
    gpus = gpu_count(device)
    from tracetui.capture.distributed import choose_backend, run_ranks_capture

    chosen = choose_backend(backend, ranks, gpus)
    out_dir = output if output is not None else Path(f"{name}_{chosen}_{ranks}ranks")
    if out_dir.exists() and not out_dir.is_dir():
        raise click.UsageError(f"{out_dir} is a file; -o names the directory of the rank traces for {name}")
    written = run_ranks_capture(
        config,
        out_dir,
        ranks=ranks,
        backend=chosen,
        straggler=straggler,
        straggler_ms=None if straggler is None else STRAGGLER_MS if straggler_ms is None else straggler_ms,
        steps=steps,
        device=device.type,
    )
    size = sum(p.stat().st_size for p in written) / 1024
    where = shown(shlex.quote(str(out_dir)))
    click.echo(f"wrote {len(written)} traces ({chosen}) to {where} ({size:.0f} KiB)")
    _print_run_summary(out_dir)
    if expect is not None:
        code = max((_check(path, expect) for path in written), default=0)
        if code:
            raise click.exceptions.Exit(code)


def _print_run_summary(out_dir: Path) -> None:
    """The summary of a run of rank traces, or one line saying why it could not be printed."""
    _step(
        "summary",
        f"tracetui summary {shlex.quote(str(out_dir))}",
        "tracetui.commands.summary:summarize_traces",
        [out_dir],
    )


def _step(what: str, command: str, target: str, *args: Any) -> Any:
    """Run ``target`` (``"module:function"``) on ``args`` after a capture, imported here: a capture-only
    install has torch, not polars or textual (the optional extras' seam). A missing module is one line
    saying where to run ``command`` instead, and gives ``None``."""
    module, name = target.split(":")
    try:
        return getattr(importlib.import_module(module), name)(*args)
    except ImportError as exc:
        _skipped(what, exc, command)
        return None


def _skipped(what: str, exc: ImportError, command: str) -> None:
    missing = exc.name or "a dependency"
    if missing.startswith("tracetui"):
        reason = f"{missing} is missing from this install"
    else:
        reason = f"{missing} is not installed here"
    click.echo(f"{what} skipped: {reason} (run '{command}' where it is)", err=True)


def _validate_expectations(expect: Path) -> None:
    """Read the expectations file before profiling: a bad one exits 2 without a wasted capture."""

    load_expectations(expect)


def _check(path: Path, expect: Path) -> int:
    """``tracetui check PATH --expect EXPECT``: its exit code, or 2 (one line said) when it cannot run."""
    command = f"tracetui check {shlex.quote(str(path))} --expect {shlex.quote(str(expect))}"
    code = _step("check", command, "tracetui.commands.check:run_check", path, expect)
    return EXIT_BAD_INPUT if code is None else int(code)


def _after(path: Path, open_: bool, expect: Path | None = None) -> int:
    """Print the one-screen summary, check expectations, then open the explorer if asked; degrade
    to one line each. Returns the exit code: the check's, or 2 when it could not run."""
    quoted = shlex.quote(str(path))
    _step("summary", f"tracetui summary {quoted}", "tracetui.commands.summary:summarize", path)
    code = 0 if expect is None else _check(path, expect)
    if open_:
        _step("open", f"tracetui open {quoted}", "tracetui.app.launch:open_trace", path, expect)
    return code
