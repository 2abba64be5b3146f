"""Per-kernel costs and the roofline of a whole trace (``tracetui.insight.report``)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import polars as pl

import tracetui
from tracetui.insight.report import kernel_insight, kernel_rooflines

FIXTURES = Path(__file__).parent.parent / "fixtures"
GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"


def test_mlp_eager_gemms_are_compute_bound_at_the_blog_flops() -> None:
    rooflines = kernel_rooflines(tracetui.load(FIXTURES / "mlp_eager.json.gz"))
    gemm = rooflines.filter(pl.col("name") == GEMM).row(0, named=True)
    assert gemm["calls"] == 6 and gemm["bound"] == "compute-bound"
    assert round(gemm["flops"] / gemm["calls"] / 1e9, 2) == 38.65  # 2·8192·768·3072 per call
    assert gemm["verdict"].startswith("compute-bound: ") and "of 790 TFLOP/s" in gemm["verdict"]


def test_a_kernel_without_duration_does_not_poison_its_op(tmp_path: Path) -> None:
    """Found by fuzzing: a GEMM kernel whose ``dur`` is missing gave its op 0 µs of kernel time,
    and the op's FLOPs divided by it were NaN."""
    doc = json.loads(gzip.decompress((FIXTURES / "mlp_eager.json.gz").read_bytes()))
    first = next(e for e in doc["traceEvents"] if e.get("name") == GEMM)
    del first["dur"]
    path = tmp_path / "no_dur.json"
    path.write_text(json.dumps(doc))
    trace = tracetui.load(path)
    rooflines = kernel_rooflines(trace)
    assert all(math.isfinite(v) for v in rooflines["flops"].drop_nulls())
    work = trace.gpu.filter(pl.col("cat").is_in(["kernel", "gpu_memcpy", "gpu_memset"]))
    assert kernel_insight(trace).height == work.height
