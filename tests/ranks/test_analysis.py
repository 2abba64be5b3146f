"""Across ranks: collectives aligned, arrival skews, stragglers and verdict, kernel spread; each
checked against a computation by hand on the raw JSON, and on synthetic rank sets."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from tests.ranks import reference as ref
from tests.ranks import synthetic
from tests.ranks.conftest import GLOO4, NCCL2, rank_files
from tracetui.ranks.discover import resolve
from tracetui.ranks.run import report_for


def _gloo_starts(directory: Path) -> dict[int, list[int]]:
    """Per rank, the starts (ns) of its gloo:all_reduce spans in time order, from the raw JSON."""
    starts = {}
    for path in rank_files(directory):
        rank = synthetic.read(path)["distributedInfo"]["rank"]
        events = ref.raw_events(path)
        starts[rank] = sorted(
            ref.span(e)[0]
            for e in events
            if e.get("cat") == "user_annotation" and e["name"] == "gloo:all_reduce"
        )
    return starts


def test_arrival_skews_recomputed_by_hand_find_rank_2(gloo_report) -> None:  # type: ignore[no-untyped-def]
    starts = _gloo_starts(GLOO4)
    assert {len(s) for s in starts.values()} == {6}
    expected = []
    for n in range(6):
        arrivals = {rank: starts[rank][n] for rank in starts}
        last = max(arrivals, key=arrivals.__getitem__)
        expected.append(
            (
                n,
                (arrivals[last] - min(arrivals.values())) / 1000,
                last,
                sum(arrivals[last] - a for a in arrivals.values()) / 1000,
            )
        )
    got = gloo_report.analysis.collectives.sort("seq")
    rows = got.select("seq", "arrival_skew_us", "last_rank", "wait_us").rows()
    assert [x for row in rows for x in row] == pytest.approx([x for row in expected for x in row])
    assert set(got["ranks"]) == {4} and not got["mismatch"].any()
    assert [last for *_, last, _ in expected] == [2] * 6
    stragglers = gloo_report.analysis.stragglers
    assert stragglers.rows(named=True)[0] | {"names": None} == {
        "rank": 2,
        "last_count": 6,
        "others_wait_us": pytest.approx(sum(e[3] for e in expected)),
        "names": None,
        "others_wait_us_per_step": pytest.approx(sum(e[3] for e in expected) / 3),
        "collectives": 6,
        "wait_share": 1.0,
    }
    total_us = sum(e[3] for e in expected)
    steps = sorted(ref.ns(s["dur"]) for path in rank_files(GLOO4) for s in ref.steps(ref.raw_events(path)))
    step_us = statistics.median(steps) / 1000
    straggler = gloo_report.analysis.straggler
    assert straggler is not None and straggler.as_json() == {
        "rank": 2,
        "last_count": 6,
        "collectives": 6,
        "wait_us_per_step": pytest.approx(total_us / 3 / 3),  # 3 steps, 3 ranks waiting
        "share_of_waiting": 1.0,
        "share_of_step": pytest.approx(total_us / 9 / step_us),
    }
    assert gloo_report.analysis.verdict == (
        f"rank 2 arrives last at 6 of 6 all-reduces; the other ranks wait {total_us / 9000:.2f} ms per "
        f"step for it ({100 * total_us / 9 / step_us:.0f}% of the {step_us / 1000:.2f} ms step); "
        f"{total_us / 1000:.2f} ms of rank time in all, 100% of all the waiting"
    )
    assert not gloo_report.analysis.clocks_corrected and gloo_report.analysis.notes == []


def test_nccl_kernels_aligned_by_hand(nccl_report) -> None:  # type: ignore[no-untyped-def]
    starts = {}
    for rank, path in enumerate(rank_files(NCCL2)):
        kernels = [
            e for e in ref.raw_events(path) if e.get("cat") == "kernel" and "Collective name" in e["args"]
        ]
        starts[rank] = sorted(ref.span(e)[0] for e in kernels)
    got = nccl_report.analysis.collectives.sort("seq")
    assert got["arrival_skew_us"].to_list() == pytest.approx(
        [abs(a - b) / 1000 for a, b in zip(starts[0], starts[1], strict=True)]
    )
    assert got["last_rank"].to_list() == [
        1 if b > a else 0 for a, b in zip(starts[0], starts[1], strict=True)
    ]
    assert nccl_report.analysis.verdict.startswith("rank 1 arrives last at 4 of 4 all-reduces")
    assert any("launched before profiling started" in n for n in nccl_report.analysis.notes)


def test_slowest_rank_per_step(gloo_report) -> None:  # type: ignore[no-untyped-def]
    durations: dict[int, dict[int, int]] = {}
    for rank, path in enumerate(rank_files(GLOO4)):
        for step in ref.steps(ref.raw_events(path)):
            durations.setdefault(int(step["name"].split("#")[1]), {})[rank] = ref.ns(step["dur"])
    expected = [
        (s, max(d, key=d.__getitem__), min(d, key=d.__getitem__)) for s, d in sorted(durations.items())
    ]
    assert gloo_report.analysis.steps.select("step", "slowest_rank", "fastest_rank").rows() == expected


def test_kernel_spread_by_hand(gloo_report) -> None:  # type: ignore[no-untyped-def]
    per_rank: dict[str, dict[int, int]] = {}
    for rank, path in enumerate(rank_files(GLOO4)):
        for e in ref.raw_events(path):
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
                per_rank.setdefault(e["name"], {}).setdefault(rank, 0)
                per_rank[e["name"]][rank] += ref.ns(e["dur"])
    spread = gloo_report.analysis.kernels
    assert spread.height == len(per_rank)
    for row in spread.iter_rows(named=True):
        times = [per_rank[row["name"]].get(r, 0) / 1000 for r in range(4)]
        assert (row["time_min_us"], row["time_max_us"]) == pytest.approx((min(times), max(times)))
        assert row["time_median_us"] == pytest.approx(statistics.median(times))
        assert times[row["max_rank"]] == pytest.approx(max(times))
        assert row["ranks"] == sum(t > 0 for t in times)


def test_ranks_table(gloo_report) -> None:  # type: ignore[no-untyped-def]
    table = gloo_report.analysis.ranks
    assert table["rank"].to_list() == [0, 1, 2, 3]
    assert table["last_arrivals"].to_list() == [0, 0, 6, 0]
    assert table["slowest_steps"].sum() == 3


# ---- synthetic rank sets ------------------------------------------------------------------------


def _report(path: Path):  # type: ignore[no-untyped-def]
    return report_for(resolve([path]), summary=False)


def test_a_shifted_clock_is_found_and_corrected(derive: Callable) -> None:  # type: ignore[type-arg]
    shifted = derive("shifted", GLOO4, lambda r, d: synthetic.shift_clock(d, 250_000_000) if r == 3 else d)
    analysis = _report(shifted).analysis
    assert analysis.clocks_corrected and analysis.clock_reference == [0, 1, 2]
    offsets = {r["rank"]: r for r in analysis.clock_offsets.iter_rows(named=True)}
    assert [offsets[r]["applied"] for r in range(4)] == [False, False, False, True]
    assert offsets[3]["offset_us"] == pytest.approx(250_000, abs=offsets[3]["spread_us"])
    assert analysis.verdict.startswith("rank 2 arrives last at 6 of 6 all-reduces")
    assert "rank 3 +250.0" in analysis.notes[0] and "against ranks 0–2" in analysis.notes[0]


def test_a_shifted_clock_of_two_ranks(tmp_path: Path) -> None:
    for rank, path in enumerate(rank_files(NCCL2)):
        doc = synthetic.read(path)
        synthetic.write(synthetic.shift_clock(doc, -80_000_000) if rank == 0 else doc, tmp_path / path.name)
    analysis = _report(tmp_path).analysis
    assert analysis.clocks_corrected and analysis.clock_reference == [0]  # a tie: the lowest rank
    offsets = {r["rank"]: r for r in analysis.clock_offsets.iter_rows(named=True)}
    assert offsets[1]["offset_us"] == pytest.approx(80_000, abs=offsets[1]["spread_us"])
    assert offsets[1]["spread_us"] == 10.0  # NCCL kernels end within a few µs: the floor
    assert analysis.verdict.startswith("rank 1 arrives last at 4 of 4")


def test_a_delayed_rank_becomes_the_straggler(derive: Callable) -> None:  # type: ignore[type-arg]
    delay = 20_000_000
    delayed = derive("delayed", GLOO4, lambda r, d: synthetic.delay_collectives(d, delay) if r == 1 else d)
    analysis = _report(delayed).analysis
    starts = _gloo_starts(delayed)
    assert [max(starts, key=lambda r: starts[r][n]) for n in range(6)] == [1] * 6
    assert analysis.collectives["last_rank"].to_list() == [1] * 6
    expected_wait = sum(starts[1][n] - starts[r][n] for n in range(6) for r in starts) / 1000
    assert analysis.stragglers["others_wait_us"][0] == pytest.approx(expected_wait)
    assert analysis.verdict.startswith("rank 1 arrives last at 6 of 6 all-reduces")


def test_a_missing_rank(derive: Callable) -> None:  # type: ignore[type-arg]
    missing = derive("missing", GLOO4, lambda r, d: None if r == 1 else d)
    report = _report(missing)
    assert report.facts["missing"] == [1]
    assert [r["rank"] for r in report.facts["ranks"]] == [0, 2, 3]
    collectives = report.analysis.collectives
    assert set(collectives["ranks"]) == {3}  # every collective found, on the three ranks there are
    assert report.analysis.verdict.startswith("rank 2 arrives last at 6 of 6")


def test_a_rank_with_an_extra_step_misaligns_nothing(derive: Callable) -> None:  # type: ignore[type-arg]
    extra = derive("extra", GLOO4, lambda r, d: synthetic.add_step(d) if r == 3 else d)
    analysis = _report(extra).analysis
    assert analysis.ranks.filter(pl.col("rank") == 3)["steps"][0] == 4
    lone = analysis.collectives.filter(pl.col("ranks") == 1)
    assert lone["step"].to_list() == [5, 5] and set(lone["last_rank"]) == {3}
    assert analysis.collectives.filter(pl.col("ranks") == 4).height == 6
    assert analysis.verdict.startswith("rank 2 arrives last at 6 of 6")  # the lone ones do not count
    assert any(
        "2 collective(s) were found on fewer ranks than their process group has" in n for n in analysis.notes
    )
    assert 5 not in analysis.steps["step"].to_list()  # a step of one rank has no slowest rank


def test_mismatched_collectives_are_flagged(derive: Callable) -> None:  # type: ignore[type-arg]
    def smaller(rank: int, doc: synthetic.Doc) -> synthetic.Doc:
        if rank == 0:
            for e in doc["traceEvents"]:
                if e.get("name") == "gloo:all_reduce":
                    e["args"]["Input Dims"] = [[7]]
        return doc

    analysis = _report(derive("mismatch", GLOO4, smaller)).analysis
    assert analysis.collectives["mismatch"].all()
    assert any("differ between ranks" in n for n in analysis.notes)


def test_no_collectives(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[1] / "fixtures" / "mlp_eager.json.gz"
    for rank in range(2):
        synthetic.write(synthetic.set_rank(synthetic.read(source), rank, 2), tmp_path / f"rank{rank}.json.gz")
    analysis = _report(tmp_path).analysis
    assert analysis.collectives.is_empty() and analysis.stragglers.is_empty()
    assert analysis.verdict == "no collective was found on two or more ranks: nothing to align"


def test_subgroups_are_aligned_within_their_group(tmp_path: Path) -> None:
    """Two data-parallel pairs of a 4-rank world: ranks 0-1 all-reduce in group 1, ranks 2-3 in
    group 2; each collective is complete with its two ranks."""
    for rank in range(4):
        doc = synthetic.read(rank_files(NCCL2)[rank % 2])
        group, members = ("1", "[0, 1]") if rank < 2 else ("2", "[2, 3]")
        for event in doc["traceEvents"]:
            if "Process Group Name" in event.get("args", {}):
                event["args"] |= {"Process Group Name": group, "Process Group Ranks": members}
        synthetic.write(synthetic.set_rank(doc, rank, 4), tmp_path / f"rank{rank}.json.gz")
    analysis = _report(tmp_path).analysis
    collectives = analysis.collectives
    assert sorted(set(collectives["group"])) == ["1", "2"]
    assert set(collectives["ranks"]) == {2} and set(collectives["group_size"]) == {2}
    assert not any("fewer ranks" in n for n in analysis.notes)
    by_group = {g: set(f["last_rank"]) for g, f in collectives.group_by("group")}
    assert by_group == {("1",): {1}, ("2",): {3}}
