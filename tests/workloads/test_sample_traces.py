"""The bundled sample traces: the README's table matches the files, their metadata and the default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracetui.sample_traces import default_trace

from .helpers import complete_names, read_trace

FOLDER = Path(default_trace()).parent
ROW = re.compile(
    r"^\| `(?P<file>[\w.]+\.json\.gz)` \| `(?P<command>[^`]+)` \| (?P<gpu>[^|]+) \| (?P<driver>[^|]+) \| "
    r"(?P<torch>[^|]+) \| (?P<triton>[^|]+) \|"
)


def _readme_rows() -> dict[str, dict[str, str]]:
    rows = {}
    for line in (FOLDER / "README.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            rows[match["file"]] = {k: v.strip() for k, v in match.groupdict().items()}
    return rows


ROWS = _readme_rows()


def test_default_trace_is_bundled() -> None:
    assert default_trace().name == "mlp_eager.json.gz"
    assert default_trace().is_file()


def test_readme_lists_exactly_the_bundled_files() -> None:
    assert sorted(ROWS) == sorted(p.name for p in FOLDER.glob("*.json.gz"))
    assert len(ROWS) == 10


@pytest.mark.parametrize("name", sorted(ROWS))
def test_sample_matches_its_readme_row(name: str) -> None:
    path = FOLDER / name
    assert path.stat().st_size < 1 << 20
    trace = read_trace(path)
    meta, row = trace["tracetui"], ROWS[name]
    assert meta["command"] == row["command"]
    assert meta["device"] == "cuda"
    versions = meta["versions"]
    assert (versions["gpu"], versions["driver"], versions["torch"], versions["triton"]) == (
        row["gpu"],
        row["driver"],
        row["torch"],
        row["triton"],
    )
    args = row["command"].split()
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 3  # schedule(active=3)
    annotations = complete_names(trace, "user_annotation")
    assert sum(n.startswith("ProfilerStep#") for n in annotations) == steps
    for label in meta["labels"]:
        assert annotations.count(label) == steps
    assert complete_names(trace, "kernel"), "a GPU sample without kernels"
