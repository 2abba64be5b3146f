"""``tracetui capture``: run a built-in workload under ``torch.profiler`` and write a Chrome trace.

Only click, torch and (for ``--kernel triton``) triton are needed here: never polars, msgspec
or textual, so capture runs on a GPU machine that has none of them.
"""
