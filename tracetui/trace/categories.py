"""Event categories: normalising old names and grouping them by role."""

from __future__ import annotations

# Pre-2.0 / legacy category names -> current Kineto names.
LEGACY_CATEGORIES = {
    "Operator": "cpu_op",
    "operator": "cpu_op",
    "Runtime": "cuda_runtime",
    "runtime": "cuda_runtime",
    "Kernel": "kernel",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
    "cpu_to_cuda": "ac2g",
    "async": "ac2g",
    "async_cpu_to_gpu": "ac2g",
    "forward_backward": "fwdbwd",
}

# Device work of other accelerators under its own category -> the category Kineto now writes for it
# (libkineto aliases MTIA_CCP_EVENTS to CONCURRENT_KERNEL: newer traces say "kernel" already). Not a
# sign of an old trace, unlike LEGACY_CATEGORIES.
DEVICE_CATEGORIES = {"mtia_ccp_events": "kernel"}
# Every category renamed at load, and the accelerator each device category came from.
CATEGORY_NAMES = {**LEGACY_CATEGORIES, **DEVICE_CATEGORIES}
# Device kind by the category of the calls that launch its work (a device's name when the trace
# has no deviceProperties for it): "MTIA 0", "XPU 0".
ACCELERATOR_OF_CALL = {
    "mtia_runtime": "MTIA",
    "xpu_runtime": "XPU",
    "xpu_driver": "XPU",
    "privateuse1_runtime": "accelerator",
    "privateuse1_driver": "accelerator",
}

# GPU work: what runtime/driver calls launch, linked by args.correlation.
GPU_WORK = ("kernel", "gpu_memcpy", "gpu_memset")
GPU_KIND = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset", "cuda_sync": "sync"}
# Events on GPU lanes (pid = device, tid = stream); never nested in the CPU tree.
GPU_LANE = (*GPU_WORK, "cuda_sync", "gpu_user_annotation")
# Calls that can launch GPU work, across backends.
LAUNCH_CALLS = (
    "cuda_runtime",
    "cuda_driver",
    "privateuse1_runtime",
    "privateuse1_driver",
    "xpu_runtime",
    "xpu_driver",
    "mtia_runtime",
)

# Tie-break rank for CPU events with identical start and end: the outer kind first.
NEST_RANK = {"user_annotation": 0, "python_function": 1, "cpu_op": 2}
CALL_RANK = 4
OTHER_RANK = 3
