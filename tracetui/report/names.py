"""Choices of ``tracetui export`` (kept free of heavy imports: the CLI reads them at start)."""

TABLES = ("events", "ops", "kernels", "annotations", "steps", "runtime", "anomalies", "memory")
FORMATS = ("csv", "parquet", "json")
