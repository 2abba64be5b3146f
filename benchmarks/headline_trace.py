"""Make the headline benchmark trace, or a stand-in of its size where it is not at hand.

    python benchmarks/headline_trace.py [-o OUT] [--from TRACE] [--size SIZE]

The published figures (docs/performance.md) come from ``transformer_train_long.json.gz``: 89.5 MB of
JSON (6.2 MiB gzip'd), 265,509 events, 60 training steps of a transformer on one H200, recorded
shapes, no Python stacks, no memory events. It is not in the repository: the benchmarks look for it
in ``shared/traces/`` beside the checkout (``../shared/traces/`` from the repository root). Where
it is there and no ``--from`` is given, OUT is a copy of it, byte for byte.

Otherwise OUT is a stand-in: TRACE replicated by ``make_big_trace.py`` (its steps copied with shifted
times and ids) to the headline's size of JSON. TRACE is a trace you have: one you captured (on a GPU
machine, e.g. ``tracetui capture transformer-block --train --steps 20``), or by default the bundled
``sample_traces/mlp_triton_train.json.gz`` (the blog's MLP trained on an H200: 266 copies, 271,912
events). A stand-in's figures are those of its own events, close to but not the published ones;
the last line says which was made. ``--size`` asks for another size of JSON (``1G``, ``200K``).

Default OUT: ``headline.json.gz`` in the current folder. Then pass it to the benchmarks:
``bench_summary.py OUT``, ``bench_app.py OUT``, ``bench_cache.py OUT``, ``bench_scale.py --source
OUT``, ``bench_ranks.py --source OUT``, ``bench_hostile.py nan OUT``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import make_big_trace

HERE = Path(__file__).resolve().parent
HEADLINE = HERE.parents[1] / "shared" / "traces" / "transformer_train_long.json.gz"
HEADLINE_JSON_BYTES = 89_505_746
SAMPLE = HERE.parent / "sample_traces" / "mlp_triton_train.json.gz"


def need(path: Path) -> Path:
    """``path``, a trace a benchmark reads; where it is missing, exit with one line saying how to
    make it."""
    if not path.is_file():
        raise SystemExit(
            f"{path}: no such trace. Make the headline trace, or a stand-in of its size, with "
            "`python benchmarks/headline_trace.py -o headline.json.gz` and pass that file."
        )
    return path


def make(out: Path, source: Path | None, size: str | None) -> str:
    """Write OUT; say what it is."""
    if source is None and size is None and HEADLINE.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HEADLINE, out)
        return f"{out}: the headline trace ({HEADLINE.name}), the input of the published figures"
    source = source or SAMPLE
    text = make_big_trace.read(source)
    target = make_big_trace.parse_size(size) if size else HEADLINE_JSON_BYTES
    count = max(1, round(target / len(text)))
    make_big_trace.main([str(source), str(out), "--copies", str(count)])
    return f"{out}: a stand-in made from {source.name} ({count} copies), not the published input"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-o", "--output", type=Path, default=Path("headline.json.gz"))
    parser.add_argument("--from", dest="source", type=Path, help="replicate this trace (a stand-in)")
    parser.add_argument("--size", help="JSON size of a stand-in (default: the headline's, 89.5 MB)")
    args = parser.parse_args(argv)
    if args.source is not None and not args.source.is_file():
        parser.error(f"{args.source}: no such file")
    print(make(args.output, args.source, args.size), file=sys.stderr)


if __name__ == "__main__":
    main()
