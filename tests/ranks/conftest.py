"""Rank sets for the many-ranks tests: the two real sets copied into tests/fixtures/ranks, and
synthetic sets derived from them (tests.ranks.synthetic) in a temporary folder."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from tests.ranks import synthetic
from tracetui.ranks.analysis import Analysis, analyse
from tracetui.ranks.discover import resolve
from tracetui.ranks.engine import load_ranks
from tracetui.ranks.tables import TABLES
from tracetui.sample_traces import default_trace

RANK_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ranks"
GLOO4 = RANK_FIXTURES / "gloo_4rank_mlp"  # 4 ranks, one GPU, gloo; rank 2 a deliberate straggler
NCCL2 = RANK_FIXTURES / "ddp_2rank_nccl"  # 2 ranks, 2 GPUs, NCCL all-reduce kernels

Change = Callable[[int, synthetic.Doc], synthetic.Doc | None]  # None: leave the rank out


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ray: needs Ray (pip install 'tracetui[ray]'); skipped without it")


def rank_files(directory: Path) -> list[Path]:
    """The traces of a fixture set, in rank order (their names start with rank<N>)."""
    return sorted(directory.glob("*.json.gz"))


@pytest.fixture
def derive(tmp_path: Path) -> Callable[[str, Path, Change], Path]:
    """Build a synthetic set: ``derive(name, source_set, change)`` applies ``change(rank, doc)`` to
    each rank of ``source_set`` and writes the results under ``tmp_path/name``."""

    def build(name: str, source: Path, change: Change) -> Path:
        out = tmp_path / name
        for rank, path in enumerate(rank_files(source)):
            doc = change(rank, synthetic.read(path))
            if doc is not None:
                synthetic.write(doc, out / path.name)
        return out

    return build


@pytest.fixture
def gloo_copy(tmp_path: Path) -> Path:
    """A writable copy of the 4-rank set."""
    return Path(shutil.copytree(GLOO4, tmp_path / "gloo"))


@pytest.fixture(scope="session")
def gloo_report():  # type: ignore[no-untyped-def]
    """The analysis of the 4-rank set (loaded once, in this process)."""
    from tracetui.ranks.discover import resolve
    from tracetui.ranks.run import report_for

    return report_for(resolve([GLOO4]), rank=2)


@pytest.fixture(scope="session")
def nccl_report():  # type: ignore[no-untyped-def]
    from tracetui.ranks.discover import resolve
    from tracetui.ranks.run import report_for

    return report_for(resolve([NCCL2]))


SAMPLE_RUNS = default_trace().parent / "runs"  # the bundled runs, in the checkout or the installed wheel
TIMES = {
    "steps": ("start_ns", "end_ns", "window_start_ns", "window_end_ns"),
    "collectives": ("start_ns", "end_ns"),
    "lead": ("start_ns", "end_ns"),
}


@functools.cache
def set_tables(directory: Path) -> dict[str, pl.DataFrame]:
    """The per-rank tables of a rank set, every rank's rows together (loaded once per session)."""
    results = load_ranks(resolve([directory]).ranks, summary_rank=None)
    return {
        name: pl.concat([getattr(r.tables, name) for r in results], how="vertical_relaxed") for name in TABLES
    }


def analyse_tables(tables: dict[str, pl.DataFrame], shifts: dict[int, int] | None = None) -> Analysis:
    """The analysis of ``tables`` with each rank's clock moved by ``shifts[rank]`` ns: every time of
    its steps and collectives, as a shifted trace gives them (``synthetic.shift_clock``)."""
    moved = {}
    for name, frame in tables.items():
        delta = pl.col("rank").replace_strict(shifts or {}, default=0, return_dtype=pl.Int64)
        moved[name] = frame.with_columns(pl.col(c) + delta for c in TIMES.get(name, ())).lazy()
    return analyse(*(moved[name] for name in TABLES))
