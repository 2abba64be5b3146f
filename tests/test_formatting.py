"""The one formatter every surface writes numbers with: units, separators, rounding, and the polars
twins that write the same text over whole columns."""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracetui import formatting as fmt

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("us", "text"),
    [
        (0, "0.0 µs"),
        (0.004, "0.00 µs"),
        (3.256, "3.26 µs"),
        (9.994, "9.99 µs"),
        (9.996, "10.0 µs"),  # the unit's step where the rounded text reaches it, not before
        (56.38, "56.4 µs"),
        (999.94, "999.9 µs"),
        (999.96, "1.00 ms"),
        (1234.5, "1.23 ms"),
        (345_195.0, "345.20 ms"),
        (999_996, "1.00 s"),
        (2_500_000, "2.50 s"),
        (1_234_567_890, "1,234.57 s"),
        (-27.2, "-27.2 µs"),
        (None, ""),
    ],
)
def test_durations_pick_their_unit(us: float | None, text: str) -> None:
    assert fmt.duration(us) == text


def test_counts_percentages_and_changes() -> None:
    assert fmt.count(1234567) == "1,234,567" and fmt.count(2.0) == "2" and fmt.count(None) == ""
    assert fmt.count(7 / 3) == "2.33" and fmt.count(1234.5) == "1,234.50"
    assert fmt.percent(44.5) == "45%" and fmt.percent(99.4) == "99%" and fmt.percent(1234) == "1,234%"
    assert fmt.signed_percent(11.74) == "+11.7%" and fmt.signed_percent(-3) == "-3.0%"
    assert fmt.duration_change(233.7, 206.5) == "-27.2 µs (-11.6%)"
    assert fmt.duration_change(1000.0, 3500.0) == "+2.50 ms (+250.0%)"
    assert fmt.duration_change(5.0, 5.0) == "" and fmt.duration_change(None, 5.0) == ""
    assert fmt.count_change(5, 4) == "-1" and fmt.count_change(2, 4) == "+2" and fmt.count_change(1, 1) == ""
    assert fmt.percent_change(0.0, 4.0) == ""  # no base to compare with


def test_sizes_quantities_and_offsets() -> None:
    assert fmt.size(213188) == "208.2 KiB" and fmt.size(512) == "512 B"
    assert fmt.size(3 * 2**40) == "3,072.0 GiB"
    assert fmt.si(38_654_705_664, "FLOP") == "38.7 GFLOP" and fmt.si(655_360, "FLOP") == "655 kFLOP"
    assert fmt.si(12.5, "B") == "12.5 B" and fmt.si(999.6e9, "FLOP") == "1,000 GFLOP"
    assert fmt.offset(1_234_567_890 + 5, 5) == "1,234.568 ms" and fmt.offset(None, 0) == ""


@pytest.mark.parametrize(
    ("value", "bytes_text", "flops_text"),
    [
        (4037.3, "4.04 TB/s", "4,037 TFLOP/s"),
        (3900.0, "3.90 TB/s", "3,900 TFLOP/s"),
        (500.0, "500 GB/s", "500 TFLOP/s"),
        (99.4, "99.4 GB/s", "99.4 TFLOP/s"),
        (12.345, "12.3 GB/s", "12.3 TFLOP/s"),
        (9.994, "9.99 GB/s", "9.99 TFLOP/s"),
        (0.5, "0.50 GB/s", "500 GFLOP/s"),
    ],
)
def test_rates(value: float, bytes_text: str, flops_text: str) -> None:
    assert fmt.byte_rate(value) == bytes_text
    assert fmt.flops_rate(value) == flops_text


FINITE = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)
EDGES = st.sampled_from([0.0, 9.995, 999.95, 999_995.0, 99.5, 0.5, 1e-9, float("nan"), float("inf")])


@settings(deadline=None)  # a dozen polars expressions per example: slow on a loaded machine
@given(st.lists(st.one_of(FINITE, EDGES, st.none()), min_size=1, max_size=40))
def test_polars_twins_write_the_same_text(values: list[float | None]) -> None:
    column = pl.DataFrame({"v": values}, schema={"v": pl.Float64})
    out = column.select(
        duration=fmt.duration_expr(pl.col("v")),
        percent=fmt.percent_expr(pl.col("v")),
        number=fmt.number_expr(pl.col("v")),
        count=fmt.count_expr(pl.col("v")),
        size=fmt.size_expr(pl.col("v")),
        flops=fmt.flops_rate_expr(pl.col("v")),
        bytes=fmt.byte_rate_expr(pl.col("v")),
    )
    for value, row in zip(values, out.iter_rows(named=True), strict=True):
        if value is None:
            assert set(row.values()) == {None}
            continue
        assert row["duration"] == fmt.duration(value)
        assert row["percent"] == fmt.percent(value)
        assert row["number"] == fmt.number(value)
        assert row["count"] == fmt.count(value)
        assert row["size"] == (fmt.size(value) if math.isfinite(value) else "? GiB")
        assert row["flops"] == fmt.flops_rate(value)
        assert row["bytes"] == fmt.byte_rate(value)


def test_one_value_reads_the_same_on_every_surface() -> None:
    """A step's CPU span and GPU busy time, as the tree row, the details pane, the steps table and the
    summary write them: one text, from one formatter."""
    from rich.console import Console

    import tracetui
    from tracetui.app.widgets.details import describe
    from tracetui.insight.summary_data import summary_data
    from tracetui.report.summary import summary_renderable
    from tracetui.views.insight import load_insight
    from tracetui.views.tables import build_tables
    from tracetui.views.tree import TreeModel

    trace = tracetui.load(FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz")
    step = trace.steps.row(0, named=True)
    span, busy = fmt.duration(step["dur"]), fmt.duration(step["gpu_busy_us"])
    assert span.endswith(" ms") and busy.endswith(" µs")  # 3.42 ms of CPU, 83.1 µs of GPU busy

    model = TreeModel(trace)
    assert model.node(step["id"]).cpu_us == step["dur"]  # the tree row writes fmt.duration of it
    insight = load_insight(trace)
    table = build_tables(trace, insight)["steps"]
    row = table.frame.filter(pl.col("id") == step["id"]).row(0, named=True)
    cells = {c.key: c.text(row[c.key]) for c in table.columns}
    assert (cells["dur"], cells["gpu_busy_us"]) == (span, busy)
    details = describe(trace, model, step["id"], insight).plain
    assert f"duration           {span}" in details
    assert f"of GPU work; GPU busy {fmt.percent(insight.get(step['id'])['gpu_busy_pct'])}" in details
    console = Console(width=200, record=True, markup=False, highlight=False)
    console.print(summary_renderable(summary_data(trace)))
    summary = console.export_text()
    row_text = rf"{re.escape(step['name'])}\s+{re.escape(span)}\s+{re.escape(busy)}\s"  # the steps table
    assert re.search(row_text, summary), summary


def test_kernel_count_names_memory_only_work() -> None:
    """Issue 14 item 15: a memcpy-only op showed 0 kernels beside its GPU time."""
    assert fmt.kernel_count(3, 5) == "3"
    assert fmt.kernel_count(0, 2) == "2 mem"
    assert fmt.kernel_count(0, 0) == "0"
    assert fmt.kernel_count(None, None) == ""


def test_tally_names_repeated_items_once() -> None:
    """Issue 14 item 15: the diff report wrote "NVIDIA H200, NVIDIA H200" for a rank's devices."""
    assert fmt.tally(["NVIDIA H200", "NVIDIA H200"]) == "2 × NVIDIA H200"
    assert fmt.tally(["NVIDIA H200", "NVIDIA A100", "NVIDIA H200"]) == "2 × NVIDIA H200, NVIDIA A100"
    assert fmt.tally([]) == ""


def test_counts_in_headings_have_thousands_separators(tmp_path: Path) -> None:
    """Issue 14 item 6: the Llama step's details pane wrote "Launched (1110)" beside "kernels 1,024"."""
    import tracetui
    from tests.app import synthetic
    from tracetui.app.widgets.details import MAX_LISTED, describe
    from tracetui.views.insight import load_insight
    from tracetui.views.tree import TreeModel

    n = 1_200
    events = [synthetic.op("ProfilerStep#1", 0.0, 10.0 * n + 10, cat="user_annotation")]
    for i in range(n):
        events.append(
            synthetic.op("cudaLaunchKernel", 1.0 + 10 * i, 2.0, cat="cuda_runtime", correlation=i + 1)
        )
        events.append(synthetic.kernel("k", 5.0 + 10 * i, 1.0, i + 1))
    trace = tracetui.load(synthetic.write(tmp_path / "many.json", events))
    model = TreeModel(trace)
    step = trace.events.filter(pl.col("name") == "ProfilerStep#1")["id"][0]
    text = describe(trace, model, step, load_insight(trace)).plain
    assert "Launched (1,200)" in text and f"… {n - MAX_LISTED:,} more" in text
    assert re.search(r"^  kernels\s+1,200$", text, re.M)


GIB = 2**30


@pytest.mark.parametrize(
    ("value", "limit", "kind", "text"),
    [
        # issue 37 item 4: a 4,345,501,184 B peak against "4 GiB" read "4.0 GiB" beside FAIL
        (4_345_501_184, 4 * GIB, "size", "4.05 GiB"),
        (4 * GIB + 1, 4 * GIB, "size", "4,294,967,297 B"),  # one byte over: the exact bytes
        (4 * GIB - 1, 4 * GIB, "size", "4,294,967,295 B"),  # one byte under
        (4 * GIB, 4 * GIB, "size", "4.0 GiB"),  # equal: as it reads anywhere
        (5 * GIB, 4 * GIB, "size", "5.0 GiB"),  # far from it: its own digits
        (1_048_566, 2**20, "size", "1,023.99 KiB"),  # "1,024.0 KiB" would read as 1 MiB
        (250.04, 250.0, "duration", "250.04 µs"),
        (249.96, 250.0, "duration", "249.96 µs"),
        (250.0, 250.0, "duration", "250.0 µs"),
        (1000.2, 1000.0, "duration", "1.0002 ms"),
        (0.0, 0.5, "duration", "0.0 µs"),
        (5, 4, "count", "5"),
        (4.001, 4, "count", "4.001"),
        (95.4, 95, "percent", "95.4%"),
        (95.6, 95, "percent", "96%"),
        (94.5, 95, "percent", "94.5%"),  # half-up "95%" would read as the limit
    ],
)
def test_a_figure_beside_its_limit_never_reads_as_the_limit(
    value: float, limit: float, kind: fmt.Figure, text: str
) -> None:
    assert fmt.beside_limit(value, limit, kind) == text


@settings(max_examples=200)
@given(st.integers(0, 2**44), st.integers(0, 2**44))
def test_a_size_beside_its_limit_reads_back_on_its_side(value: int, limit: int) -> None:
    """The shown size, read back by the one size parser, is above or below the limit as the figure is."""
    shown = fmt.parse_size(fmt.beside_limit(value, limit, "size").replace(",", ""))
    if value != limit:  # at the limit it reads as written anywhere
        assert (shown > limit) - (shown < limit) == (value > limit) - (value < limit)


@settings(max_examples=200)
@given(
    st.floats(0, 1e8, allow_nan=False, allow_subnormal=False),
    st.floats(0, 1e8, allow_nan=False, allow_subnormal=False),
)
def test_a_duration_beside_its_limit_reads_on_its_side(value: float, limit: float) -> None:
    text = fmt.beside_limit(value, limit, "duration")
    number, unit = text.replace(",", "").split(" ")
    shown = float(number) * {"µs": 1.0, "ms": 1e3, "s": 1e6}[unit]
    side = (value > limit) - (value < limit)
    assert side == 0 or (shown - limit) * side > 0 or math.isclose(shown, limit, rel_tol=1e-12)
