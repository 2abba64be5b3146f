"""Why the straggler is late: the cause's threshold on both sides, each kind of cause, the runs where
it must say none, the 4-rank set (rank 2 sleeps before its backward: checked against the raw JSON),
the bundled FSDP straggler, a shifted clock, and the summary's text and JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from statistics import median

import polars as pl
import pytest
from click.testing import CliRunner

from tests.ranks.conftest import GLOO4, SAMPLE_RUNS, analyse_tables, rank_files, set_tables
from tracetui.cli import cli
from tracetui.ranks.cause import straggler_cause
from tracetui.ranks.lead import SCHEMA as LEAD_SCHEMA
from tracetui.ranks.thresholds import CAUSE_LIST_SHARE, CAUSE_MIN_SHARE

HEALTHY = SAMPLE_RUNS / "ddp_gloo_2ranks"  # capture ddp --ranks 2: no straggler
FSDP = SAMPLE_RUNS / "fsdp_gloo_2ranks_straggler"  # rank 1 sleeps in a backward hook
US = 1000


def _case(
    lag_us: float, items: dict[str, tuple[str, float]], theirs: dict[str, tuple[str, float]] | None = None
):  # type: ignore[no-untyped-def]
    """Two ranks; collective "o" ends at 1 ms on both, collective "k" arrives at 2 ms on rank 0 and
    ``lag_us`` later on rank 1 (the straggler). ``items``: name -> (kind, µs) in rank 1's stretch,
    ``theirs`` the same for rank 0's."""
    o_end, k0 = 1_000_000, 2_000_000
    k1 = k0 + round(lag_us * US)
    keyed = pl.DataFrame(
        {
            "key": ["o", "o", "k", "k"],
            "rank": [0, 1, 0, 1],
            "step": [1, 1, 1, 1],
            "start_ns": [0, 0, k0, k1],
            "end_ns": [o_end, o_end, k1 + 100_000, k1 + 100_000],
        }
    )
    arrivals = keyed.select("key", "rank", pl.col("start_ns").alias("arrival_ns"))
    aligned = pl.DataFrame({"key": ["o", "k"], "ranks": [2, 2], "last_rank": [1, 1]})

    def rows(rank: int, end: int, found: dict[str, tuple[str, float]]) -> list[dict[str, object]]:
        span = {"kind": "span", "name": "", "ns": end - o_end, "calls": 1}
        listed = [
            {"kind": kind, "name": name, "ns": round(us * US), "calls": 1}
            for name, (kind, us) in found.items()
        ]
        return [{"rank": rank, "start_ns": o_end, "end_ns": end, **r} for r in [span, *listed]]

    lead = pl.DataFrame(
        rows(1, k1, items) + rows(0, k0, theirs or {}), schema={"rank": pl.Int64, **LEAD_SCHEMA}
    )
    return straggler_cause(1, keyed, arrivals, aligned, lead)


def test_the_cause_threshold_on_both_sides() -> None:
    lag = 4000.0
    at = _case(lag, {"aten::ones_like": ("host_gap", CAUSE_MIN_SHARE * lag)})
    assert at is not None and at.cause is not None
    assert at.cause.kind == "host_gap" and at.cause.name == "aten::ones_like"
    assert at.cause.share_of_lag == pytest.approx(CAUSE_MIN_SHARE)
    assert at.lag_us_per_step == pytest.approx(lag)
    under = _case(lag, {"aten::ones_like": ("host_gap", CAUSE_MIN_SHARE * lag - 0.001)})
    assert under is not None and under.cause is None
    assert under.sentence.startswith("no single cause explains 50% of rank 1's 4.00 ms lag per step")
    assert "host gap before aten::ones_like +2.00 ms (50%)" in under.sentence


def test_what_the_others_did_too_is_no_cause() -> None:
    """The same 3 ms in a host gap on both ranks explains nothing; 1 ms more of it is 25 %."""
    same = {"x": ("host_gap", 3000.0)}
    cause = _case(4000.0, {"x": ("host_gap", 4000.0)}, same)
    assert cause is not None and cause.cause is None
    assert cause.differences[0].extra_us_per_step == pytest.approx(1000.0)
    assert cause.differences[0].share_of_lag == pytest.approx(0.25)


def test_each_kind_of_cause_in_its_sentence() -> None:
    op = _case(2000.0, {"aten::mm": ("host_op", 1500.0)}, {"aten::mm": ("host_op", 100.0)})
    assert op is not None and op.cause is not None and op.cause.kind == "host_op"
    assert (
        op.sentence
        == "rank 1 spends 1.50 ms per step in aten::mm, the others 100.0 µs: 70% of its 2.00 ms lag per step"
    )
    gpu = _case(2000.0, {"gemm": ("gpu_work", 1900.0)})
    assert gpu is not None and gpu.cause is not None and gpu.cause.kind == "gpu_work"
    assert "runs 1.90 ms per step of gemm on the GPU (1 calls), the others 0.0 µs (0 calls)" in gpu.sentence
    idle = _case(2000.0, {"": ("gpu_idle", 2000.0)})  # idle follows from what the host did: never a cause
    assert idle is not None and idle.cause is None and idle.differences == ()


def test_small_differences_are_not_listed() -> None:
    lag = 10_000.0
    cause = _case(
        lag, {"a": ("host_op", CAUSE_LIST_SHARE * lag), "b": ("host_op", CAUSE_LIST_SHARE * lag - 1)}
    )
    assert cause is not None and cause.cause is None
    assert "CPU op a" in cause.sentence and "CPU op b" not in cause.sentence


def test_no_stretch_no_cause() -> None:
    """A straggler whose late collective is the first of the trace: no end before it to start from."""
    keyed = pl.DataFrame(
        {"key": ["k", "k"], "rank": [0, 1], "step": [1, 1], "start_ns": [0, 5], "end_ns": [9, 9]}
    )
    arrivals = keyed.select("key", "rank", pl.col("start_ns").alias("arrival_ns"))
    aligned = pl.DataFrame({"key": ["k"], "ranks": [2], "last_rank": [1]})
    lead = pl.DataFrame(schema={"rank": pl.Int64, **LEAD_SCHEMA})
    assert straggler_cause(1, keyed, arrivals, aligned, lead) is None


def _gaps_before(path: Path, name: str) -> list[float]:
    """Replay from the raw JSON: per occurrence of op ``name``, the time (µs) since the last traced
    CPU call (op, runtime, driver) of any thread had ended."""
    with gzip.open(path) as file:
        events = json.load(file)["traceEvents"]
    calls = sorted(
        (
            e
            for e in events
            if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver")
        ),
        key=lambda e: e["ts"],
    )
    reach, gaps = 0.0, []
    for e in calls:
        if e["name"] == name:
            gaps.append(e["ts"] - reach)
        reach = max(reach, e["ts"] + e["dur"])
    return gaps


def test_the_4_rank_straggler_sleeps_before_its_backward(gloo_report) -> None:  # type: ignore[no-untyped-def]
    cause = gloo_report.analysis.cause
    assert cause is not None and cause.cause is not None
    assert (cause.rank, cause.cause.kind, cause.cause.name) == (2, "host_gap", "aten::ones_like")
    assert (cause.stretches, cause.steps) == (
        2,
        2,
    )  # steps 3 and 4: step 2's first all-reduce has no end before
    gaps = {rank: _gaps_before(path, "aten::ones_like")[1:] for rank, path in enumerate(rank_files(GLOO4))}
    assert all(len(g) == 2 for g in gaps.values())
    assert min(gaps[2]) > 4000  # the sleep: 4.2 and 8.3 ms, the others under 0.15 ms
    assert max(max(g) for r, g in gaps.items() if r != 2) < 150
    assert cause.cause.us_per_step == pytest.approx(sum(gaps[2]) / 2, abs=0.01)
    others = sum(median(gaps[r][i] for r in (0, 1, 3)) for i in range(2)) / 2
    assert cause.cause.vs_others_us_per_step == pytest.approx(others, abs=0.01)
    assert cause.cause.share_of_lag >= 0.9
    totals = {d.kind: d for d in cause.totals}
    assert totals["span"].share_of_lag == pytest.approx(1.0, abs=0.05)  # the stretches differ by the lag


def test_a_shifted_clock_changes_no_cause() -> None:
    tables = set_tables(GLOO4)
    base = analyse_tables(tables).cause
    moved = analyse_tables(tables, {2: 3_600_000_000_000, 0: -7_000_000}).cause
    assert base is not None and moved is not None
    # what each rank did is read on its own clock: the same to the ns; the lag is on corrected
    # clocks, whose recovered offsets move within their spread (docs/ranks.md: up to 214 µs here)
    assert moved.lag_us_per_step == pytest.approx(base.lag_us_per_step, abs=214)

    def figures(cause):  # type: ignore[no-untyped-def]
        return [
            (d.kind, d.name, round(d.us_per_step, 3), round(d.vs_others_us_per_step, 3)) for d in cause.totals
        ]

    assert figures(moved) == figures(base)
    assert moved.cause is not None and base.cause is not None
    assert (moved.cause.name, moved.cause.us_per_step) == (base.cause.name, base.cause.us_per_step)


def test_the_fsdp_straggler_sleeps_in_a_backward_hook() -> None:
    cause = analyse_tables(set_tables(FSDP)).cause
    assert cause is not None and cause.cause is not None
    assert (cause.rank, cause.cause.kind) == (1, "host_op")
    assert cause.cause.name == "autograd::engine::evaluate_function: BackwardHookFunctionBackward"
    assert cause.cause.vs_others_us_per_step == 0.0 and cause.cause.share_of_lag > 0.9


def test_a_healthy_run_has_no_cause() -> None:
    analysis = analyse_tables(set_tables(HEALTHY))
    assert analysis.straggler is None and analysis.cause is None
    out = CliRunner().invoke(cli, ["summary", str(HEALTHY), "--json", "--workers", "1"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["distributed"]["straggler"] is None
    text = CliRunner().invoke(cli, ["summary", str(HEALTHY), "--workers", "1"]).output
    assert "Why:" not in text


def test_summary_says_why(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["summary", str(GLOO4), "--json", "--workers", "1"])
    assert out.exit_code == 0, out.output
    why = json.loads(out.output)["distributed"]["straggler"]["cause"]
    assert (why["rank"], why["kind"], why["name"], why["min_share"]) == (
        2,
        "host_gap",
        "aten::ones_like",
        0.5,
    )
    assert set(why["totals"]) == {"span", "host_gap", "host_op", "gpu_work", "gpu_idle"}
    text = CliRunner().invoke(cli, ["summary", str(GLOO4), "--workers", "1"]).output
    flat = " ".join(text.split())  # wrapped at the terminal's width
    said = flat.index("Why: " + " ".join(why["sentence"].split()))
    assert flat.index("Stragglers: rank 2") < said < flat.index("per step, rank 2 against the others' median")
    assert flat.index("per step, rank 2 against the others' median: collective end to arrival") < flat.index(
        "Ranks,"
    )


def test_a_dataset_says_why_and_one_of_before_says_nothing(tmp_path: Path) -> None:
    from tracetui.ranks.dataset import DATASET_MANIFEST
    from tracetui.ranks.discover import resolve
    from tracetui.ranks.run import convert, report_for

    out = tmp_path / "run.parquet"
    convert(resolve([GLOO4]), out)
    cause = report_for(resolve([out]), summary=False).analysis.cause
    assert cause is not None and cause.cause is not None and cause.cause.name == "aten::ones_like"
    manifest = out / DATASET_MANIFEST
    facts = json.loads(manifest.read_text())
    facts["tables"].remove("lead")  # written before the lead table: the rest reads as it did
    facts["parts"] = {k: v for k, v in facts["parts"].items() if not k.startswith("lead/")}
    manifest.write_text(json.dumps(facts))
    report = report_for(resolve([out]), summary=False)
    assert report.analysis.straggler is not None and report.analysis.cause is None


def test_the_explorer_says_why_under_the_verdict(gloo_report) -> None:  # type: ignore[no-untyped-def]
    from tracetui.ranks.view import ranks_table

    verdict, why = ranks_table(gloo_report).caption.split("\n")
    assert verdict == gloo_report.analysis.verdict
    assert why == f"why: {gloo_report.analysis.cause.sentence}"


def _union_within(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """The length of the union of ``intervals`` clipped to [lo, hi) (plain Python, for a replay)."""
    total, reach = 0.0, lo
    for start, end in sorted((max(s, lo), min(e, hi)) for s, e in intervals if e > lo and s < hi):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def test_the_lead_table_tiles_the_time_and_adds_up() -> None:
    """Rank 2 of the 4-rank set: the segments tile the time from the first cut to the last, and in
    all of it GPU idle + the GPU's busy union and host gaps + the CPU calls' union are that time
    (replayed from the raw JSON)."""
    lead = set_tables(GLOO4)["lead"].filter(pl.col("rank") == 2)
    spans = lead.filter(pl.col("kind") == "span").sort("start_ns")
    assert (spans["start_ns"].shift(-1).drop_nulls() == spans["end_ns"].head(-1)).all()
    assert (spans["ns"] == spans["end_ns"] - spans["start_ns"]).all()
    lo, hi = spans["start_ns"][0] / US, spans["end_ns"][-1] / US
    with gzip.open(rank_files(GLOO4)[2]) as file:
        events = [e for e in json.load(file)["traceEvents"] if e.get("ph") == "X"]

    def union(cats: tuple[str, ...]) -> float:
        return _union_within([(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in cats], lo, hi)

    total = {kind: lead.filter(pl.col("kind") == kind)["ns"].sum() / US for kind in ("gpu_idle", "host_gap")}
    window = pytest.approx(hi - lo, abs=1)
    assert total["gpu_idle"] + union(("kernel", "gpu_memcpy", "gpu_memset")) == window
    assert total["host_gap"] + union(("cpu_op", "cuda_runtime", "cuda_driver")) == window
