"""The C scanner as a C program: the same numbers in every locale, keys it owns while it runs
without the GIL, and a build free of warnings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import polars as pl
import pytest

from tracetui.trace import native
from tracetui.trace.fields import scan_fields

pytestmark = pytest.mark.skipif(not native.AVAILABLE, reason="the C extension is not built")
SOURCE = Path(native.__file__).parent / "_scan.c"
FLOAT, RAW = 3, 5

# Run in a child: before the fix, pick() reached PyEval_RestoreThread(NULL) (a fatal abort) and
# scan() took the GIL back for every number with an exponent when strtod stopped at the '.'.
LOCALE_CHILD = """
import json, locale, sys
import polars as pl
locale.setlocale(locale.LC_NUMERIC, sys.argv[1])
assert locale.localeconv()["decimal_point"] == ",", locale.localeconv()
from tracetui.trace import _scan, native
args = b'{"a": 1.5e3, "b": 0.1000000000000000055511151231257827, "c": [2.5e-3]}'
columns, _ = _scan.pick(args, [0], [len(args)], [(b"a", 3, True), (b"b", 3, True), (b"c", 5, True)])
picked = [pl.Series(c).to_list()[0] for c in columns]
doc = b'{"traceEvents": [{"ph": "X", "ts": 1.25e2, "dur": 12345678901234567890.5, "args": {"x": 1e1}}]}'
result = native.scan_raw(doc)
assert not isinstance(result, str), result
scanned = [pl.Series(c).to_list()[0] for c in result[4][5:7]]  # ts, dur
print(json.dumps([picked, scanned]))
"""


def comma_locale(directory: Path) -> str:
    """Build a locale whose decimal point is a comma (none may be installed): a charmap of
    ASCII and an LC_NUMERIC section, compiled by glibc's localedef into ``directory``."""
    localedef = shutil.which("localedef")
    if localedef is None:
        pytest.skip("no localedef (glibc) to build a decimal-comma locale")
    charmap = ["<code_set_name> TT_ASCII", "<comment_char> %", "<escape_char> /", "CHARMAP"]
    charmap += [f"<U{code:04X}> /x{code:02x}" for code in range(128)] + ["END CHARMAP", ""]
    (directory / "ascii.cm").write_text("\n".join(charmap))
    (directory / "comma.src").write_text(
        'LC_NUMERIC\ndecimal_point ","\nthousands_sep "."\ngrouping 3;3\nEND LC_NUMERIC\n'
    )
    # -c: the other categories are missing on purpose (exit status 1 with warnings)
    subprocess.run(
        [localedef, "-c", "-i", "comma.src", "-f", "ascii.cm", str(directory / "tt_COMMA")],
        cwd=directory,
        capture_output=True,
    )
    if not (directory / "tt_COMMA" / "LC_NUMERIC").is_file():
        pytest.skip("localedef could not build a decimal-comma locale")
    return "tt_COMMA"


def test_numbers_read_the_same_in_a_decimal_comma_locale(tmp_path: Path) -> None:
    name = comma_locale(tmp_path)
    env = dict(os.environ, LOCPATH=str(tmp_path))
    child = subprocess.run(
        [sys.executable, "-c", LOCALE_CHILD, name], env=env, capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0, child.stderr[-2000:]
    picked, scanned = json.loads(child.stdout)
    assert picked == [1500.0, 0.1, "[2.5e-3]"]
    assert scanned == [125.0, 12345678901234567890.5]


def churn(fields: list[tuple[bytes, int, bool]], started: threading.Event, stop: threading.Event) -> None:
    """Replace every field (freeing its key) with one whose key has the same size, until stopped."""
    started.wait()
    while not stop.is_set():
        fields[:] = [(b"?" * len(key), kind, in_args) for key, kind, in_args in fields]


def test_field_keys_are_owned_while_the_scan_runs_without_the_gil() -> None:
    """Another thread replaces the caller's field list while the scan runs: the keys passed in
    are still the ones matched (copied, not borrowed: the freed keys' memory is reused at once
    by the same-sized new keys)."""
    doc = json.dumps(
        {"traceEvents": [{"ph": "X", "name": f"n{i}", "ts": i, "dur": 1, "pid": 1} for i in range(50_000)]}
    ).encode()
    expected = [pl.Series(c).to_list() for c in native._scan.scan(doc, scan_fields())[4]]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.05)  # the scan releases the GIL long before the other thread may ask
    try:
        for _ in range(3):
            live = [(bytes(bytearray(key)), kind, in_args) for key, kind, in_args in scan_fields()]
            started, stop = threading.Event(), threading.Event()
            worker = threading.Thread(target=churn, args=(live, started, stop))
            worker.start()
            started.set()
            result = native._scan.scan(doc, live)
            stop.set()
            worker.join()
            assert not isinstance(result, str)
            assert [pl.Series(c).to_list() for c in result[4]] == expected
    finally:
        sys.setswitchinterval(interval)


def test_the_scanner_compiles_without_warnings(tmp_path: Path) -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip("no C compiler")
    include = sysconfig.get_paths()["include"]
    done = subprocess.run(
        [compiler, "-c", "-O3", "-Wall", "-Wextra", "-Werror", f"-I{include}", str(SOURCE), "-o", "scan.o"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
