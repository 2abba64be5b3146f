"""The Why view's model (tracetui/views/why.py) and the tree's path marks (views/path_marks.py): every
figure is ``summary --json``'s for the same trace (one number, one computation), the path's events
are the ``critical_path`` pieces in the order the path reaches them, and the marks are the nodes
:meth:`TreeModel.path_to` names."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import tracetui
from tests.app.synthetic import cpu_steps_trace
from tracetui import formatting as fmt
from tracetui.cli import cli
from tracetui.insight.critical_path import pieces, step_paths
from tracetui.insight.spans import verdicts
from tracetui.insight.why_data import PATH_PARTS
from tracetui.sample_traces import default_trace
from tracetui.views.path_marks import NO_TREE_MARKS, tree_marks
from tracetui.views.timeline.critical import critical_path_overlay
from tracetui.views.tree import TreeModel
from tracetui.views.why import (
    HEADLINES,
    NO_STEPS,
    PathEvents,
    chosen_step,
    path_events,
    paths_overlay,
    why_view,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WITH_STEPS = ("mlp_eager", "mlp_train_tbhandler_stack_memory.pt.trace")


def summary_json(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["summary", "--json", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", WITH_STEPS)
def test_every_figure_is_summary_jsons(name: str) -> None:
    """Per step: the verdict, the path (length, parts, top items), the idle time, the launch figures
    and the advice are ``summary --json``'s, and the view's text writes those numbers."""
    path = FIXTURES / f"{name}.json.gz"
    data = summary_json(path)
    trace = tracetui.load(path)
    ids = dict(verdicts(trace)[0].select("name", "id").iter_rows())
    assert data["steps"]
    for step in data["steps"]:
        view = why_view(trace, ids[step["name"]])
        assert (view.step_name, view.chosen) == (step["name"], "the cursor's step")
        assert (view.bound, view.verdict) == (step["bound"], step["verdict"])
        assert view.headline == HEADLINES[step["bound"]]
        assert view.path == step["critical_path"]
        assert view.idle == step["idle"]
        assert view.launch == step["launch"]
        assert list(view.advice) == data["advice"]
        top = step["critical_path"]["top"]
        assert [(t.name, t.kind, t.us, t.share) for t in view.top] == [
            (t["name"], t["kind"], t["us"], t["share"]) for t in top
        ]
        length = step["critical_path"]["length_us"]
        assert {label: us for label, us, _ in view.parts} == {
            label: step["critical_path"][key] for key, label in PATH_PARTS
        }
        assert sum(us for _, us, _ in view.parts) == pytest.approx(length)
        line = view.split_line()
        assert line.startswith(f"critical path {fmt.duration(length)}: ")
        for key, label in PATH_PARTS:
            share = step["critical_path"][key] / length
            assert (f"{label} {fmt.percent(100 * share)}" in line) == (share > 0)
        idle_text = view.idle_lines()[0]
        for key in ("idle_us", "host_wait_us", "kernel_wait_us", "other_us"):
            assert fmt.duration(step["idle"][key]) in idle_text
        for (action, evidence), item in zip(view.advice_lines(), data["advice"], strict=True):
            assert item["action"] in action and fmt.duration(item["saving_us"]) in action
            assert evidence == item["evidence"]


def test_items_lead_to_their_longest_event_on_the_path() -> None:
    """A path item's event is the one of its name and kind with the most time on the step's path;
    a host gap or a wait between kernels has none; GPU work is labelled by its decoded short name."""
    trace = tracetui.load(FIXTURES / "mlp_eager.json.gz")
    step = step_paths(trace).spans["span"][-1]  # its path crosses kernels (the first two steps' not)
    view = why_view(trace, step)
    crossed = pieces(trace, step_paths(trace), [step])
    for item in view.top:
        mine = crossed.filter((crossed["name"] == item.name) & (crossed["kind"] == item.kind))
        if mine["id"].null_count() == len(mine):  # a host gap, kernel to kernel: no event
            assert item.event_id is None and item.events == 0
            continue
        summed: dict[int, int] = {}
        for i, ns in mine.select("id", "ns").iter_rows():
            summed[i] = summed.get(i, 0) + ns
        assert item.events == len(summed)
        assert summed[item.event_id] == max(summed.values())
    kernels = [t for t in view.top if t.kind == "kernel"]
    assert kernels and all(t.label != t.name for t in kernels)  # nvjet_sm90_… → nvjet gemm bf16 …
    assert all(row["name"] == t.label for row, t in zip(view.rows(), view.top, strict=True))


def test_path_events_in_the_order_the_path_reaches_them() -> None:
    trace = tracetui.load(FIXTURES / "mlp_eager.json.gz")
    for step in step_paths(trace).spans["span"].to_list():
        events = why_view(trace, step).events
        assert events is not None and events.ids
        crossed = pieces(trace, step_paths(trace), [step]).drop_nulls("id")
        assert set(events.ids) == set(crossed["id"].to_list())
        firsts = {i: crossed.filter(crossed["id"] == i)["start_ns"].min() for i in events.ids}
        assert list(events.starts) == [firsts[i] for i in events.ids]
        assert list(events.starts) == sorted(events.starts)


def test_the_steps_paths_overlay_is_rs() -> None:
    """Every step's path found one by one marks what ``r`` marks, with its legend; one step's
    legend names it and its path's length (``summary --json``'s)."""
    trace = tracetui.load(FIXTURES / "mlp_eager.json.gz")
    steps = step_paths(trace).spans
    every = [path_events(trace, step) for step in steps["span"].to_list()]
    assert paths_overlay(every) == critical_path_overlay(trace)
    first = steps.row(0, named=True)
    ids, legend = paths_overlay(every[:1])
    assert ids == sorted(every[0].ids)
    assert legend == f"critical path: {first['name']}, {fmt.duration(first['length_us'])}"


def test_next_and_previous_on_a_path() -> None:
    """On the path: the one after (before), wrapping; off it: the first reached after (the last
    before) the cursor's start, else the first (last)."""
    path = PathEvents(1, (10, 11, 12), (100, 200, 300), (5, 5, 5))
    assert [path.after(i, None) for i in (10, 11, 12)] == [1, 2, 0]
    assert [path.before(i, None) for i in (10, 11, 12)] == [2, 0, 1]
    assert path.after(99, 150) == 1 and path.before(99, 150) == 0
    assert path.after(99, 300) == 0 and path.before(99, 100) == 2  # none after / before: wrap
    assert path.after(None, None) == 0 and path.before(None, None) == 2
    assert PathEvents(1, (), (), ()).after(10, 0) is None


def test_outside_the_steps_the_slowest_step() -> None:
    trace = tracetui.load(FIXTURES / "mlp_eager.json.gz")
    spans = step_paths(trace).spans
    slowest = spans.sort("length_us", descending=True)["span"][0]
    assert chosen_step(trace, None) == (slowest, "the slowest step: the cursor is outside the steps")
    other = spans.sort("length_us")["span"][0]
    assert chosen_step(trace, other) == (other, "the cursor's step")
    assert why_view(trace, 123_456_789).step_id == slowest  # not a step


def test_a_trace_without_steps_gets_the_advice_only() -> None:
    path = FIXTURES / "cpu_only.json.gz"
    view = why_view(tracetui.load(path), None)
    assert view.step_id is None and view.events is None and view.headline == NO_STEPS
    assert list(view.advice) == summary_json(path)["advice"]


@pytest.mark.parametrize("name", WITH_STEPS)
def test_tree_marks_are_the_nodes_path_to_names(name: str) -> None:
    """The vectorised marks equal, event by event, :meth:`TreeModel.path_to`'s keys."""
    trace = tracetui.load(FIXTURES / f"{name}.json.gz")
    model = TreeModel(trace)
    steps = model.step_ids[-1:]
    marks = NO_TREE_MARKS
    for step in steps:
        events = why_view(trace, step).events
        assert events is not None
        marks = tree_marks(model, events.ids, marks)
    assert tree_marks(model, [], marks) is marks
    on: set[object] = set()
    above: set[object] = set()
    for step in steps:
        events = why_view(trace, step).events
        assert events is not None
        for event_id in events.ids:
            chain = model.path_to(event_id)
            assert chain is not None
            on.add(event_id)
            above.update(chain[:-1])
    assert marks.on == on and marks.above == above
    assert any(isinstance(key, tuple) for key in above) or name == "mlp_eager"
    assert marks.of(next(iter(on))) == "on" and marks.of(("nothing",)) == ""


SAMPLES = default_trace().parent  # the installed package's copy: CI runs the tests against an install


@pytest.mark.parametrize(
    ("make", "bounds"),
    [
        (lambda _: FIXTURES / "mlp_eager.json.gz", {"launch-bound"}),
        (lambda _: SAMPLES / "mlp_cudagraph.json.gz", {"gpu-bound", "gpu-waits"}),
        (lambda folder: cpu_steps_trace(folder / "cpu_steps.json"), {"idle"}),
    ],
    ids=["eager", "cuda-graph", "cpu-steps"],
)
def test_each_headline_is_the_steps_own_verdict(
    make: Callable[[Path], Path], bounds: set[str], tmp_path: Path
) -> None:
    """Every one of the view's four headlines is reached by a real or built trace: per step, the
    headline is the one of the step's ``bound`` in ``summary --json``, and the verdict beside it."""
    path = make(tmp_path)
    data = summary_json(path)
    trace = tracetui.load(path)
    ids = dict(verdicts(trace)[0].select("name", "id").iter_rows())
    seen = set()
    for step in data["steps"]:
        view = why_view(trace, ids[step["name"]])
        assert view.bound == step["bound"] and view.headline == HEADLINES[step["bound"]]
        assert view.verdict == step["verdict"]
        seen.add(view.bound)
    assert seen == bounds


def test_the_four_headlines_are_four_verdicts() -> None:
    """The headlines are keyed by the verdicts ``verdicts`` gives, one sentence each."""
    assert set(HEADLINES) == {"launch-bound", "gpu-bound", "gpu-waits", "idle"}
    assert len(set(HEADLINES.values())) == 4
