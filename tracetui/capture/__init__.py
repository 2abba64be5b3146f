"""``tracetui capture``: run a built-in workload under ``torch.profiler`` and write a Chrome trace.

Only click, torch and (for ``--kernel triton``) triton are needed here: never polars, msgspec
or textual, so capture runs on a GPU machine that has none of them.
"""

import warnings

# torch warns "Failed to initialize NumPy: No module named 'numpy'" at import when numpy is absent.
# Capturing never converts a tensor to numpy, so the line only alarms; it is silenced here, before
# any capture module imports torch (the rank processes of `capture ddp` import this package too).
warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)
