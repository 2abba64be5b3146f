"""The ``tracetui`` block a capture adds to its trace: workload, variant, shapes, versions, command."""

from __future__ import annotations

import importlib.metadata
import platform
import shlex
import sys
from pathlib import Path
from typing import Any

from tracetui import __version__
from tracetui.workloads.registry import RunConfig, flag_name

METADATA_KEY = "tracetui"
_DRIVER_FILE = Path("/proc/driver/nvidia/version")


def command_line(config: RunConfig, argv: list[str] | None = None) -> str:
    """The command as typed (``tracetui capture …``), or an equivalent one rebuilt from the config.

    ``argv`` defaults to ``sys.argv``; it is used when it is a ``tracetui capture`` invocation
    (console script or ``python -m tracetui``), otherwise (e.g. inside a test runner) the
    canonical spelling of ``config`` is returned.
    """
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "capture":
        return shlex.join(["tracetui", *args])
    words = ["tracetui", "capture", config.workload.name]
    v = config.variant
    words += ["--compile"] if v.compile else []
    words += ["--mode", v.mode] if v.mode else []
    words += ["--cuda-graph"] if v.cuda_graph else []
    words += ["--train"] if v.train else []
    words += ["--kernel", v.kernel] if v.kernel != "torch" else []
    words += ["--dtype", config.dtype]
    for key, value in config.shapes.items():
        words += [flag_name(key), str(value)]
    return shlex.join(words)


def _driver_version() -> str | None:
    """The NVIDIA display driver version (``580.159.03``), if the kernel module says it cheaply."""
    try:
        text = _DRIVER_FILE.read_text(errors="replace")
    except OSError:
        return None
    for word in text.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return word
    return None


def _package_version(name: str) -> str | None:
    module = sys.modules.get(name)
    version = getattr(module, "__version__", None)
    if version is not None:
        return str(version)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions(device_type: str) -> dict[str, Any]:
    """Versions of what produced the trace: torch, triton, CUDA, driver, GPU, Python, tracetui."""
    import torch

    info: dict[str, Any] = {
        "tracetui": __version__,
        "torch": torch.__version__,
        "triton": _package_version("triton"),
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }
    if device_type == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        info["gpu"] = props.name
        info["compute_capability"] = f"{props.major}.{props.minor}"
        info["driver"] = _driver_version()
    return info


def build_metadata(
    config: RunConfig,
    *,
    device_type: str,
    steps: int,
    schedule: dict[str, int],
    optimizer: str | None,
    labels: tuple[str, ...],
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """The JSON object stored under the trace's top-level ``"tracetui"`` key."""
    v = config.variant
    return {
        "workload": config.workload.name,
        "variant": {
            "tags": v.tags(),
            "compile": v.compile,
            "mode": v.mode,
            "cuda_graph": v.cuda_graph,
            "train": v.train,
            "kernel": v.kernel,
            "optimizer": optimizer,
        },
        "shapes": dict(config.shapes),
        "dtype": config.dtype,
        "device": device_type,
        "labels": list(labels),
        "steps": steps,
        "schedule": schedule,
        "versions": versions(device_type),
        "command": command_line(config, argv),
    }
