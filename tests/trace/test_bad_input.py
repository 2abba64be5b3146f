"""Bad input: a one-line error and exit code 2, never a traceback; truncated files load."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tracetui
from tests.trace.synth import mlp_like, op, trace_doc, write
from tracetui.errors import TraceError

FIXTURES = Path(__file__).parent.parent / "fixtures"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracetui", *args], capture_output=True, text=True, timeout=120
    )


def kineto_text(events: list[dict]) -> str:
    """Kineto's own layout: one key per line group, events separated by '},\\n  {'."""
    body = ",\n".join("  " + json.dumps(e) for e in events)
    return (
        '{\n  "schemaVersion": 1,\n  "baseTimeNanoseconds": 1790857026000000000,\n  "traceEvents": [\n' + body
    )


BAD_INPUTS = {
    "empty.json": b"",
    "blank.json": b"   \n\t ",
    "binary.json": bytes(range(256)) * 4,
    "text.json": b"hello, this is not JSON",
    "not_trace.json": b'{"a": 1}',
    "number.json": b"42",
    "events_not_list.json": b'{"traceEvents": 5}',
    "corrupt.json.gz": b"\x1f\x8b\x08\x00garbage-not-deflate",
    # too deep for any decoder (the native scanner refuses past 512 levels, msgspec past ~1,000)
    "deep.json": b'{"traceEvents": [{"ph": "X", "args": {"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}}]}",
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_file_is_one_line_exit_2(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(BAD_INPUTS[name])
    result = run_cli("summary", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tracetui: {path}: "), result.stderr
    assert "Traceback" not in result.stderr


def test_missing_file_and_empty_directory(tmp_path: Path) -> None:
    for target, problem in ((tmp_path / "nope.json", "no such file"), (tmp_path, "directory holds no trace")):
        result = run_cli("summary", str(target))
        assert result.returncode == 2 and problem in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_error_message_neutralises_escape_bytes_in_the_path(tmp_path: Path) -> None:
    with pytest.raises(TraceError) as info:
        tracetui.load(tmp_path / "evil\x1b[31m.json")
    assert "\x1b" not in str(info.value)


def test_truncated_file_loads_every_complete_event(tmp_path: Path) -> None:
    events = mlp_like()
    text = kineto_text(events)
    cut = text[: text.rindex('"name": "gemm_kernel"') + 5]  # inside the last event
    path = tmp_path / "trace.json.tmp"
    path.write_text(cut)
    trace = tracetui.load(path)
    assert trace.truncated and trace.events.height == len(events) - 1
    result = run_cli("summary", str(path))
    assert result.returncode == 0 and "truncated" in result.stdout


def test_unterminated_array_after_last_event(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(kineto_text(mlp_like()) + ",\n")
    trace = tracetui.load(path)
    assert trace.truncated and trace.events.height == len(mlp_like())


def test_cut_gzip_stream(tmp_path: Path) -> None:
    data = (FIXTURES / "mlp_eager.json.gz").read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    trace = tracetui.load(path)
    full = tracetui.load(FIXTURES / "mlp_eager.json.gz")
    assert trace.truncated and 0 < trace.events.height < full.events.height


def test_unescaped_quotes_in_names_are_repaired(tmp_path: Path) -> None:
    good = kineto_text(mlp_like()) + "\n]}"
    broken = good.replace('"name": "aten::t"', '"name": "frame {"device": "cpu"} x"')
    path = tmp_path / "q.json"
    path.write_text(broken)
    trace = tracetui.load(path)
    assert 'frame {"device": "cpu"} x' in trace.events["name"].to_list()
    assert any("quotes" in r for r in trace.repairs)


def test_trailing_commas_and_raw_control_characters(tmp_path: Path) -> None:
    good = kineto_text(mlp_like()) + ",\n]}"
    path = tmp_path / "c.json"
    path.write_text(good.replace("aten::t", "aten::\x01t"))
    trace = tracetui.load(path)
    assert "aten::\ufffdt" in trace.events["name"].to_list() and not trace.truncated
    assert trace.events.height == len(mlp_like())


def test_user_file_is_never_modified(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", trace_doc(mlp_like()))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for args in (
        ["summary", str(path)],
        ["export", str(path), "--table", "events", "-o", str(tmp_path / "o.csv")],
    ):
        assert run_cli(*args).returncode == 0
    refused = run_cli("export", str(path), "-o", str(path))
    assert refused.returncode == 2 and "refusing to overwrite" in refused.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


# ---- bad durations (issue 35, item 11) ----------------------------------------------------------------
# Before: each loaded as a zero-length event, and nothing said so.
BAD_DURATIONS = {"-5": -5, "-1e300": -1e300, "2**70": 2**70, "1e16": 1e16, "NaN": "NaN", "missing": None}


@pytest.mark.parametrize("written", BAD_DURATIONS)
def test_a_bad_duration_is_counted_and_reported(tmp_path: Path, written: str) -> None:
    events = [*mlp_like(), op("aten::odd", 20.0, 1.0), op("aten::fine", 30.0, 0.0)]
    odd = events[-2]
    value = BAD_DURATIONS[written]
    if value is None:
        del odd["dur"]
    else:
        odd["dur"] = "__DUR__"
    text = json.dumps(trace_doc(events)).replace('"__DUR__"', str(value))
    path = tmp_path / "t.json"
    path.write_text(text)
    trace = tracetui.load(path)
    odd_row = trace.events.filter(trace.events["name"] == "aten::odd")
    assert (odd_row["end_ns"] - odd_row["start_ns"]).to_list() == [0]  # still zero-length, but said:
    bad = trace.anomalies.filter(trace.anomalies["kind"] == "bad_duration")
    assert bad["event_id"].to_list() == odd_row["id"].to_list()  # aten::fine's 0 is a duration
    summary = run_cli("summary", str(path))
    assert summary.returncode == 0
    assert "Anomalies: 1 (bad_duration 1)" in summary.stdout and "bad_duration: aten::odd" in summary.stdout
    report = json.loads(run_cli("summary", "--json", str(path)).stdout)
    assert report["anomalies"]["by_kind"] == {"bad_duration": 1}
    assert [a["event"] for a in report["anomalies"]["items"]] == ["aten::odd"]


def test_good_durations_are_no_anomaly(tmp_path: Path) -> None:
    events = [*mlp_like(), op("aten::zero", 20.0, 0.0), op("aten::long", 30.0, 3.9e15 - 30.0)]
    trace = tracetui.load(write(tmp_path / "t.json", trace_doc(events)))
    assert trace.anomalies.filter(trace.anomalies["kind"] == "bad_duration").height == 0


# ---- a polars panic (issue 35, item 9) ------------------------------------------------------------------
# Before: polars' PanicException is a BaseException, which the CLI's handler of unexpected errors
# (``except Exception``) let through: a traceback, and exit 1, the code of a failed check.
PANICKING = """
import sys
import polars as pl
import tracetui.commands.summary as summary

def panic(*args, **kwargs):
    raise pl.exceptions.PanicException(sys.argv[1])

summary.summarize = panic
from tracetui.cli import main
main(["summary", sys.argv[2]])
"""


@pytest.mark.parametrize(
    ("message", "code", "line"),
    [
        (
            "index out of bounds: the len is 3 but the index is 7",
            3,
            "tracetui: internal error: polars panicked: index out of bounds: the len is 3 but the index is 7 "
            "(TRACETUI_DEBUG=1 shows the traceback)",
        ),
        (
            "capacity overflow",
            2,
            "tracetui: out of memory: the trace needs more than this process may use (its limit, ulimit -v, "
            "or the machine's)",
        ),
    ],
    ids=["bug", "out of memory"],
)
def test_a_polars_panic_is_one_line_and_never_exit_1(
    tmp_path: Path, message: str, code: int, line: str
) -> None:
    assert not issubclass(__import__("polars").exceptions.PanicException, Exception)  # why it escaped
    trace = write(tmp_path / "t.json", trace_doc(mlp_like()))
    result = subprocess.run(
        [sys.executable, "-c", PANICKING, message, str(trace)], capture_output=True, text=True, timeout=120
    )
    assert (result.returncode, result.stderr, result.stdout) == (code, line + "\n", "")


def test_exit_1_is_only_a_failed_check(tmp_path: Path) -> None:
    """Click's own errors exit 1 unless told otherwise (``FileError``, a bare ``ClickException``)."""
    script = PANICKING.replace(
        "raise pl.exceptions.PanicException(sys.argv[1])", "import click; raise click.FileError('x.csv')"
    )
    trace = write(tmp_path / "t.json", trace_doc(mlp_like()))
    result = subprocess.run(
        [sys.executable, "-c", script, "", str(trace)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "x.csv" in result.stderr


def test_out_of_memory_is_one_line_exit_2(tmp_path: Path) -> None:
    script = PANICKING.replace("raise pl.exceptions.PanicException(sys.argv[1])", "raise MemoryError()")
    trace = write(tmp_path / "t.json", trace_doc(mlp_like()))
    result = subprocess.run(
        [sys.executable, "-c", script, "", str(trace)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and result.stderr.startswith("tracetui: out of memory: ")
    assert result.stderr.count("\n") == 1


def test_a_panic_while_the_explorer_loads_is_its_one_line_too() -> None:
    """The explorer loads in a worker thread, which caught ``Exception``: a panic crashed the app."""
    import polars as pl

    from tracetui.app.app import load_failed

    bug = load_failed(pl.exceptions.PanicException("called `Option::unwrap()` on a `None` value"))
    assert (bug.line, bug.code) == (
        "tracetui: internal error: polars panicked: called `Option::unwrap()` on a `None` value "
        "(please report it)",
        3,
    )
    assert load_failed(MemoryError()).code == 2
