"""The workload registry: names, defaults, variant names and the one-line configuration errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tracetui.workloads.registry import CPU_DTYPE, WORKLOADS, ConfigError, Variant, default_dtype, make_config

from .helpers import cli_env


def test_workloads_and_labels() -> None:
    assert {name: w.label for name, w in WORKLOADS.items()} == {
        "matmul-add": "matmul_add_fwd",
        "linear": "linear_fwd",
        "mlp": "mlp_fwd",
        "transformer-block": "transformer_block_fwd",
        "ddp": "ddp_step",
        "fsdp": "fsdp_step",
    }


def test_blog_defaults() -> None:
    assert make_config("mlp").shapes == {"batch": 64, "seq": 128, "dim": 768, "hidden": 3072}
    assert make_config("matmul-add").shapes == {"batch": 1024, "in_dim": 32, "out_dim": 64}
    assert make_config("linear").shapes == {"batch": 1024, "in_dim": 32, "out_dim": 64}
    assert {w.dtype for w in WORKLOADS.values()} == {"bf16"}


def test_overrides_keep_other_defaults() -> None:
    config = make_config("mlp", shapes={"hidden": 17, "dim": None}, dtype="fp32")
    assert config.shapes == {"batch": 64, "seq": 128, "dim": 768, "hidden": 17}
    assert config.dtype == "fp32"


def test_a_cpu_defaults_to_fp32_and_names_it_as_its_default() -> None:
    """Issue 37 item 7: ``capture mlp`` ran bf16 on a CPU (4 min 16 s; fp32: 12.6 s)."""
    assert CPU_DTYPE == "fp32" and default_dtype(WORKLOADS["mlp"], "cpu") == "fp32"
    assert default_dtype(WORKLOADS["mlp"], "cuda") == "bf16"
    cpu = make_config("mlp", device="cpu")
    assert (cpu.dtype, cpu.device, cpu.file_stem()) == ("fp32", "cpu", "mlp_eager")  # the device's default
    given = make_config("mlp", dtype="bf16", device="cpu")
    assert (given.dtype, given.file_stem()) == ("bf16", "mlp_eager_bf16")  # named: not the default there
    assert make_config("mlp", dtype="fp32").file_stem() == "mlp_eager_fp32"  # on a GPU it is not
    with pytest.raises(ConfigError, match="triton-fused computes in bf16 or fp16, not fp32"):
        make_config("mlp", variant=Variant(kernel="triton-fused"), dtype="fp32", device="cuda")
    fused = make_config("mlp", variant=Variant(kernel="triton-fused"))  # the GPU default: bf16
    assert fused.dtype == "bf16"


@pytest.mark.parametrize(
    ("name", "variant", "dtype", "stem"),
    [
        ("matmul-add", Variant(), None, "matmul_add_eager"),
        ("linear", Variant(compile=True), None, "linear_compiled"),
        ("mlp", Variant(kernel="triton"), None, "mlp_triton"),
        ("mlp", Variant(kernel="triton", train=True), None, "mlp_triton_train"),
        ("mlp", Variant(kernel="triton-fused"), None, "mlp_triton_fused"),
        ("mlp", Variant(kernel="triton-fused", train=True), "fp16", "mlp_triton_fused_train_fp16"),
        ("mlp", Variant(cuda_graph=True), None, "mlp_cudagraph"),
        ("mlp", Variant(train=True), "fp32", "mlp_eager_train_fp32"),
        (
            "mlp",
            Variant(compile=True, mode="max-autotune-no-cudagraphs"),
            None,
            "mlp_compiled-max-autotune-no-cudagraphs",
        ),
    ],
)
def test_file_stem(name: str, variant: Variant, dtype: str | None, stem: str) -> None:
    assert make_config(name, variant=variant, dtype=dtype).file_stem() == stem


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"name": "mpl"},
            "unknown workload 'mpl'; choose one of: matmul-add, linear, mlp, transformer-block",
        ),
        (
            {"name": "matmul-add", "shapes": {"seq": 4}},
            "--seq does not apply to matmul-add; its shape flags are: --batch --in-dim --out-dim",
        ),
        ({"name": "mlp", "shapes": {"dim": 0}}, "--dim must be at least 1, got 0"),
        ({"name": "mlp", "dtype": "fp8"}, "unknown dtype 'fp8'; choose one of: bf16, fp16, fp32"),
        (
            {"name": "linear", "variant": Variant(kernel="triton")},
            "--kernel triton applies to mlp only, not linear",
        ),
        (
            {"name": "matmul-add", "variant": Variant(kernel="triton-fused")},
            "--kernel triton-fused applies to mlp only, not matmul-add",
        ),
        (
            {"name": "mlp", "variant": Variant(kernel="triton-fused"), "dtype": "fp32"},
            "--kernel triton-fused computes in bf16 or fp16, not fp32",
        ),
        ({"name": "mlp", "variant": Variant(mode="max-autotune")}, "--mode needs --compile"),
        (
            {"name": "mlp", "variant": Variant(compile=True, mode="reduce-overhead", cuda_graph=True)},
            "--cuda-graph cannot be combined with --mode reduce-overhead",
        ),
    ],
)
def test_config_errors_are_one_line(kwargs: dict, expected: str) -> None:
    name = kwargs.pop("name")
    with pytest.raises(ConfigError) as info:
        make_config(name, **kwargs)
    message = str(info.value)
    assert message.startswith(expected)
    assert "\n" not in message


def test_gpu_flags() -> None:
    assert Variant().gpu_flags() == []
    assert Variant(kernel="triton", cuda_graph=True).gpu_flags() == ["--kernel triton", "--cuda-graph"]
    assert Variant(kernel="triton-fused", train=True).gpu_flags() == ["--kernel triton-fused"]


def test_registry_and_capture_command_import_no_heavy_modules() -> None:
    code = (
        "import sys, tracetui.workloads, tracetui.workloads.registry, tracetui.commands.capture\n"
        "heavy = [m for m in ('torch', 'triton', 'polars', 'msgspec', 'textual') if m in sys.modules]\n"
        "print(' '.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""
