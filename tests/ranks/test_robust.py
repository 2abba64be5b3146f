"""Runs and datasets under attack (issue 35, items 4-8): huge rank numbers, killed and concurrent
converts, deleted, flipped and stray dataset files, a truncated rank, a killed parent with live
workers. Each attack as it was made."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ranks import synthetic
from tests.ranks.conftest import GLOO4, NCCL2, rank_files
from tracetui.ranks.discover import DATASET_MANIFEST

ROOT = Path(__file__).resolve().parents[2]


def tracetui(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process, as a user runs it."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tracetui", *args], capture_output=True, text=True, env=full, timeout=timeout
    )


def summary_json(target: Path) -> dict:  # type: ignore[type-arg]
    done = tracetui("summary", str(target), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


# item 4: huge rank numbers


def test_a_huge_rank_number_in_a_file_name_is_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    doc = synthetic.without_rank(synthetic.read(rank_files(GLOO4)[0]))
    synthetic.write(doc, run / "rank_0.json.gz")
    synthetic.write(doc, run / "rank_99999999999.json.gz")
    start = time.monotonic()
    one_line_error(tracetui("summary", str(run)), "rank 99999999999 is beyond what tracetui reads")
    assert time.monotonic() - start < 30


def test_a_huge_world_size_is_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for rank, path in enumerate(rank_files(NCCL2)):
        synthetic.write(synthetic.set_rank(synthetic.read(path), rank, world_size=10**12), run / path.name)
    one_line_error(tracetui("summary", str(run)), "world size 1000000000000 is beyond what tracetui reads")


def test_a_large_world_size_lists_its_missing_ranks_as_spans(tmp_path: Path) -> None:
    from tracetui.ranks.discover import discover

    run = tmp_path / "run"
    for rank, path in enumerate(rank_files(NCCL2)):
        synthetic.write(synthetic.set_rank(synthetic.read(path), rank, world_size=100_000), run / path.name)
    found = discover([run])
    assert found is not None and len(found.missing) == 99_998
    assert "missing: rank 2-99999 (no trace)" in found.describe()


# item 5: atomic writes, one writer at a time


def _ranks_of(dataset: Path) -> list[int]:
    data = summary_json(dataset)
    assert data["distributed"]["failed"] == [], data["distributed"]["failed"]
    return [r["rank"] for r in data["ranks"]]


KILL_DURING_REMOVAL = """
import os, shutil, signal, sys
from pathlib import Path
from tracetui.ranks import publish
from tracetui.ranks.run import as_rank_set, convert

def rmtree_half_then_die(folder, ignore_errors=False):
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file())
    for p in files[: len(files) // 2]:
        p.unlink()
    os.kill(os.getpid(), signal.SIGKILL)

publish.shutil.rmtree = rmtree_half_then_die
convert(as_rank_set([sys.argv[1]]), Path(sys.argv[2]), force=True)
"""


@pytest.mark.slow  # kills a convert at each point of its removal (~25 s)
def test_a_convert_killed_while_the_old_dataset_is_removed_leaves_a_whole_dataset(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    assert tracetui("convert", str(GLOO4), "-o", str(out)).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.run(
        [sys.executable, "-c", KILL_DURING_REMOVAL, str(NCCL2), str(out)], env=env, capture_output=True
    )
    assert killed.returncode == -signal.SIGKILL
    assert _ranks_of(out) == [0, 1]  # the new dataset, whole (the old one is what was being removed)
    assert list(tmp_path.glob(".ds.staging-*"))  # the half-removed old dataset, under a staging name
    again = tracetui("convert", str(GLOO4), "-o", str(out), "--force")
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # leftovers (and the lock) removed
    assert _ranks_of(out) == [0, 1, 2, 3]


@pytest.mark.slow
def test_a_convert_killed_at_any_moment_leaves_the_old_dataset_or_the_new_one(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    assert tracetui("convert", str(GLOO4), "-o", str(out)).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    seen = set()
    for delay in (0.3, 0.8, 1.4, 2.0, 2.8, 4.0):
        source = NCCL2 if len(_ranks_of(out)) == 4 else GLOO4
        proc = subprocess.Popen(
            [sys.executable, "-m", "tracetui", "convert", str(source), "-o", str(out), "--force"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        proc.kill()
        proc.wait()
        ranks = _ranks_of(out)  # every part checked against the manifest: whole
        assert ranks in ([0, 1], [0, 1, 2, 3])
        seen.add(len(ranks))
    assert tracetui("convert", str(NCCL2), "-o", str(out), "--force").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_two_converts_into_one_folder_the_second_says_so(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACETUI_NO_CACHE": "1"}
    first = subprocess.Popen(
        [sys.executable, "-m", "tracetui", "convert", str(GLOO4), "-o", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lock = tmp_path / ".ds.lock"
    deadline = time.monotonic() + 60
    while not lock.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lock.exists(), "the first convert never took the lock"
    second = tracetui("convert", str(NCCL2), "-o", str(out), "--force")
    one_line_error(second, "another tracetui convert (pid", "is writing it")
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert _ranks_of(out) == [0, 1, 2, 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


# item 6: a dataset checked against its manifest


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("converted") / "ds"
    done = tracetui("convert", str(GLOO4), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def dataset_copy(converted: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(converted, tmp_path / "ds"))


def test_a_deleted_rank_partition_is_named(dataset_copy: Path) -> None:
    shutil.rmtree(dataset_copy / "ranks" / "rank=2")
    data = summary_json(dataset_copy)
    assert [r["rank"] for r in data["ranks"]] == [0, 1, 3]
    assert data["distributed"]["failed"] == [{"rank": 2, "error": "ranks/rank=2/part-0.parquet is missing"}]
    text = tracetui("summary", str(dataset_copy)).stdout
    assert "rank 2 not loaded: ranks/rank=2/part-0.parquet is missing" in text


def test_one_flipped_byte_is_named_not_read(dataset_copy: Path) -> None:
    part = dataset_copy / "kernel_names" / "rank=1" / "part-0.parquet"
    data = bytearray(part.read_bytes())
    data[len(data) // 3] ^= 0x01
    part.write_bytes(bytes(data))
    run = summary_json(dataset_copy)["distributed"]
    assert run["failed"] == [
        {
            "rank": 1,
            "error": "kernel_names/rank=1/part-0.parquet is damaged "
            "(its checksum is not the one the manifest records)",
        }
    ]
    assert all(k["calls_min"] >= 0 for k in run["kernels"])


def test_stray_parquet_files_are_ignored_and_said(dataset_copy: Path) -> None:
    part = dataset_copy / "ranks" / "rank=0" / "part-0.parquet"
    shutil.copy(part, part.with_name("part-1.parquet"))
    (dataset_copy / "ranks" / "rank=9").mkdir()
    shutil.copy(part, dataset_copy / "ranks" / "rank=9" / "part-0.parquet")
    data = summary_json(dataset_copy)
    assert [r["rank"] for r in data["ranks"]] == [0, 1, 2, 3]
    assert (
        "2 file(s) in the dataset that its manifest does not list, ignored: "
        "ranks/rank=0/part-1.parquet, ranks/rank=9/part-0.parquet"
    ) in data["distributed"]["notes"]


def test_a_part_of_another_schema_is_named_not_exit_3(dataset_copy: Path) -> None:
    import polars as pl

    part = dataset_copy / "steps" / "rank=3" / "part-0.parquet"
    pl.read_parquet(part).with_columns(pl.col("window").cast(pl.String)).write_parquet(part)
    facts = json.loads((dataset_copy / DATASET_MANIFEST).read_text())
    facts["parts"]["steps/rank=3/part-0.parquet"] |= {"bytes": part.stat().st_size}
    from tracetui.ranks.parts import record_file

    facts["parts"]["steps/rank=3/part-0.parquet"] |= record_file(part)  # as if written so: the schema differs
    (dataset_copy / DATASET_MANIFEST).write_text(json.dumps(facts))
    run = summary_json(dataset_copy)["distributed"]
    assert run["failed"] == [
        {
            "rank": 3,
            "error": "steps/rank=3/part-0.parquet has another schema than the one the manifest records",
        }
    ]


def test_an_older_dataset_says_what_to_do(dataset_copy: Path) -> None:
    facts = json.loads((dataset_copy / DATASET_MANIFEST).read_text())
    (dataset_copy / DATASET_MANIFEST).write_text(json.dumps({**facts, "schema": "tracetui.dataset/1"}))
    one_line_error(
        tracetui("summary", str(dataset_copy)), "written by an older tracetui: convert the run again"
    )


# item 7: a truncated rank in the run's summary


def test_a_truncated_rank_is_named_in_the_runs_summary(tmp_path: Path) -> None:
    run = Path(shutil.copytree(GLOO4, tmp_path / "run"))
    victim = rank_files(run)[1]
    import gzip

    text = gzip.decompress(victim.read_bytes())
    victim.write_bytes(gzip.compress(text[: len(text) * 2 // 3]))
    data = summary_json(run)["distributed"]
    assert data["damaged"] == [{"rank": 1, "problem": "the file is truncated"}]
    note = (
        "rank 1's trace is damaged (the file is truncated): its figures, and so the verdict, may be affected"
    )
    assert note in data["notes"]
    assert note in " ".join(tracetui("summary", str(run)).stdout.split())


# item 8: workers die with their parent


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, stack = set(), [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize("command", ["convert", "summary"])
def test_workers_die_with_their_parent(tmp_path: Path, signum: int, command: str) -> None:
    run = tmp_path / "run"
    for rank in range(12):  # enough work that the workers are busy when the parent goes
        path = rank_files(GLOO4)[rank % 4]
        doc = synthetic.set_rank(synthetic.read(path), rank, world_size=12)
        synthetic.write(doc, run / f"rank{rank}.json.gz")
    args = (
        ["convert", str(run), "-o", str(tmp_path / "ds")] if command == "convert" else ["summary", str(run)]
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACETUI_NO_CACHE": "1"}
    errors = (tmp_path / "stderr").open("w")
    parent = subprocess.Popen(
        [sys.executable, "-m", "tracetui", *args, "--workers", "3"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=errors,
        start_new_session=True,  # its own process group, as a shell's job
    )
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while time.monotonic() < deadline and parent.poll() is None:
        workers = _descendants(parent.pid)
        if len(workers) >= 3:  # two workers and the resource tracker
            break
        time.sleep(0.02)
    assert parent.poll() is None and len(workers) >= 3, "the workers did not start"
    if signum == signal.SIGINT:
        # Ctrl-C: the terminal signals the whole group, here while the workers' interpreters start
        # (past the few ms in which the parent spawns them, where a Ctrl-C is not seen: workers.py)
        time.sleep(0.2)
        os.killpg(parent.pid, signum)
    else:
        parent.send_signal(signum)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.05)
    assert not [p for p in workers if _alive(p)], "workers outlived their parent"
    errors.close()
    if signum == signal.SIGINT:  # Ctrl-C: one line, no worker's traceback, no tracker's warning
        assert (tmp_path / "stderr").read_text().strip() == "tracetui: interrupted"


def test_a_run_that_fails_before_its_workers_are_used_says_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for rank in range(6):
        synthetic.write(
            synthetic.set_rank(synthetic.read(rank_files(GLOO4)[rank % 4]), rank), run / f"r{rank}.json.gz"
        )
    done = tracetui("summary", str(run), "--rank", "9", "--workers", "2", env={"TRACETUI_NO_CACHE": "1"})
    assert done.returncode == 2 and done.stderr.startswith("tracetui: no rank 9 in"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # the workers started early are stopped quietly


def test_a_process_started_while_workers_spawn_begins_with_sigint_ignored() -> None:
    """A Ctrl-C while a worker's interpreter starts cannot become its traceback: an interpreter
    started inside ``sigint_ignored`` has no KeyboardInterrupt handler; this one's is back after."""
    from tracetui.ranks import workers

    probe = [
        sys.executable,
        "-c",
        "import signal; h = signal.getsignal(signal.SIGINT); print(int(h) if isinstance(h, int) else h)",
    ]
    before = signal.getsignal(signal.SIGINT)
    with workers.sigint_ignored():
        inside = subprocess.run(probe, capture_output=True, text=True, timeout=60).stdout.strip()
    outside = subprocess.run(probe, capture_output=True, text=True, timeout=60).stdout.strip()
    assert inside == str(int(signal.SIG_IGN)) and outside.startswith("<built-in function default_int_handler")
    assert signal.getsignal(signal.SIGINT) is before
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())
