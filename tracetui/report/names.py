"""Choices of ``tracetui export`` (kept free of heavy imports: the CLI reads them at start)."""

TABLES = (
    "events",
    "ops",
    "kernels",
    "annotations",
    "steps",
    "runtime",
    "anomalies",
    "memory",
    "critical_path",
    "idle",
    "advice",
)
# Tables of a distributed run (several ranks): cross-rank, from tracetui.ranks.analysis.
RUN_TABLES = ("ranks", "collectives", "arrivals", "stragglers", "rank_kernels", "kernel_spread")
FORMATS = ("csv", "parquet", "json")
