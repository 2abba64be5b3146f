"""Reading distributedInfo from a trace's head (and, if needed, tail) without its events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.ranks.conftest import GLOO4, NCCL2, rank_files
from tracetui.errors import TraceError
from tracetui.ranks import header
from tracetui.ranks.header import read_header

INFO = {"backend": "nccl", "rank": 5, "world_size": 8, "pg_config": [{"pg_name": "0", "ranks": [0, 1]}]}
EVENTS = [
    {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(50)
]


def _write(path: Path, text: str) -> Path:
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("path", [*rank_files(GLOO4), *rank_files(NCCL2)], ids=lambda p: p.name[:5])
def test_real_rank_traces_say_their_rank_in_the_head(path: Path) -> None:
    found = read_header(path)
    assert found.form == "object" and found.distributed_from == "head"
    assert found.distributed["rank"] == int(path.name[4])
    assert found.distributed["world_size"] in (2, 4)
    assert "traceEvents" not in found.metadata


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_distributed_info_after_the_events_is_read_from_the_tail(tmp_path: Path, suffix: str) -> None:
    """Kineto's on-demand traces write distributedInfo after traceEvents."""
    text = json.dumps({"schemaVersion": 1, "traceEvents": EVENTS, "traceName": "x", "distributedInfo": INFO})
    found = read_header(_write(tmp_path / f"t{suffix}", text))
    assert found.distributed_from == "tail"
    assert found.distributed == INFO
    assert read_header(tmp_path / f"t{suffix}", tail=False).distributed == {}


def test_a_key_named_like_the_events_inside_a_string_is_not_the_events(tmp_path: Path) -> None:
    text = (
        '{"note": "has \\"traceEvents\\": [ in it", "meta": {"traceEvents": 1}, '
        f'"distributedInfo": {json.dumps(INFO)}, "traceEvents": []}}'
    )
    found = read_header(_write(tmp_path / "t.json", text))
    assert found.distributed == INFO and found.metadata["meta"] == {"traceEvents": 1}


def test_the_events_of_a_gzip_trace_are_not_inflated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the head is inflated when it holds distributedInfo: count what the inflater yields."""
    big = [{"ph": "X", "name": "x" * 100, "ts": i, "dur": 1, "pid": 1, "tid": 1} for i in range(100_000)]
    path = _write(tmp_path / "big.json.gz", json.dumps({"distributedInfo": INFO, "traceEvents": big}))
    inflated: list[int] = []
    original = header._inflated

    def counting(handle):  # type: ignore[no-untyped-def]
        for chunk in original(handle):
            inflated.append(len(chunk))
            yield chunk

    monkeypatch.setattr(header, "_inflated", counting)
    assert read_header(path).distributed == INFO
    assert sum(inflated) < 1 << 20 < len(gzip.decompress(path.read_bytes()))


def test_multi_member_gzip_tail(tmp_path: Path) -> None:
    text = json.dumps({"traceEvents": EVENTS, "distributedInfo": INFO}).encode()
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text[:100]) + gzip.compress(text[100:]))
    assert read_header(path).distributed == INFO


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("[]", "array"),
        ('[{"ph": "X"}]', "array"),
        ('{"traceEvents": []}', "object"),
        ('{"a": 1}', "other"),
        ("not json", "other"),
        ('{"traceEvents": [', "object"),
    ],
)
def test_forms(tmp_path: Path, text: str, form: str) -> None:
    assert read_header(_write(tmp_path / "t.json", text)).form == form


def test_truncated_file_without_info_has_none(tmp_path: Path) -> None:
    text = json.dumps({"traceEvents": EVENTS, "distributedInfo": INFO})[:-40]
    assert read_header(_write(tmp_path / "t.json.gz", text)).distributed == {}


def test_unreadable_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read"):
        read_header(tmp_path / "missing.json")
