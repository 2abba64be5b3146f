"""``--workers N``: a single trace's load scans on N cores, a run's ranks load in N processes that
share the cores between their scans; the output is the same whatever N."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracetui import settings
from tracetui.cli import cli
from tracetui.ranks import engine
from tracetui.ranks.discover import resolve
from tracetui.trace import stream

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TRACE = FIXTURES / "mlp_train_tbhandler_stack_memory.pt.trace.json.gz"
RUN = FIXTURES / "ranks" / "gloo_4rank_mlp"
EXPECT = """
[[expect]]
op = "aten::linear"
count = 1
"""


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The ``workers`` each read of a trace was given (the scanners it then used follow from it)."""
    seen: list[int | None] = []
    real = stream.scanners_for

    def spy(workers: int | None = None) -> int:
        seen.append(workers)
        return real(workers)

    monkeypatch.setattr(stream, "scanners_for", spy)
    monkeypatch.delenv("TRACETUI_WORKERS", raising=False)
    return seen


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    "command",
    [("summary", "--json"), ("export", "--table", "ops", "--format", "csv"), ("check", "--expect")],
    ids=["summary", "export", "check"],
)
def test_a_single_traces_load_scans_on_the_cores_asked(
    asked: list[int | None], command: tuple[str, ...], tmp_path: Path
) -> None:
    name, *options = command
    if name == "check":
        (tmp_path / "expect.toml").write_text(EXPECT)
        options.append(str(tmp_path / "expect.toml"))
    outputs = {}
    for workers in ("1", "3"):
        asked.clear()
        args = [name, str(TRACE), *options, "--workers", workers]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code in (0, 1), result.output  # check: 1 when an expectation fails
        assert asked == [int(workers)]  # one read, on the cores asked
        outputs[workers] = result.output.replace("\r", "")
    if name == "summary":  # its JSON holds the cache's counts of this process: compare the rest
        import json

        one, three = (json.loads(outputs[w]) for w in ("1", "3"))
        one.pop("cache"), three.pop("cache")
        assert one == three
    else:
        assert outputs["1"] == outputs["3"]


def test_without_workers_a_load_scans_on_the_setting_else_every_core(
    asked: list[int | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    invoke("summary", "--json", str(TRACE))
    assert asked == [None]
    assert stream.MAX_SCANNERS >= stream.scanners_for(None) >= 1
    monkeypatch.setenv("TRACETUI_WORKERS", "2")
    assert stream.scanners_for(None) == min(2, stream.MAX_SCANNERS)


@pytest.mark.parametrize(
    ("workers", "cores", "share"), [(1, 8, 1), (2, 8, 1), (4, 2, 1), (8, 2, 2), (16, 2, 4)]
)
def test_a_runs_processes_share_the_cores_between_their_scans(
    workers: int, cores: int, share: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--workers N`` (the cores the command uses) of a 4-rank run: min(N, 4) processes, each
    scanning on N // processes cores; without it N is the cores there are (``cores``)."""
    ranks = resolve([RUN]).ranks  # type: ignore[union-attr]
    jobs = [engine.Job(entry) for entry in ranks]
    handed: list[Sequence[engine.Job]] = []

    def processes(jobs: Sequence[engine.Job], count: int) -> Iterator[Any]:
        handed.append(jobs)
        return iter(())

    monkeypatch.setattr(engine, "_with_processes", processes)
    monkeypatch.setattr(engine, "run_job", lambda job: handed.append([job]))
    monkeypatch.setattr(settings, "cores", lambda: cores)
    monkeypatch.delenv("TRACETUI_WORKERS", raising=False)
    list(engine.run_jobs(jobs, workers=workers))
    assert [job.scanners for batch in handed for job in batch] == [share] * len(ranks)
    handed.clear()
    list(engine.run_jobs(jobs))  # no --workers: the cores, shared by 4 processes
    alone = {8: 2, 2: 1}[cores]  # 8 cores: 4 processes of 2; 2 cores: 2 processes of 1
    assert [job.scanners for batch in handed for job in batch] == [alone] * len(ranks)
