"""Make a run of many ranks from a real rank set: its ranks replicated, each with its own rank number.

    python benchmarks/many_ranks.py OUT --ranks 1024 [--from gloo|nccl|DIR] [--steps N] [--straggler R]

Rank ``r`` is rank ``r mod k`` of the source set (``k`` ranks: the bundled copies of the shared sets,
``tests/fixtures/ranks/gloo_4rank_mlp`` (4 ranks, gloo, 40 KB gzip each) or ``ddp_2rank_nccl``
(2 ranks, NCCL kernels, 18 KB)), its ``distributedInfo`` saying ``r`` and the world size, its
default process group of every rank. Its clock is moved by a few µs (``r``'s own, under the
clock tolerance) so that no two copies arrive at a collective at the same instant; with
``--straggler R`` rank R reaches every collective 20 ms late (later than any source rank is), so
the verdict must name it. ``--steps N`` copies each rank's last step until it has N (the 32-rank
benchmark's ~0.2 MB ranks: gloo with 15 steps). Written as ``OUT/rank<r>.pt.trace.json.gz``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(1, str(ROOT))  # the checkout's root: its tests' fixtures
try:
    from tests.ranks import synthetic
except ImportError:  # pragma: no cover - before the rank maker moved to tests/
    from tracetui.ranks import synthetic  # type: ignore[no-redef]

SETS = {
    "gloo": ROOT / "tests" / "fixtures" / "ranks" / "gloo_4rank_mlp",
    "nccl": ROOT / "tests" / "fixtures" / "ranks" / "ddp_2rank_nccl",
}
STRAGGLER_DELAY_NS = 20_000_000
JITTER_NS = 7_919  # rank r's clock moves by (r * this) mod 40 µs


def make(
    out: Path, ranks: int, source: str = "gloo", steps: int = 0, straggler: int | None = None
) -> list[Path]:
    """Write ``ranks`` traces under ``out`` (see the module doc); their paths, in rank order."""
    folder = SETS.get(source, Path(source))
    docs = [synthetic.read(p) for p in sorted(folder.glob("*.json.gz"))]
    for i, doc in enumerate(docs):
        while len(synthetic.steps(doc)) < steps:
            doc = synthetic.add_step(doc)
        docs[i] = doc
    group = [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": ranks, "ranks": list(range(ranks))}]
    paths = []
    for rank in range(ranks):
        doc = docs[rank % len(docs)]
        info = {**doc.get("distributedInfo", {}), "rank": rank, "world_size": ranks, "pg_config": group}
        doc = synthetic.shift_clock({**doc, "distributedInfo": info}, (rank * JITTER_NS) % 40_000)
        if rank == straggler:
            doc = synthetic.delay_collectives(doc, STRAGGLER_DELAY_NS)
        doc = {**doc, "traceEvents": [_one_group(e) for e in doc["traceEvents"]]}
        paths.append(write(doc, out / f"rank{rank}.pt.trace.json.gz"))
    return paths


def write(doc: synthetic.Doc, path: Path) -> Path:
    """``doc`` as PyTorch writes a trace: a top-level key a line, an event a line, ``"key": value``
    (HTA finds a file's rank by ``"rank":\\s+N`` in its text)."""
    meta = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items() if k != "traceEvents"]
    events = ",\n".join(json.dumps(e) for e in doc["traceEvents"])
    text = "{\n" + ",\n".join([*meta, f'  "traceEvents": [\n{events}\n  ]']) + "\n}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), 1))
    return path


def _one_group(event: synthetic.Doc) -> synthetic.Doc:
    """An NCCL kernel's args without the source's 2-rank list: the group is pg_config's."""
    args = event.get("args")
    if isinstance(args, dict) and "Process Group Ranks" in args:
        return {**event, "args": {k: v for k, v in args.items() if k != "Process Group Ranks"}}
    return event


def main(argv: list[str] | None = None) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--from", dest="source", default="gloo", help="gloo, nccl, or a folder")
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--straggler", type=int, default=None)
    args = parser.parse_args(argv)
    paths = make(args.out, args.ranks, args.source, args.steps, args.straggler)
    size = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} ranks in {args.out} ({size / 1e6:.1f} MB gzip)")


if __name__ == "__main__":
    main()
