"""Counter samples (Chrome trace ``"ph":"C"`` events, e.g. kineto's ``hardware_counters``) as one
table: a row per sample and series.

A counter event names its counter (``name``) on a process (``pid``, e.g. ``GPU 0 Counters``) and holds
its values as its args, one per series (``{"value": 3}``, ``{"read": 1, "write": 2}``); as Perfetto
reads them, each numeric arg is a series of its own (a numeric string counts; anything else is left
out). The values are read from the events' raw args when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
import polars as pl

from tracetui.safetext import REPLACEMENT, UNSAFE_CLASS
from tracetui.trace import repair
from tracetui.trace.times import exact_ns

if TYPE_CHECKING:
    from tracetui.trace import Trace

ARG = "arg:"  # the args' columns while beside the sample's own (an arg may be called "name")
SCHEMA = {"pid": pl.String, "name": pl.String, "series": pl.String, "ts_ns": pl.Int64, "value": pl.Float64}


def counter_table(trace: Trace) -> pl.DataFrame:
    """``pid``, ``name``, ``series``, ``ts_ns`` (on the trace's clock, as the events' starts) and
    ``value`` of every counter sample's numeric series, sorted by counter, series and time."""
    samples = trace.counters
    if samples.is_empty():
        return pl.DataFrame(schema=SCHEMA)
    raws = trace.raw_args.raw(samples["id"].to_list())
    args = _decoded([bytes(raw).decode("utf-8", "replace") if raw else "{}" for raw in raws])
    numeric = [
        name
        for name, dtype in args.schema.items()
        if dtype.is_numeric() or dtype == pl.String  # a numeric string counts; nested values do not
    ]
    if not numeric:
        return pl.DataFrame(schema=SCHEMA)
    values = args.select(pl.col(numeric).cast(pl.Float64, strict=False).name.prefix(ARG))
    frame = pl.concat(
        [samples.select("pid", "name", exact_ns("ts").alias("ts_ns")), values], how="horizontal"
    )
    return (
        frame.unpivot(index=["pid", "name", "ts_ns"], variable_name="series")
        .filter(pl.col("value").is_finite() & pl.col("ts_ns").is_not_null())  # null, NaN, inf: no value
        .with_columns(  # an arg's key is outside text: its control characters neutralised
            pl.col("series").str.strip_prefix(ARG).str.replace_all(UNSAFE_CLASS, REPLACEMENT)
        )
        .select(list(SCHEMA))
        .cast(SCHEMA)  # type: ignore[arg-type]
        .sort("pid", "name", "series", "ts_ns", maintain_order=True)
    )


def _decoded(texts: list[str]) -> pl.DataFrame:
    """The args objects as columns (one per key of any of them; null where absent)."""
    series = pl.Series("args", texts, dtype=pl.String)
    try:
        decoded = series.str.json_decode(infer_schema_length=None)
    except pl.exceptions.PolarsError:  # JSON polars refuses (1e400): one at a time, the odd ones empty
        values = [_object(text) for text in texts]
        keys = list(dict.fromkeys(key for value in values for key in value))
        return pl.DataFrame(
            {key: pl.Series([_text(value.get(key)) for value in values], dtype=pl.String) for key in keys},
            height=len(texts),
        )
    if not isinstance(decoded.dtype, pl.Struct) or not decoded.dtype.fields:
        return pl.DataFrame(height=len(texts))
    return decoded.struct.unnest()


def _object(text: str) -> dict[str, object]:
    """One args object; JSON msgspec refuses (``1e400``) read as :meth:`Trace.event_args` reads it
    (the known defects patched: that value null, the others kept)."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.MsgspecError:
        try:
            value = msgspec.json.decode(repair.patch_known_defects(text.encode())[0])
        except msgspec.MsgspecError:
            return {}
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    """A scalar as text (a number read back by the cast); None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    return str(value)
