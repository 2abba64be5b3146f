"""The device a capture runs on (importing this module needs neither torch nor triton)."""

from __future__ import annotations

import importlib.util
from types import ModuleType
from typing import TYPE_CHECKING

import click

from tracetui.workloads.registry import RunConfig

if TYPE_CHECKING:
    import torch


def device_for(config: RunConfig) -> torch.device:
    """The device to run on; a one-line UsageError when the variant needs what is not here."""
    torch = _torch()
    needs = config.variant.gpu_flags()
    if not torch.cuda.is_available():
        if needs:
            raise click.UsageError(f"{needs[0]} needs a CUDA GPU and there is none here")
        click.echo("no CUDA GPU here: running on the CPU (the trace will have CPU ops only)", err=True)
        return torch.device("cpu")
    kernel = config.variant.kernel
    if kernel != "torch" and importlib.util.find_spec("triton") is None:
        raise click.UsageError(f"--kernel {kernel} needs the triton package (pip install triton)")
    return torch.device("cuda")


def gpu_count(device: torch.device) -> int:
    """The GPUs a capture on ``device`` can use (none on the CPU)."""
    return int(_torch().cuda.device_count()) if device.type == "cuda" else 0


def _torch() -> ModuleType:
    """torch, imported when a capture starts (the optional extra's one seam), or a one-line error."""
    try:
        import torch
    except ImportError:
        raise click.UsageError("capturing needs torch: pip install 'tracetui[capture]'") from None
    return torch
