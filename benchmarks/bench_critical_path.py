"""Benchmark: tracetui's critical path and idle breakdown of each step against HTA's, on the shared
traces (docs/why.md).

    python benchmarks/bench_critical_path.py [TRACE...] [--hta-python PATH]

For each trace and its first two steps: tracetui's critical path (length, CPU / GPU / launch / sync /
gap parts) and idle time (host wait / kernel wait / other) next to HTA's ``critical_path_analysis``
(its path's edges summed by ``bound_by``) and ``get_idle_time_breakdown`` (whole trace, per stream).
HTA runs in its own venv (``--hta-python``, e.g. ``/work/hta-venv/bin/python`` with
``pip install holisticTraceAnalysis "pandas<3"``: HTA 0.5 fails on pandas 3); it is not a dependency.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = next(
    (p / "shared" / "traces" for p in HERE.parents if (p / "shared" / "traces").is_dir()),
    HERE.parent.parent / "shared" / "traces",
)
DEFAULT = [
    "linear_eager",
    "mlp_eager",
    "mlp_compiled",
    "mlp_train_tbhandler_stack_memory.pt.trace",
    "transformer_train_long",
]

HTA_CHILD = r"""
import json, sys, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t = TraceAnalysis(trace_dir=sys.argv[1])
out = {"steps": []}
for instance in range(int(sys.argv[2])):
    try:
        cp, ok = t.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=instance)
        df = cp.get_critical_path_breakdown()
        by = df.groupby("bound_by").duration.sum()
        out["steps"].append({"ok": bool(ok), "length_us": float(df.duration.sum()),
                             "by": {str(k): float(v) for k, v in by.items()}})
    except Exception as exc:  # HTA fails on some traces: say so
        out["steps"].append({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:200]})
try:
    idle = t.get_idle_time_breakdown(visualize=False)[0]
    out["idle"] = {f"{r.stream}/{r.idle_category}": float(r.idle_time) for r in idle.itertuples()}
except Exception as exc:
    out["idle"] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
print(json.dumps(out))
"""


def ours(trace: Path, steps: int) -> dict:
    import polars as pl

    import tracetui
    from tracetui.insight.critical_path import PARTS, step_paths
    from tracetui.insight.idle import stream_idle

    loaded = tracetui.load(trace)
    spans = step_paths(loaded).spans.sort("start_ns").head(steps)
    idle = stream_idle(loaded)
    whole = idle.group_by("stream").agg(pl.col("host_wait_us", "kernel_wait_us", "other_us").sum())
    return {
        "steps": [{k: row[k] for k in ("name", "length_us", *PARTS)} for row in spans.iter_rows(named=True)],
        "idle": {
            str(r["stream"]): {k: r[k] for k in ("host_wait_us", "kernel_wait_us", "other_us")}
            for r in whole.iter_rows(named=True)
        },
    }


def hta(python: str, trace: Path, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(trace, Path(folder) / trace.name)
        done = subprocess.run(
            [python, "-c", HTA_CHILD, folder, str(steps)], capture_output=True, text=True, timeout=900
        )
    if done.returncode != 0:
        return {
            "error": done.stderr.strip().splitlines()[-1]
            if done.stderr.strip()
            else f"exit {done.returncode}"
        }
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--hta-python", default=None)
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    traces = args.traces or [SHARED / f"{name}.json.gz" for name in DEFAULT]
    for trace in traces:
        if not trace.exists():
            print(f"{trace}: missing (the shared traces are in ../shared/traces)")
            continue
        mine = ours(trace, args.steps)
        print(f"\n== {trace.name}")
        for step in mine["steps"]:
            parts = ", ".join(
                f"{k.removesuffix('_us')} {step[k]:.1f}"
                for k in step
                if k.endswith("_us") and k != "length_us"
            )
            print(f"  tracetui {step['name']}: path {step['length_us']:.1f} µs ({parts})")
        for stream, parts in mine["idle"].items():
            print(
                f"  tracetui idle, stream {stream}, over the steps: "
                + ", ".join(f"{k} {v:.1f}" for k, v in parts.items())
            )
        if not args.hta_python:
            continue
        theirs = hta(args.hta_python, trace, args.steps)
        if "error" in theirs:
            print(f"  HTA: failed: {theirs['error']}")
            continue
        for i, step in enumerate(theirs["steps"]):
            if not step.get("ok"):
                print(f"  HTA step {i}: failed: {step.get('error', 'no path')}")
                continue
            by = ", ".join(f"{k or 'dependency'} {v:.1f}" for k, v in step["by"].items())
            print(f"  HTA step {i}: path {step['length_us']:.1f} µs ({by})")
        print("  HTA idle, whole trace: " + ", ".join(f"{k} {v:.1f}" for k, v in theirs["idle"].items()))


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    main()
