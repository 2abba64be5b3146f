"""Bad input: a one-line error and exit code 2, never a traceback; truncated files load."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tracetui
from tests.trace.synth import mlp_like, trace_doc, write
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
