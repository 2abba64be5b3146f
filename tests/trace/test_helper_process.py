"""The two-process load gives exactly the tables of the one-process load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trace.synth import kernel, launch, op, trace_doc, write

FIXTURES = Path(__file__).parent.parent / "fixtures"
pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or (os.cpu_count() or 1) < 2, reason="fork helper: Linux"
)


def summary_json(path: Path, serial: bool) -> dict:
    env = {**os.environ, "TRACETUI_HELPER_MIN_BYTES": "0"}
    if serial:
        env["TRACETUI_SERIAL"] = "1"
    else:
        env.pop("TRACETUI_SERIAL", None)
    result = subprocess.run(
        [sys.executable, "-m", "tracetui", "summary", str(path), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", ["mlp_train_tbhandler_stack_memory.pt.trace.json.gz", "mlp_eager.json.gz"])
def test_helper_and_serial_loads_agree(name: str) -> None:
    assert summary_json(FIXTURES / name, serial=False) == summary_json(FIXTURES / name, serial=True)


def test_helper_falls_back_when_the_split_half_is_broken(tmp_path: Path) -> None:
    events = [op(f"aten::op{i}", 10 * i, 5) for i in range(200)]
    events += [launch("cudaLaunchKernel", 10 * i + 1, 1, correlation=i) for i in range(200)]
    events += [kernel("k", 10 * i + 2, 1, correlation=i) for i in range(200)]
    path = write(tmp_path / "t.json", trace_doc(events))
    text = path.read_text().replace("}, {", "},\n  {")  # event boundaries on new lines: splittable
    path.write_text(text)
    assert summary_json(path, serial=False) == summary_json(path, serial=True)
