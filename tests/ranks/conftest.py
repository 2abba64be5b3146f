"""Rank sets for the many-ranks tests: the two real sets copied into tests/fixtures/ranks, and
synthetic sets derived from them (tests.ranks.synthetic) in a temporary folder."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ranks import synthetic

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
