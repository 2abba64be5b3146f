"""Text from outside reaches no terminal raw (issue 12, items 7-10).

A trace whose file name holds an OSC title write, an SGR colour and a right-to-left override, and
whose names hold zero-width and direction marks, spreadsheet formulas and a 2 MB op name, goes
through every surface: the summary, the diff and check reports, error lines, the explorer. On a
terminal: no control, invisible or direction character, each shown as a visible escape, names cut
at ``MAX_SHOWN`` with the cut said. In ``--json`` and Parquet: exactly as written. In CSV: visible
escapes, formulas defused, nothing cut. (The load itself keeps the first 64 KiB of the 2 MB name,
marked, a ``long_string`` anomaly: :data:`HUGE_LOADED`, what every surface then shows or writes.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.trace.synth import annotation, kernel, launch, op, trace_doc, write
from tracetui.safetext import INVISIBLE_CLASS, MAX_SHOWN, shown
from tracetui.trace.limits import MAX_TEXT, TEXT_MARK

EVIL_FILE = "trace\x1b]0;pwned\x07\x1b[31m\u202enosj.json"
LOOKALIKE = "aten::mm\u200b"  # looks like aten::mm
REVERSED = "gemm\u202eKCATTA"  # shows as "gemmATTACK" reversed
ISOLATED = "\u2066evil\u2069 op\u00ad\ufeff"
HUGE = "aten::" + "x" * 2_000_000
HUGE_LOADED = HUGE[:MAX_TEXT] + f"{TEXT_MARK[0]}{len(HUGE)}{TEXT_MARK[1]}"  # what a load keeps of it
FORMULAS = ('=HYPERLINK("http://x")', "+cmd|' /C calc'!A0", "@SUM(1)", "-2+3")
RAW_INVISIBLE = ("\u200b", "\u202e", "\u2066", "\u2069", "\u00ad", "\ufeff")
RAW_CONTROL = ("\x1b", "\x07", "\x9b")
ENV = dict(os.environ, TRACETUI_NO_CACHE="1")


def hostile_events() -> list[dict]:
    events = [annotation("ProfilerStep#1", 0, 1000)]
    for i, name in enumerate(["aten::mm", LOOKALIKE, ISOLATED, HUGE, *FORMULAS]):
        start = 10.0 + 50 * i
        events.append(op(name, start, 40))
        events.append(launch("cudaLaunchKernel", start + 1, 5, 100 + i))
        events.append(kernel(REVERSED if name == LOOKALIKE else f"k{i}", start + 10, 3, 100 + i))
    return events


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("hostile") / EVIL_FILE, trace_doc(hostile_events()))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracetui", *args], capture_output=True, text=True, env=ENV, timeout=180
    )


def assert_terminal_safe(text: str) -> None:
    for char in (*RAW_CONTROL, *RAW_INVISIBLE):
        assert char not in text.replace("\n", ""), f"raw {char!r} on the terminal"
    assert "x" * (MAX_SHOWN + 10) not in text, "a name longer than the cap was printed"


def test_summary_shows_outside_text_neutralised_and_cut(hostile: Path) -> None:
    result = run("summary", str(hostile))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert_terminal_safe(out)
    assert "trace\ufffd]0;pwned\ufffd\ufffd[31m\\u202enosj.json" in out  # the header's file name
    assert "aten::mm\\u200b" in out and "gemm\\u202eKCATTA" in out
    assert len(out) < 20_000  # not 2 MB


def test_json_keeps_every_name_exactly(hostile: Path) -> None:
    result = run("summary", "--json", str(hostile))
    data = json.loads(result.stdout)
    names = {o["name"] for o in data["ops"]}
    assert {"aten::mm", LOOKALIKE, ISOLATED, HUGE_LOADED} <= names
    assert REVERSED in {k["name"] for k in data["kernels"]}
    assert data["trace"]["name"] == EVIL_FILE  # the real name (a script may open it) ...
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout  # ... JSON-escaped


def test_csv_shows_the_marks_defuses_formulas_and_cuts_nothing(hostile: Path, tmp_path: Path) -> None:
    out = tmp_path / "ops.csv"
    assert run("export", str(hostile), "--table", "ops", "-o", str(out)).returncode == 0
    ops = pl.read_csv(out)
    names = set(ops["name"].to_list())
    assert {"aten::mm\\u200b", "\\u2066evil\\u2069 op\\u00ad\\ufeff", HUGE_LOADED} <= names
    assert {'\'=HYPERLINK("http://x")', "'+cmd|' /C calc'!A0", "'@SUM(1)", "'-2+3"} <= names
    assert not any(c in out.read_text() for c in RAW_INVISIBLE)
    events = tmp_path / "events.csv"
    assert run("export", str(hostile), "--table", "events", "-o", str(events)).returncode == 0
    text = pl.read_csv(events, infer_schema=False)
    escaped = text.filter(pl.col("name").str.starts_with("'"))["name"].str.slice(1)
    assert escaped.is_in(FORMULAS).all() and set(FORMULAS) <= set(escaped)  # the events' names too
    assert not any(c in events.read_text() for c in RAW_INVISIBLE)


def test_negative_numbers_stay_numbers_in_csv(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", trace_doc([op("-1", 0, 5, tid=-3), op("x", 1, 2, tid=-4)]))
    out = tmp_path / "e.csv"
    assert run("export", str(path), "--table", "events", "-o", str(out)).returncode == 0
    rows = out.read_text().splitlines()
    header = rows[0].split(",")
    values = [dict(zip(header, row.split(","), strict=False)) for row in rows[1:]]
    assert {v["name"] for v in values} == {"-1", "x"}  # a name that is a number stays one
    assert {v["tid"] for v in values} == {"-3", "-4"}


def test_parquet_keeps_every_name_exactly(hostile: Path, tmp_path: Path) -> None:
    out = tmp_path / "ops.parquet"
    assert (
        run("export", str(hostile), "--table", "ops", "--format", "parquet", "-o", str(out)).returncode == 0
    )
    names = set(pl.read_parquet(out)["name"].to_list())
    assert {"aten::mm", LOOKALIKE, ISOLATED, HUGE_LOADED, *FORMULAS} <= names


def test_diff_and_check_reports_and_error_lines(hostile: Path, tmp_path: Path) -> None:
    diff = run("diff", "--report", str(hostile), str(hostile))
    assert diff.returncode == 0, diff.stderr
    assert_terminal_safe(diff.stdout)
    assert "\\u202enosj.json" in diff.stdout
    expect = tmp_path / "exp\u202eect\x1b[2J.toml"
    expect.write_text(
        '[[expect]]\nop = "aten::mm\u200b"\ncount = 1\nnote = "look \\u202ehere\\u001b[2J"\n'
        '[[expect]]\nop = "aten::mm"\ncount = 2\n'
    )
    check = run("check", str(hostile), "--expect", str(expect))
    assert check.returncode == 1, check.stderr
    assert_terminal_safe(check.stdout)
    assert "aten::mm\\u200b" in check.stdout and "look \\u202ehere" in check.stdout
    bad = tmp_path / "bad\u202e\u200b.toml"
    bad.write_text('[[expect]]\nop = "\u202eevil\x1b"\nwhat = 1\n')
    error = run("check", str(hostile), "--expect", str(bad))
    assert error.returncode == 2
    assert_terminal_safe(error.stderr)
    assert "bad\\u202e\\u200b.toml" in error.stderr and error.stderr.count("\n") == 1
    missing = run("summary", str(tmp_path / "no\u202esuch\x1b[31m.json"))
    assert missing.returncode == 2 and "no\\u202esuch\ufffd[31m.json" in missing.stderr
    assert_terminal_safe(missing.stderr)


def test_shown_cuts_and_says_so() -> None:
    assert shown("a" * (MAX_SHOWN + 5)) == "a" * MAX_SHOWN + "…(+5 chars)"
    assert shown(HUGE).endswith(f"…(+{len(HUGE) - MAX_SHOWN:,} chars)")
    assert shown("x\u200by\U000e0041") == "x\\u200by\\U000e0041"
    assert shown(shown(LOOKALIKE)) == shown(LOOKALIKE)  # idempotent
    assert shown("evil\x1b[31m\ud800") == "evil\ufffd[31m\ufffd"
    import re

    every = "".join(chr(c) for c in range(0x110000) if re.fullmatch(INVISIBLE_CLASS, chr(c)))
    assert not re.search(INVISIBLE_CLASS, shown(every, limit=None))


def test_a_cell_of_several_lines_keeps_its_line_breaks_and_neutralises_the_rest() -> None:
    """An expectation and its note are one cell of two lines: the break stays a break (it was shown
    as U+FFFD), while control and invisible characters inside each line are still neutralised."""
    from rich.text import Text

    from tracetui.report.table import shown_text

    cell = Text("op aten::mm: count = 1")
    cell.append("\nlook \u202ehere\x1b[2J", style="dim")
    out = shown_text(cell)
    assert out.plain == "op aten::mm: count = 1\nlook \\u202ehere\ufffd[2J"
    assert [str(span.style) for span in out.spans if "look" in out.plain[span.start : span.end]] == ["dim"]
    plain = Text("first line\nsecond line")
    assert shown_text(plain) is plain  # nothing to neutralise: the same object
