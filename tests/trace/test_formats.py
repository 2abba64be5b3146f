"""One test per format variant and anomaly the model must handle (synthetic traces)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import tracetui
from tests.trace.synth import annotation, kernel, launch, mlp_like, op, trace_doc, write, x
from tracetui.safetext import shown


def load_doc(tmp_path: Path, doc: object, name: str = "t.json", gz: bool = False) -> tracetui.Trace:
    return tracetui.load(write(tmp_path / name, doc, gz=gz))


def test_gzip_detected_by_magic_not_name(tmp_path: Path) -> None:
    trace = load_doc(tmp_path, trace_doc(mlp_like()), name="plain_name.json", gz=True)
    assert trace.gzipped and trace.gpu.height == 1


def test_bare_event_array(tmp_path: Path) -> None:
    trace = load_doc(tmp_path, mlp_like())
    assert trace.format.startswith("legacy exporter")
    assert trace.events.height == len(mlp_like())


def test_integer_epoch_microseconds_are_exact(tmp_path: Path) -> None:
    ts = 1680718159986758  # PyTorch <= 2.3: integer µs since the epoch
    events = [op("aten::mm", ts, 3), launch("cudaLaunchKernel", ts + 1, 1, correlation=1)]
    trace = load_doc(tmp_path, {"schemaVersion": 1, "traceEvents": events})
    assert trace.events["start_ns"].to_list() == [ts * 1000, (ts + 1) * 1000]
    assert trace.format == "PyTorch 2.0–2.3 (integer µs timestamps)"
    assert trace.events.filter(pl.col("cat") == "cuda_runtime")["parent"].to_list() == [0]


def test_relative_nanosecond_timestamps_are_exact(tmp_path: Path) -> None:
    text = (
        '{"baseTimeNanoseconds": 1790857026000000000, "traceEvents": ['
        '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
        '"ts": 5125186291780.227, "dur": 395.614}]}'
    )
    path = tmp_path / "t.json"
    path.write_text(text)
    row = tracetui.load(path).events.row(0, named=True)
    assert row["start_ns"] == 5125186291780227 and row["end_ns"] == 5125186291780227 + 395614


def test_string_pid_and_tid(tmp_path: Path) -> None:
    events = [*mlp_like(), x("Trace", "PyTorch Profiler (0)", 0, 200, pid="Spans", tid="PyTorch Profiler")]
    events.append({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 300})
    trace = load_doc(tmp_path, trace_doc(events))
    assert "Spans" in trace.tracks["pid"].to_list()
    assert trace.instants["pid"].to_list() == [""]


def test_unsorted_events_nest_the_same(tmp_path: Path) -> None:
    ordered = load_doc(tmp_path, trace_doc(mlp_like()), name="a.json")
    shuffled = list(reversed(mlp_like()))
    unsorted = load_doc(tmp_path, trace_doc(shuffled), name="b.json")

    def chain(trace: tracetui.Trace) -> list[str]:
        gemm = trace.gpu.row(0, named=True)
        return [trace.event(i)["name"] for i in trace.ancestors(gemm["id"])]

    assert (
        chain(ordered)
        == chain(unsorted)
        == [
            "ProfilerStep#1",
            "fwd",
            "aten::linear",
            "aten::addmm",
            "cudaLaunchKernel",
            "gemm_kernel",
        ]
    )


def test_flow_finish_before_start_still_links_backward(tmp_path: Path) -> None:
    events = [
        {"ph": "f", "id": 1, "pid": 100, "tid": 200, "ts": 50, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"},
        op("AddmmBackward0", 50, 5, tid=200, seq=3, fwd_tid=1),
        op("aten::addmm", 10, 5, seq=3, fwd_tid=0),
        {"ph": "s", "id": 1, "pid": 100, "tid": 100, "ts": 10, "cat": "fwdbwd", "name": "fwdbwd"},
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    backward = trace.events.filter(pl.col("name") == "AddmmBackward0").row(0, named=True)
    assert trace.event(backward["fwd_id"])["name"] == "aten::addmm"


def test_sequence_numbers_link_backward_without_flows(tmp_path: Path) -> None:
    events = [
        op("aten::addmm", 10, 5, seq=3, fwd_tid=0),
        op("AddmmBackward0", 50, 5, tid=200, seq=3, fwd_tid=1),
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    backward = trace.events.filter(pl.col("name") == "AddmmBackward0").row(0, named=True)
    assert trace.event(backward["fwd_id"])["name"] == "aten::addmm"


def test_strings_where_numbers_are_expected(tmp_path: Path) -> None:
    events = [
        launch("cudaMemcpyAsync", 0, 2, correlation=4),
        x(
            "gpu_memcpy",
            "Memcpy HtoD (Pageable -> Device)",
            5,
            0,
            pid=0,
            tid=7,
            correlation=4,
            bytes=64,
            **{"memory bandwidth (GB/s)": "N/A"},
        ),
        kernel("k", 6, 1, correlation=None, **{"blocks per SM": "inf", "warps per SM": "inf"}),
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    memcpy = trace.gpu.filter(pl.col("cat") == "gpu_memcpy").row(0, named=True)
    assert memcpy["bandwidth"] is None and memcpy["bytes"] == 64
    assert trace.gpu.filter(pl.col("cat") == "kernel")["blocks_per_sm"].to_list() == [float("inf")]


def test_pre_2_0_category_names(tmp_path: Path) -> None:
    events = [
        x("Operator", "aten::mm", 0, 10),
        x("Runtime", "cudaLaunchKernel", 1, 2, correlation=9),
        x("Kernel", "gemm", 5, 3, pid=0, tid="stream 7", correlation=9, device=0),
        x("Memset", "Memset (Device)", 9, 1, pid=0, tid="stream 7"),
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    assert set(trace.events["cat"]) == {"cpu_op", "cuda_runtime", "kernel", "gpu_memset"}
    assert trace.format.startswith("pre-2.0")
    assert trace.event(trace.gpu.filter(pl.col("cat") == "kernel")["launch_op_id"][0])["name"] == "aten::mm"
    assert trace.orphans["name"].to_list() == ["Memset (Device)"]


def test_ties_resolved_by_category_rank_then_file_order(tmp_path: Path) -> None:
    # identical intervals: annotation outside op outside runtime call, whatever the file order
    events = [
        launch("cudaLaunchKernel", 10, 5, correlation=1),
        op("aten::mm", 10, 5),
        annotation("fwd", 10, 5),
        op("aten::second", 10, 5),
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    parent = {row["name"]: row["parent"] for row in trace.events.iter_rows(named=True)}
    name = {row["id"]: row["name"] for row in trace.events.iter_rows(named=True)}
    assert parent["fwd"] is None
    assert name[parent["aten::mm"]] == "fwd"
    assert name[parent["aten::second"]] == "aten::mm"  # same rank: file order decides
    assert name[parent["cudaLaunchKernel"]] == "aten::second"


def test_zero_duration_call_nests_in_its_op(tmp_path: Path) -> None:
    events = [
        op("aten::mm", 10, 0),
        launch("cudaLaunchKernel", 10, 0, correlation=1),
        kernel("k", 11, 1, correlation=1),
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    assert trace.ops.row(0, named=True)["kernels"] == 1


def test_partial_overlap_is_an_anomaly_and_a_sibling(tmp_path: Path) -> None:
    events = [
        annotation("outer", 0, 100),
        x("python_function", "enter", 5, 10),  # straddles the start of "span"
        annotation("span", 10, 50),
        op("aten::mm", 20, 5),
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    ids = {row["name"]: row["id"] for row in trace.events.iter_rows(named=True)}
    anomalies = trace.anomalies.filter(pl.col("kind") == "partial_overlap")
    assert anomalies.select("event_id", "other_id").rows() == [(ids["span"], ids["enter"])]
    assert trace.event(ids["span"])["parent"] == ids["outer"]
    assert trace.event(ids["aten::mm"])["parent"] == ids["span"]


def test_deep_python_stack_does_not_recurse(tmp_path: Path) -> None:
    depth = 5000
    events = [x("python_function", f"f{i}", i, 2 * depth - 2 * i) for i in range(depth)]
    trace = load_doc(tmp_path, trace_doc(events))
    assert trace.events["depth"].max() == depth - 1
    assert len(trace.ancestors(depth - 1)) == depth


def test_one_call_many_kernels_and_orphans(tmp_path: Path) -> None:
    events = [
        launch("cudaGraphLaunch", 0, 5, correlation=3),
        *[kernel(f"k{i}", 10 + i, 1, correlation=3) for i in range(7)],
        kernel("before_window", 0, 1, correlation=99),
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    call = trace.events.filter(pl.col("name") == "cudaGraphLaunch").row(0, named=True)
    assert call["gpu_events"] == 7 and call["kernels"] == 7
    assert trace.orphans["name"].to_list() == ["before_window"]
    assert trace.kernels.filter(pl.col("name") == "before_window")["orphans"].to_list() == [1]


def test_external_id_disagreement_is_counted(tmp_path: Path) -> None:
    events = [
        op("aten::mm", 0, 10, external_id=5),
        launch("cudaLaunchKernel", 1, 2, correlation=1, external_id=6),
        kernel("k", 5, 1, correlation=1, external_id=6),
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    assert trace.anomalies["kind"].to_list() == ["external_id_mismatch"]


def test_external_id_not_checked_before_2_4(tmp_path: Path) -> None:
    events = [
        op("aten::mm", 0, 10, external_id=5),
        launch("cudaLaunchKernel", 1, 2, correlation=1, external_id=1),
    ]
    trace = load_doc(tmp_path, {"traceEvents": events})
    assert trace.anomalies.is_empty()


def test_gpu_user_annotation_is_an_overlay_not_a_parent(tmp_path: Path) -> None:
    events = [*mlp_like(), x("gpu_user_annotation", "fwd", 19, 42, pid=0, tid=7)]
    trace = load_doc(tmp_path, trace_doc(events))
    gemm = trace.gpu.filter(pl.col("cat") == "kernel").row(0, named=True)
    assert gemm["parent"] is None and trace.event(gemm["launch_id"])["name"] == "cudaLaunchKernel"


def test_unknown_args_are_kept(tmp_path: Path) -> None:
    events = [op("aten::mm", 0, 10, **{"Some future arg": [1, {"x": 2}]})]
    trace = load_doc(tmp_path, trace_doc(events))
    assert trace.event_args(0)["Some future arg"] == [1, {"x": 2}]
    assert json.loads(trace.args_json()[0])["Some future arg"] == [1, {"x": 2}]


def test_control_characters_are_neutralised_at_load(tmp_path: Path) -> None:
    events = [op("evil\x1b]52;c;AAAA\x07name\u202e", 0, 1), op("[bold red]x[/] [@click=app.quit]", 2, 1)]
    trace = load_doc(tmp_path, trace_doc(events))
    names = trace.events["name"].to_list()
    # control characters never reach the model; a direction mark is text, kept exactly (--json,
    # Parquet) and written as a visible escape on a terminal (tracetui.safetext.shown)
    assert names[0] == "evil\ufffd]52;c;AAAA\ufffdname\u202e"
    assert shown(names[0]) == "evil\ufffd]52;c;AAAA\ufffdname\\u202e"
    assert names[1] == "[bold red]x[/] [@click=app.quit]"  # markup is data: kept verbatim


def test_missing_timestamp_is_reported_not_lost(tmp_path: Path) -> None:
    events = [op("aten::mm", 0, 10), {"ph": "X", "cat": "cpu_op", "name": "no_ts", "pid": 100, "tid": 100}]
    trace = load_doc(tmp_path, trace_doc(events))
    assert trace.anomalies["kind"].to_list() == ["missing_timestamp"]
    assert "no_ts" in trace.events["name"].to_list()


def test_malformed_field_types_fall_back_not_fail(tmp_path: Path) -> None:
    events = [
        op("aten::mm", 0, 10),
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "odd",
            "pid": [1],
            "tid": 1,
            "ts": 1,
            "dur": 1,
            "args": {"External id": {"nested": 1}},
        },
    ]
    trace = load_doc(tmp_path, trace_doc(events))
    assert trace.events.height == 2 and trace.repairs


@pytest.mark.parametrize("phase", ["B", "E"])
def test_unmodelled_phases_are_counted(tmp_path: Path, phase: str) -> None:
    events = [op("aten::mm", 0, 10), {"ph": phase, "name": "other", "pid": 1, "tid": 1, "ts": 3}]
    trace = load_doc(tmp_path, trace_doc(events))
    assert trace.other_phases == {phase: 1}
    assert trace.event_count == 2


def test_counter_samples_are_kept_not_only_counted(tmp_path: Path) -> None:
    """``C`` is modelled (tracetui.views.counters reads its values): a row of ``counters``."""
    events = [op("aten::mm", 0, 10), {"ph": "C", "name": "q", "pid": 1, "tid": 1, "ts": 3, "args": {"n": 2}}]
    trace = load_doc(tmp_path, trace_doc(events))
    assert trace.other_phases == {}
    assert trace.counters.select("name", "ts").rows() == [("q", 3.0)]
    assert trace.event_count == 2


def test_values_outside_64_bits_load_without_error(tmp_path: Path) -> None:
    """Found by fuzzing real traces: a pid past 2⁶³, a timestamp or duration too large for ns."""
    events = mlp_like()
    events.append(x("cpu_op", "huge_pid", 0, 1, pid=2**63, tid=1))
    events.append(x("cpu_op", "far_future", 9.2e18, 1))
    events.append(x("cpu_op", "endless", 1, 9.2e21))
    trace = load_doc(tmp_path, trace_doc(events))
    rows = {r["name"]: r for r in trace.events.iter_rows(named=True)}
    assert rows["huge_pid"]["pid"] == str(2**63)
    assert rows["far_future"]["start_ns"] is None
    assert rows["endless"]["start_ns"] == 1000 and rows["endless"]["end_ns"] == 1000
    assert trace.gpu.height == 1  # the rest is unaffected


def test_infinite_times_load_without_error(tmp_path: Path) -> None:
    """Found by fuzzing: the exact ns, computed as a query, cast every row's time, the unusable too;
    an infinite timestamp or duration failed the load."""
    events = mlp_like()
    events.append(x("cpu_op", "at_infinity", "inf", 1))  # text where a number belongs: read as a float
    events.append(x("cpu_op", "forever", 1, "-inf"))
    trace = load_doc(tmp_path, trace_doc(events))
    rows = {r["name"]: r for r in trace.events.iter_rows(named=True)}
    assert rows["at_infinity"]["ts"] == float("inf") and rows["at_infinity"]["start_ns"] is None
    assert rows["forever"]["start_ns"] == 1000 and rows["forever"]["end_ns"] == 1000
    assert trace.gpu.height == 1  # the rest is unaffected


@pytest.mark.parametrize("props", [3.5, True, "H200", [None, 7], [{"id": [0], "name": 5}]])
def test_malformed_device_properties_are_ignored(tmp_path: Path, props: object) -> None:
    """Found by fuzzing: ``deviceProperties`` that is not a list of objects."""
    trace = load_doc(tmp_path, trace_doc(mlp_like(), deviceProperties=props))
    assert all(isinstance(d.get("name"), str | None) for d in trace.devices)
    assert 0 in {d.get("id") for d in trace.devices}  # the device seen in the kernel events


def test_booleans_where_numbers_or_text_are_expected(tmp_path: Path) -> None:
    """Found by fuzzing: ``true`` as a metadata event's ``sort_index`` or ``name`` arg."""
    events = [
        *mlp_like(),
        {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 1, "args": {"sort_index": True}},
    ]
    events.append({"ph": "M", "name": "process_name", "pid": 1, "args": {"name": False}})
    trace = load_doc(tmp_path, trace_doc(events))
    assert trace.gpu.height == 1 and any("malformed" in r for r in trace.repairs)


def test_invalid_utf8_inside_raw_args(tmp_path: Path) -> None:
    """Found by fuzzing: a damaged byte inside ``Input type`` or ``grid`` (kept as raw JSON)."""
    events = mlp_like()
    events[4]["args"] = {"Input Dims": [[8, 4], [4, 2]], "Input type": ["BAD", "c10::BFloat16"]}
    events[6]["args"]["grid"] = ["BAD", 1, 1]
    text = json.dumps(trace_doc(events)).encode().replace(b"BAD", b"c10::\xffHalf")
    path = tmp_path / "damaged.json"
    path.write_bytes(text)
    trace = tracetui.load(path)
    assert trace.gpu["grid"].to_list() == ['["c10::\ufffdHalf", 1, 1]']
    shapes = trace.launch_shapes.row(0, named=True)
    assert shapes["input_type"] == '["c10::\ufffdHalf", "c10::BFloat16"]'
