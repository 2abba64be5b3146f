"""The workloads, their defaults and the variant flags, as plain data (importing this needs no torch).

A :class:`RunConfig` is one fully validated experiment: which workload, which variant (eager,
compiled, CUDA graph, training, Triton kernel), which shapes and dtype. ``make_config`` turns
user flags into one, or raises :class:`ConfigError` with a one-line message that lists the
valid values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SHAPE_FLAGS: tuple[str, ...] = ("batch", "seq", "dim", "hidden", "in_dim", "out_dim")
SHAPE_HELP: dict[str, str] = {
    "batch": "Batch size (rows of the input)",
    "seq": "Sequence length (mlp input is [batch, seq, dim])",
    "dim": "Model width",
    "hidden": "GeGLU hidden width",
    "in_dim": "Input features",
    "out_dim": "Output features",
}
# short name -> torch dtype attribute
DTYPES: dict[str, str] = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
KERNELS: tuple[str, ...] = ("torch", "triton", "triton-fused")
# dtypes the fused gate/up GEMM kernel (--kernel triton-fused) computes in
FUSED_DTYPES: tuple[str, ...] = ("bf16", "fp16")
CPU_DTYPE = "fp32"
"""The default dtype where there is no CUDA GPU: a CPU without native bf16 (AVX-512 BF16, AMX)
emulates bf16 matmuls (``capture mlp``'s default shapes took 4 min 16 s in bf16 on such a machine,
12.6 s in fp32); with it, bf16 is about twice as fast as fp32 (22.6 s against 35.9 s on this
project's 2-core EPYC), so fp32 is the default that is never far off."""
COMPILE_MODES: tuple[str, ...] = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# torch.compile modes that already capture and replay CUDA graphs themselves
CUDAGRAPH_MODES: frozenset[str] = frozenset({"reduce-overhead", "max-autotune"})


class ConfigError(ValueError):
    """A flag combination that makes no experiment; the message is one line for the user."""


@dataclass(frozen=True)
class Workload:
    """One experiment of the blog: a module with ``build(shapes, dtype, device, kernel)``."""

    name: str
    label: str  # the record_function label around each forward
    module: str  # dotted path of the module that builds it
    defaults: Mapping[str, int]  # shape flag -> default; the keys are the flags it accepts
    summary: str
    kernels: tuple[str, ...] = ("torch",)
    dtype: str = "bf16"
    distributed: bool = False  # one process per rank (tracetui capture ddp|fsdp --ranks N)

    def flags(self) -> str:
        """The shape flags this workload accepts, as they are spelled on the command line."""
        return " ".join(flag_name(k) for k in self.defaults)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            name="matmul-add",
            label="matmul_add_fwd",
            module="tracetui.workloads.matmul_add",
            defaults={"batch": 1024, "in_dim": 32, "out_dim": 64},
            summary="torch.add(torch.matmul(x, w), b)",
        ),
        Workload(
            name="linear",
            label="linear_fwd",
            module="tracetui.workloads.linear",
            defaults={"batch": 1024, "in_dim": 32, "out_dim": 64},
            summary="nn.Linear(in, out, bias=True)",
        ),
        Workload(
            name="mlp",
            label="mlp_fwd",
            module="tracetui.workloads.mlp",
            defaults={"batch": 64, "seq": 128, "dim": 768, "hidden": 3072},
            summary='GeGLU MLP: down(gelu(gate(x), approximate="tanh") * up(x))',
            kernels=KERNELS,
        ),
        Workload(
            name="transformer-block",
            label="transformer_block_fwd",
            module="tracetui.workloads.transformer_block",
            defaults={"batch": 32, "seq": 512, "dim": 1024, "hidden": 4096},
            summary="pre-norm block: x + attn(ln(x)) (causal SDPA, dim/64 heads), then + mlp(ln(x))",
        ),
        Workload(
            name="ddp",
            label="ddp_step",
            module="tracetui.workloads.ddp",
            defaults={"batch": 16, "seq": 128, "dim": 768, "hidden": 3072},
            summary="DDP training of the GeGLU MLP, one process per rank (--ranks, --backend, --straggler)",
            distributed=True,
        ),
        Workload(
            name="fsdp",
            label="fsdp_step",
            module="tracetui.workloads.fsdp",
            defaults={"batch": 16, "seq": 128, "dim": 768, "hidden": 3072},
            summary="FSDP2 (fully_shard) training of the GeGLU MLP, one process per rank (as ddp)",
            distributed=True,
        ),
    )
}
DISTRIBUTED_FLAGS: tuple[str, ...] = ("--ranks", "--backend", "--straggler", "--straggler-ms")
STRAGGLER_MS = 6.0  # the straggler's host delay a step (ddp, fsdp), a third either way at random
BACKENDS: tuple[str, ...] = ("gloo", "nccl")
DISTRIBUTED: tuple[str, ...] = tuple(w.name for w in WORKLOADS.values() if w.distributed)


def flag_name(key: str) -> str:
    """``in_dim`` -> ``--in-dim``."""
    return "--" + key.replace("_", "-")


def get_workload(name: str) -> Workload:
    """The workload called ``name``, or a ConfigError listing the valid names."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ConfigError(f"unknown workload {name!r}; choose one of: {', '.join(WORKLOADS)}") from None


@dataclass(frozen=True)
class Variant:
    """How a workload runs: the flags that change which kernels a trace shows."""

    compile: bool = False
    mode: str | None = None  # torch.compile mode; None means torch's default
    cuda_graph: bool = False
    train: bool = False
    kernel: str = "torch"

    def gpu_flags(self) -> list[str]:
        """The flags of this variant that need a CUDA GPU."""
        flags = {f"--kernel {self.kernel}": self.kernel != "torch", "--cuda-graph": self.cuda_graph}
        return [flag for flag, on in flags.items() if on]

    def tags(self) -> list[str]:
        """Short words naming the variant, in file-name order (``["triton", "train"]``, ``["triton_fused"]``:
        a kernel's ``-`` is an ``_``)."""
        tags: list[str] = []
        if self.kernel != "torch":
            tags.append(self.kernel.replace("-", "_"))
        if self.compile:
            tags.append("compiled" if self.mode in (None, "default") else f"compiled-{self.mode}")
        if self.cuda_graph:
            tags.append("cudagraph")
        if not tags:
            tags.append("eager")
        if self.train:
            tags.append("train")
        return tags


@dataclass(frozen=True)
class RunConfig:
    """A validated experiment: workload, variant, shapes and dtype."""

    workload: Workload
    variant: Variant
    shapes: Mapping[str, int] = field(default_factory=dict)
    dtype: str = "bf16"
    device: str = "cuda"
    """The device type the defaults were chosen for (``cuda``, ``cpu``)."""

    def file_stem(self) -> str:
        """Default trace name without extension, e.g. ``mlp_triton_train`` or ``matmul_add_eager``
        (the dtype is named when it is not the device's default)."""
        parts = [self.workload.name.replace("-", "_"), *self.variant.tags()]
        if self.dtype != default_dtype(self.workload, self.device):
            parts.append(self.dtype)
        return "_".join(parts)

    def describe(self) -> str:
        """One line for progress messages: ``mlp (triton, train) [64x128x768, hidden 3072] bf16``."""
        shapes = " ".join(f"{k}={v}" for k, v in self.shapes.items())
        return f"{self.workload.name} ({', '.join(self.variant.tags())}) {shapes} {self.dtype}"


def default_dtype(workload: Workload, device: str = "cuda") -> str:
    """The dtype a workload runs in unless told: its own on a GPU, :data:`CPU_DTYPE` elsewhere."""
    return workload.dtype if device == "cuda" else CPU_DTYPE


def make_config(
    name: str,
    *,
    variant: Variant | None = None,
    shapes: Mapping[str, int | None] | None = None,
    dtype: str | None = None,
    device: str = "cuda",
) -> RunConfig:
    """Validate user flags into a RunConfig; ``None`` values mean "the workload's default" (the
    dtype's: :func:`default_dtype` on ``device``, the device type it will run on).

    Raises ConfigError (one line, listing the valid values) for an unknown workload, dtype,
    kernel or compile mode, a shape flag the workload does not take, a non-positive size, or
    a contradictory variant.
    """
    workload = get_workload(name)
    variant = variant or Variant()
    given = {k: v for k, v in (shapes or {}).items() if v is not None}
    for key, value in given.items():
        if key not in SHAPE_FLAGS:
            raise ConfigError(
                f"unknown shape {key!r}; shape flags are: {' '.join(map(flag_name, SHAPE_FLAGS))}"
            )
        if key not in workload.defaults:
            raise ConfigError(
                f"{flag_name(key)} does not apply to {workload.name}; its shape flags are: {workload.flags()}"
            )
        if value < 1:
            raise ConfigError(f"{flag_name(key)} must be at least 1, got {value}")
    dtype = dtype or default_dtype(workload, device)
    if dtype not in DTYPES:
        raise ConfigError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPES)}")
    if variant.kernel not in KERNELS:
        raise ConfigError(f"unknown kernel {variant.kernel!r}; choose one of: {', '.join(KERNELS)}")
    if workload.distributed and (bad := variant.gpu_flags() + (["--compile"] if variant.compile else [])):
        raise ConfigError(f"{bad[0]} does not apply to {workload.name}")
    if variant.kernel not in workload.kernels:
        users = ", ".join(w.name for w in WORKLOADS.values() if variant.kernel in w.kernels)
        raise ConfigError(f"--kernel {variant.kernel} applies to {users} only, not {workload.name}")
    if variant.kernel == "triton-fused" and dtype not in FUSED_DTYPES:
        raise ConfigError(f"--kernel triton-fused computes in {' or '.join(FUSED_DTYPES)}, not {dtype}")
    if variant.mode is not None:
        if variant.mode not in COMPILE_MODES:
            raise ConfigError(
                f"unknown compile mode {variant.mode!r}; choose one of: {', '.join(COMPILE_MODES)}"
            )
        if not variant.compile:
            raise ConfigError("--mode needs --compile")
    if variant.cuda_graph and variant.mode in CUDAGRAPH_MODES:
        raise ConfigError(
            f"--cuda-graph cannot be combined with --mode {variant.mode}, which already replays CUDA graphs; "
            "use --mode max-autotune-no-cudagraphs"
        )
    return RunConfig(workload, variant, {**workload.defaults, **given}, dtype, device)
