"""Hostile input: text values over ``limits.MAX_TEXT`` bytes are cut, args objects over
``limits.MAX_ARGS`` are not kept, by the native scanner and the msgspec path alike, and each is an
anomaly (``long_string``, ``long_args``) and a repairs line; bounded memory under a cap."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import tracetui
from tests.trace.test_native import assert_same, both, msgspec_only
from tracetui.trace import limits, native, stream
from tracetui.trace.limits import MAX_ARGS, MAX_TEXT

MB = 1 << 20


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TRACETUI_NO_CACHE="1", COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "tracetui", *args], capture_output=True, text=True, timeout=120, env=env
    )


def mark(length: int) -> str:
    return f"{limits.TEXT_MARK[0]}{length}{limits.TEXT_MARK[1]}"


def op(name: Any, ts: float, cat: Any = "cpu_op", **more: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 1.0, **more}


def save(tmp_path: Path, events: list[dict[str, Any]], name: str = "t.json") -> Path:
    data = json.dumps({"schemaVersion": 1, "traceEvents": events}, ensure_ascii=False).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data, 1) if name.endswith(".gz") else data)
    return path


def hostile(tmp_path: Path, name: str) -> Path:
    """A ~1 MB name (event 1), a ~1 MB category (event 2), a thread named with ~200 KB (event 3)."""
    return save(
        tmp_path,
        [
            op("aten::mm", 1.0),
            op("n" * MB, 2.0),
            op("aten::add", 4.0, cat="c" * MB),
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t" * (200 << 10)}},
        ],
        name,
    )


@pytest.fixture(autouse=True)
def no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACETUI_NO_CACHE", "1")


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_long_text_is_cut_and_counted(tmp_path: Path, name: str) -> None:
    fast, slow = both(hostile(tmp_path, name))
    assert_same(fast, slow)  # every table, the repairs, the raw args
    names = fast.events.sort("id")["name"].cast(pl.String).to_list()
    assert names[1] == "n" * MAX_TEXT + mark(MB)
    assert fast.events.sort("id")["cat"].cast(pl.String).to_list()[2] == "c" * MAX_TEXT + mark(MB)
    assert fast.tracks["thread_name"].to_list() == ["t" * MAX_TEXT + mark(200 << 10)]
    assert fast.anomalies.rows() == [
        ("long_string", 1, None),
        ("long_string", 2, None),
        ("long_string", 3, None),
    ]
    assert fast.repairs == [
        f"cut 3 text values to 64 KiB (marked '…[cut from N bytes]'); the longest was {MB:,} bytes"
    ]


def test_the_summary_shows_the_cut(tmp_path: Path) -> None:
    path = hostile(tmp_path, "t.json")
    summary = run_cli("summary", str(path))
    assert summary.returncode == 0, summary.stderr
    assert "Anomalies: 3 (long_string 3)" in summary.stdout
    assert f"the longest was {MB:,} bytes" in " ".join(summary.stdout.split())
    report = json.loads(run_cli("summary", "--json", str(path)).stdout)
    assert report["anomalies"]["by_kind"] == {"long_string": 3}
    assert [a["event_id"] for a in report["anomalies"]["items"]] == [1, 2, 3]
    assert any("cut 3 text values" in line for line in report["trace"]["repairs"])


def test_a_normal_trace_has_no_cut(tmp_path: Path) -> None:
    # the "none" side: a value of exactly MAX_TEXT bytes is kept whole, and nothing is said
    fast, slow = both(save(tmp_path, [op("k" * MAX_TEXT, 1.0), op("é" * (MAX_TEXT // 2), 2.0)]))
    assert_same(fast, slow)
    assert fast.events.sort("id")["name"].cast(pl.String).to_list() == ["k" * MAX_TEXT, "é" * (MAX_TEXT // 2)]
    assert fast.anomalies.is_empty()
    assert fast.repairs == []


@pytest.mark.parametrize("lead", [0, 1, 2])
@pytest.mark.parametrize("escaped", [False, True])
def test_a_cut_ends_on_a_character(tmp_path: Path, lead: int, escaped: bool) -> None:
    # 3-byte characters after `lead` ASCII bytes: the limit falls on each byte of a character
    text = "a" * lead + "€" * (MAX_TEXT // 3 + 10)
    doc = json.dumps(
        {"traceEvents": [op(text, 1.0), op('q"\\' * (MAX_TEXT // 2), 2.0)]}, ensure_ascii=escaped
    )
    path = tmp_path / "t.json"
    path.write_text(doc)
    fast, slow = both(path)
    assert_same(fast, slow)
    first, second = fast.events.sort("id")["name"].cast(pl.String).to_list()
    length = len(text.encode())
    kept = lead + (MAX_TEXT - lead) // 3 * 3  # whole characters only
    assert first == text.encode()[:kept].decode() + mark(length)
    assert second == ('q"\\' * (MAX_TEXT // 2))[:MAX_TEXT] + mark(3 * (MAX_TEXT // 2))
    assert [k for k, _, _ in fast.anomalies.rows()] == ["long_string"] * 2


def test_a_long_tid_and_a_long_shape(tmp_path: Path) -> None:
    # an ID (its lane and track too) and raw JSON (recorded shapes) are cut alike
    tid = "T" * (MAX_TEXT + 5)
    dims = [[1] * 40_000]  # 120 KB of JSON
    path = save(tmp_path, [op("aten::cat", 1.0, tid=tid, args={"Input Dims": dims}), op("aten::mm", 2.0)])
    fast, slow = both(path)
    assert_same(fast, slow)
    assert sorted(fast.tracks["tid"].to_list()) == ["1", "T" * MAX_TEXT + mark(MAX_TEXT + 5)]
    shape = fast.shapes()["input_dims"].to_list()[0]
    written = len(json.dumps(dims))
    assert shape == json.dumps(dims)[:MAX_TEXT] + mark(written)
    assert fast.anomalies.rows() == [("long_string", 0, None)] * 2


def test_long_args_are_replaced_by_a_note(tmp_path: Path) -> None:
    big = {"Input Dims": [[1, 2]], "note": "v" * MAX_ARGS, "External id": 7}
    path = save(tmp_path, [op("aten::mm", 1.0), op("aten::add", 2.0, args=big)])
    fast, slow = both(path)
    assert_same(fast, slow)
    raw = bytes(fast.raw_args.raw([1])[0])
    assert raw == limits.args_note(len(json.dumps(big)))
    assert fast.event_args(1) == {"[args not kept]": f"{len(json.dumps(big))} bytes of JSON"}
    assert fast.events.sort("id")["external_id"].to_list() == [None, 7]  # read before the note
    assert fast.anomalies.rows() == [("long_args", 1, None)]
    assert fast.repairs[-1].endswith(f"the longest was {len(json.dumps(big)):,} bytes")


def test_cuts_across_parts_and_damaged_events(tmp_path: Path) -> None:
    # read in blocks by two scanners (parts adopted) and with a damaged event (a NaN: msgspec
    # reads that part): the same tables and cuts as one scan, each counted once
    events = [op(f"op{i}", float(i)) for i in range(20_000)]
    long = {i: f"{i}-" * ((MAX_TEXT + 1000 + i) // len(f"{i}-")) for i in range(3, 20_000, 997)}
    for i, name in long.items():
        events[i]["name"] = name
    data = json.dumps({"traceEvents": events}).encode()
    after = b'}, {"ph": "X", "cat": "cpu_op", "name": "op200"'
    damaged = data.replace(b'"dur": 1.0' + after, b'"dur": NaN' + after)
    assert damaged != data
    whole = stream.decode(data, Path("t.json"))
    assert whole.cuts == [(i, "long_string", len(name)) for i, name in long.items()]
    for block, workers, source in ((1 << 18, 2, data), (1 << 16, 1, damaged), (1 << 18, 2, damaged)):
        streamed = stream.read(Path("t.json"), iter([source]), block, workers=workers)
        assert streamed.adopted or workers == 1 or native.scanner() is None  # msgspec: one part
        assert (streamed.repairs != []) == (source is damaged)
        decoded = stream.finish(streamed)
        assert decoded.cuts == whole.cuts
        assert decoded.tables["x"]["name"].equals(whole.tables["x"]["name"])
    with msgspec_only():
        slow = tracetui.load(save(tmp_path, events))
    assert slow.anomalies["event_id"].to_list() == list(long)


def test_limits_stay_beyond_real_values() -> None:
    # the longest value of the real traces (a 5,050-byte name) is far below either limit
    assert MAX_TEXT >= 10 * 5_050 and MAX_ARGS >= MAX_TEXT
    assert limits.cut_text(b"x" * (MAX_TEXT + 1)) == b"x" * MAX_TEXT + mark(MAX_TEXT + 1).encode()


CAP = 2_500_000 << 10  # bytes of address space (ulimit -v 2500000)


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


@pytest.mark.slow
def test_a_300_mb_name_under_an_address_space_cap(tmp_path: Path) -> None:
    # before: exit 134 inside polars (an allocation of 300 MB failed), no message
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("AddressSanitizer's shadow memory does not fit an address-space cap")
    path = tmp_path / "big_name.json"
    with path.open("wb") as handle:
        handle.write(b'{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,')
        handle.write(b'"ts":1.0,"dur":5.0},{"ph":"X","cat":"cpu_op","pid":1,"tid":1,"ts":2,"dur":1,"name":"')
        for _ in range(300):
            handle.write(b"k" * MB)
        handle.write(b'"}]}')
    env = dict(os.environ, TRACETUI_NO_CACHE="1", COLUMNS="200")
    done = subprocess.run(
        [sys.executable, "-m", "tracetui", "summary", str(path)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_capped,
        timeout=120,
    )
    assert done.returncode != 134 and "Traceback" not in done.stderr
    if done.returncode == 0:  # a normal summary: the name cut, the anomaly shown
        assert "long_string 1" in done.stdout and f"{300 * MB:,} bytes" in done.stdout
    else:  # else one clear line
        assert done.returncode in (1, 2)
        assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("tracetui: ")
