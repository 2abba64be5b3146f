"""Distributions in the explorer: the details pane's histogram, percentiles and slowest calls, ``s``
walking them, and the kernels table's p50/p90/p99 and histogram column (Pilot tests and snapshots)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from tests.app import synthetic
from tests.app.conftest import WIDE, fixture, goto, keys, settle, tree_of
from tracetui.app.app import TraceApp
from tracetui.app.screens.explorer import ExplorerScreen
from tracetui.app.screens.tables import TablesScreen
from tracetui.insight.distributions import BINS
from tracetui.views.distribution import sparkline

# One kernel launched 40 times over 4 steps: 10-19.5 µs, and one call of 95 µs (step 3).
DURATIONS = [10 + (i % 20) * 0.5 for i in range(40)]
DURATIONS[27] = 95.0
SLOW = "gemm_kernel"


def spread_trace(path: Path) -> Path:
    events = []
    for step in range(4):
        base = step * 2000
        events.append(synthetic.op(f"ProfilerStep#{step + 1}", base, 1500 + step * 10, cat="user_annotation"))
        for i in range(10):
            call = step * 10 + i
            start = base + 10 + i * 100
            events.append(synthetic.op("aten::mm", start, 20))
            events.append(
                synthetic.op("cudaLaunchKernel", start + 1, 5, cat="cuda_runtime", correlation=call + 1)
            )
            events.append(synthetic.kernel(SLOW, start + 30, DURATIONS[call], call + 1))
    return synthetic.write(path, events)


@pytest.fixture
def spread_path(tmp_path: Path) -> Path:
    return spread_trace(tmp_path / "spread.json")


def details_text(app: TraceApp) -> str:
    return str(app.screen.query_one("#details", Static).content)


async def test_details_of_a_kernel_show_its_distribution(spread_path: Path) -> None:
    app = TraceApp(spread_path)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await goto(pilot, SLOW, nth=3)
        text = details_text(app)
        assert "Distribution of 40 calls of this kernel" in text
        assert "p50 15.0 µs · p90 19.0 µs · p99 65.6 µs" in text  # numpy.percentile of DURATIONS
        assert "min 10.0 µs" in text and "max 95.0 µs" in text
        screen = app.screen
        assert isinstance(screen, ExplorerScreen)
        row = screen.insight.distribution(SLOW)
        assert row is not None and sparkline(row["histogram"]) in text and len(row["histogram"]) == BINS
        slowest = text.split("slowest", 1)[1].splitlines()[1:6]
        assert slowest[0].split() == ["95.0", "µs", "ProfilerStep#3"]
        assert [line.split()[0] for line in slowest] == ["95.0", "19.5", "19.5", "19.0", "19.0"]


async def test_s_walks_the_slowest_calls_then_n_goes_on(spread_path: Path) -> None:
    app = TraceApp(spread_path)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await goto(pilot, SLOW)
        screen = app.screen
        assert isinstance(screen, ExplorerScreen)
        row = screen.insight.distribution(SLOW)
        assert row is not None
        tree = tree_of(app)
        visited = []
        for _ in range(3):
            await pilot.press("s")
            await settle(pilot)
            visited.append(tree.cursor_key)
        assert visited == row["slowest_ids"][:3]
        assert "slowest calls: gemm_kernel  3/5" in str(screen.query_one("#status", Static).content)
        assert "← this one" in details_text(app)
        await pilot.press("n")
        await settle(pilot)
        assert tree.cursor_key == row["slowest_ids"][3]


async def test_step_details_show_the_step_times(spread_path: Path) -> None:
    app = TraceApp(spread_path)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await goto(pilot, "ProfilerStep#2")
        text = details_text(app)
        assert "Distribution of 4 steps" in text
        assert "p50 1.52 ms · p90 1.53 ms · p99 1.53 ms" in text
        await pilot.press("s")
        await settle(pilot)
        node = tree_of(app).cursor_node
        assert node is not None and node.name == "ProfilerStep#4"  # the longest step


async def test_ranks_screen_shows_the_step_times_across_ranks() -> None:
    """The Ranks screen's line is the run's `summary --json` ``distributed.step_times``, written by
    the one formatter."""
    import json

    from click.testing import CliRunner

    from tests.ranks.conftest import GLOO4
    from tracetui import formatting as fmt
    from tracetui.app.run_app import RunApp
    from tracetui.app.screens.ranks import RanksScreen
    from tracetui.cli import cli
    from tracetui.ranks.discover import resolve

    result = CliRunner().invoke(cli, ["summary", str(GLOO4), "--json"])
    times = json.loads(result.output)["distributed"]["step_times"]
    app = RunApp(resolve([GLOO4]), GLOO4.name)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, RanksScreen)
        facts = str(app.screen.query_one("#ranks-facts").render()).splitlines()
    line = next(text for text in facts if text.startswith("step times of "))
    slowest = times["slowest"][0]
    assert line == (
        f"step times of 4 ranks ({times['count']}): {fmt.duration(times['min_us'])} "
        f"{sparkline(times['histogram']['bins'])} {fmt.duration(times['max_us'])} "
        f"({slowest['name']}, rank {slowest['rank']}) · "
        + " · ".join(f"p{p} {fmt.duration(times[f'p{p}_us'])}" for p in (50, 90, 99))
    )


async def test_s_elsewhere_says_what_it_is_for(spread_path: Path) -> None:
    app = TraceApp(spread_path)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await goto(pilot, "aten::mm")
        before = tree_of(app).cursor_key
        await pilot.press("s")
        await settle(pilot)
        assert tree_of(app).cursor_key == before
        assert any("on GPU work or a step" in str(n.message) for n in app._notifications)


async def test_kernels_table_percentiles_and_histogram(spread_path: Path) -> None:
    app = TraceApp(spread_path)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TablesScreen)
        titles = [c.title for c in screen.table.columns]
        assert titles[:10] == [
            "kernel",
            "calls",
            "total",
            "avg",
            "min",
            "p50",
            "p90",
            "p99",
            "max",
            "min … max",
        ]
        row = screen.table.row(0)
        assert (row["p50_us"], row["p90_us"], round(row["p99_us"], 3)) == (15.0, 19.0, 65.555)
        assert screen.table.columns[9].text(row["histogram"]) == sparkline(row["histogram"])


# ---- snapshots ----------------------------------------------------------------------------------


def test_snapshot_kernel_distribution_in_details(snap_compare, spread_path: Path) -> None:
    """The details of a kernel with an outlier: histogram, p50/p90/p99, max, the slowest calls."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        await goto(pilot, SLOW, nth=27)

    assert snap_compare(TraceApp(spread_path), terminal_size=WIDE, run_before=run_before)


def test_snapshot_step_times_in_details(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await goto(pilot, "ProfilerStep#3")

    assert snap_compare(TraceApp(fixture("mlp_eager")), terminal_size=WIDE, run_before=run_before)


def test_snapshot_kernels_table_with_percentiles(snap_compare, spread_path: Path) -> None:
    assert snap_compare(TraceApp(spread_path), terminal_size=WIDE, run_before=keys("2"))


def test_snapshot_distribution_at_80x24(snap_compare, spread_path: Path) -> None:
    """80×24: the details under the tree, scrolled to the histogram."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        await goto(pilot, SLOW, nth=27)
        lines = details_text(pilot.app).splitlines()
        top = next(i for i, line in enumerate(lines) if line.startswith("Distribution"))
        pilot.app.screen.query_one("#details-pane").scroll_to(y=top, animate=False)
        await pilot.pause()

    assert snap_compare(TraceApp(spread_path), terminal_size=(80, 24), run_before=run_before)
