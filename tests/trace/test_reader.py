"""The reader: files and pipes read once, in blocks; devices, gzip bombs and binary data refused
early, in bounded time and memory (issue 12, items 5 and 6)."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import pytest

import tracetui
from tracetui.errors import TraceError
from tracetui.trace import native, source

FIXTURES = Path(__file__).parent.parent / "fixtures"
TRACE = FIXTURES / "mlp_eager.json.gz"
JSON = gzip.decompress(TRACE.read_bytes())
EVENTS = tracetui.load(TRACE).event_count

# Runs tracetui ARGS in a grandchild and adds its exit status, wall time and peak RSS (MB).
MEASURED = """
import os, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run([sys.executable, "-m", "tracetui", *sys.argv[1:]], capture_output=True, text=True)
wall = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
sys.stdout.write(done.stdout)
sys.stderr.write(done.stderr + f"\\n{done.returncode} {wall:.2f} {rss:.0f}\\n")
"""
SANITIZED = "asan" in os.environ.get("LD_PRELOAD", "")  # .ci/sanitize: shadow memory, quarantine
RSS_SCALE = 4 if SANITIZED else 1  # under ASan a refused read peaks at ~325 MB (85 MB without)


def run_cli(
    *args: str, stdin: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tracetui", *args], input=stdin, capture_output=True, timeout=timeout
    )


def measured(*args: str) -> tuple[int, float, float, str]:
    """Exit status, wall seconds and peak RSS (MB) of ``tracetui ARGS``, and its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *args], capture_output=True, text=True, timeout=300
    )
    *message, last = done.stderr.strip().splitlines()
    code, wall, rss = last.split()
    return int(code), float(wall), float(rss), "\n".join(message).strip()


def test_a_fifo_is_read_once_and_its_writer_finishes(tmp_path: Path) -> None:
    """Before: the readability probe opened the FIFO, read a byte and closed it; the writer died of
    SIGPIPE and the load waited for a writer forever."""
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    written: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with open(fifo, "wb") as out:
                for start in range(0, len(JSON), 4096):
                    out.write(JSON[start : start + 4096])
                    written.append(4096)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    done = run_cli("summary", str(fifo), timeout=60)
    thread.join(10)
    assert done.returncode == 0, done.stderr
    assert f"{EVENTS} events".encode() in done.stdout
    assert not errors and sum(written) >= len(JSON)


def test_open_probes_a_fifo_without_reading_it_then_reads_it_once(tmp_path: Path) -> None:
    """What ``tracetui open`` does: check the path, then load it. Before: the check read a byte
    and closed the pipe (the writer died of SIGPIPE) and the load then waited forever."""
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with open(fifo, "wb") as out:
                for start in range(0, len(JSON), 4096):
                    out.write(JSON[start : start + 4096])
        except BaseException as exc:
            errors.append(exc)

    loaded: list[tracetui.Trace] = []
    threading.Thread(target=writer, daemon=True).start()
    source.check_readable(fifo)
    loader = threading.Thread(target=lambda: loaded.append(tracetui.load(fifo)), daemon=True)
    loader.start()
    loader.join(60)
    assert loaded and loaded[0].event_count == EVENTS, "the load of the pipe did not finish"
    assert not errors, errors
    assert not source.is_regular(fifo)


def test_a_process_substitution_and_stdin_are_read_as_streams() -> None:
    compressed = TRACE.read_bytes()
    for data in (JSON, compressed):  # plain and gzip'd through the pipe
        done = run_cli("summary", "/dev/stdin", stdin=data)
        assert done.returncode == 0, done.stderr
        assert f"{EVENTS} events".encode() in done.stdout
    shell = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -m tracetui summary <(cat "{TRACE}")'],
        capture_output=True,
        timeout=120,
    )
    assert shell.returncode == 0 and f"{EVENTS} events".encode() in shell.stdout, shell.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_at_once(device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    code, wall, rss, message = measured("summary", device)
    assert code == 2 and message == f"tracetui: {device}: not a trace: a device, not a file"
    assert wall < 20 and rss < 300 * RSS_SCALE


def _gzip_stream(path: Path, head: bytes, filler: bytes, size: int, tail: bytes = b"") -> None:
    """Write ``head`` + ``size`` bytes of ``filler`` + ``tail``, gzip'd, without holding them."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, 31)
    piece = filler * ((8 << 20) // len(filler))
    with path.open("wb") as out:
        out.write(deflate.compress(head))
        for _ in range(size // len(piece)):
            out.write(deflate.compress(piece))
        out.write(deflate.compress(tail))
        out.write(deflate.flush())


@pytest.mark.slow  # writes and reads a multi-GB bomb (~12 s); the quick run keeps the gzipped zeros
def test_a_gzip_bomb_is_refused_early_in_bounded_memory(tmp_path: Path) -> None:
    """1.5 GB of valid JSON (a trace of blanks) in 1.5 MB of gzip: before, inflated whole into memory."""
    bomb = tmp_path / "bomb.json.gz"
    _gzip_stream(bomb, b'{"traceEvents": [', b" ", 1536 << 20, b"]}")
    assert bomb.stat().st_size < 4 << 20
    code, wall, rss, message = measured("summary", str(bomb))
    assert code == 2 and "gzip bomb" in message and "TRACETUI_MAX_INFLATE" in message, message
    assert rss < (1200 if SANITIZED else 400), f"peak RSS {rss:.0f} MB"
    assert wall < 60


def test_the_inflation_cap_can_be_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dense = tmp_path / "dense.json.gz"
    _gzip_stream(dense, JSON[: JSON.index(b"[") + 1], b" ", 8 << 20, JSON[JSON.index(b"[") + 1 :])
    monkeypatch.setattr(source, "FLOOR", 1 << 20)
    with pytest.raises(TraceError, match="gzip bomb"):
        tracetui.load(dense)
    assert tracetui.load(dense, max_inflate=0).event_count == EVENTS  # the option, as a value
    monkeypatch.setenv("TRACETUI_MAX_INFLATE", "0")
    assert tracetui.load(dense).event_count == EVENTS
    monkeypatch.setenv("TRACETUI_MAX_INFLATE", "lots")
    with pytest.raises(TraceError, match="TRACETUI_MAX_INFLATE"):
        tracetui.load(dense)


def test_gzipped_zeros_are_refused_before_they_inflate(tmp_path: Path) -> None:
    """Before: 8 MB of gzip'd zeros inflated to 8 GB before being called binary data."""
    zeros = tmp_path / "zeros.json.gz"
    _gzip_stream(zeros, b"", b"\x00", 1 << 30)
    code, wall, rss, message = measured("summary", str(zeros))
    assert code == 2 and message.endswith("not a trace: binary data, not JSON"), message
    assert rss < 300 * RSS_SCALE and wall < 20


def test_binary_data_after_events_ends_the_read_at_its_first_byte(tmp_path: Path) -> None:
    """Valid events, then zeros: refused where the zeros start, not after reading them all."""
    head = JSON[: JSON.index(b"[") + 1] + JSON[JSON.index(b"[") + 1 : JSON.index(b"},") + 2]
    zeros = tmp_path / "then_zeros.json.gz"
    _gzip_stream(zeros, head, b"\x00", 1 << 30)
    code, wall, rss, message = measured("summary", str(zeros))
    if native.AVAILABLE:  # the streaming scanner stops at the first zero
        assert code == 2 and f"binary data at byte {len(head)}" in message, message
        assert rss < 300 * RSS_SCALE and wall < 20
    else:  # msgspec reads a document whole: the inflation cap refuses it, in bounded memory
        assert code == 2 and "gzip bomb" in message and message.count("\n") <= 1, message
        assert rss < 1500 and wall < 60


def test_a_cut_gzip_stream_keeps_every_complete_event(tmp_path: Path) -> None:
    data = gzip.compress(JSON)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    trace = tracetui.load(cut)
    assert trace.truncated and 0 < trace.event_count < EVENTS
    assert trace.events["id"].to_list() == tracetui.load(TRACE).events["id"].to_list()[: len(trace.events)]


def test_multi_member_gzip_reads_as_one_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "READ", 777)  # member boundaries fall inside reads
    half = len(JSON) // 2
    members = tmp_path / "members.json.gz"
    members.write_bytes(gzip.compress(JSON[:half]) + b"\x00\x00" + gzip.compress(JSON[half:]))
    whole = tracetui.load(TRACE)
    split = tracetui.load(members)
    assert split.gzipped and not split.truncated
    assert split.events.equals(whole.events) and split.metadata == whole.metadata


def test_a_file_is_opened_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(JSON)
    opened: list[Path] = []
    real = source._open

    def spy(target: Path):  # type: ignore[no-untyped-def]
        opened.append(target)
        return real(target)

    monkeypatch.setattr(source, "_open", spy)
    tracetui.load(path)
    assert opened == [path]


def test_reading_in_small_blocks_bounds_what_is_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader never joins the file: each block it yields is about BLOCK bytes."""
    monkeypatch.setattr(source, "BLOCK", 4096)
    monkeypatch.setattr(source, "READ", 1000)
    src, blocks = source.open_source(TRACE)
    sizes = [len(b) for b in blocks]
    assert sum(sizes) == len(JSON) == src.json_bytes and max(sizes) <= 4096 + 1000 and len(sizes) > 10
