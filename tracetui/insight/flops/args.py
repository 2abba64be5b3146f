"""Parse the recorded ``Input Dims`` / ``Input type`` / ``Concrete Inputs`` into :class:`Arg` lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    pass

from tracetui.insight.flops.fields import PROMOTE_RANK, Arg

# --------------------------------------------------------------------------------------------
# parsing

_decoder = msgspec.json.Decoder()


def _load(value: str | Sequence[Any] | None) -> list[Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = _decoder.decode(value)
        except (msgspec.DecodeError, ValueError):
            return None
    return list(value) if isinstance(value, list | tuple) else None


def _dims(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list | tuple) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        return tuple(value)
    return None


def parse_args(
    input_dims: str | Sequence[Any] | None,
    input_type: str | Sequence[Any] | None,
    concrete_inputs: str | Sequence[Any] | None = None,
) -> list[Arg] | None:
    """The recorded arguments, or ``None`` when dims/types are missing or malformed."""
    dims = _load(input_dims)
    types = _load(input_type)
    if dims is None or types is None:
        return None
    concrete = _load(concrete_inputs) or []
    args: list[Arg] = []
    for i, d in enumerate(dims):
        t = types[i] if i < len(types) and isinstance(types[i], str) else ""
        c = concrete[i] if i < len(concrete) and isinstance(concrete[i], str) else ""
        args.append(Arg(_dims(d), t, c))
    return args


def tensor_arg(args: list[Arg], pos: int) -> Arg | None:
    if 0 <= pos < len(args) and args[pos].is_tensor:
        return args[pos]
    return None


def concrete_arg(args: list[Arg], pos: int) -> str:
    return args[pos].concrete.strip() if 0 <= pos < len(args) else ""


def parse_int_list(text: str) -> tuple[int, ...] | None:
    text = text.strip()
    if not text:
        return None
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        if not inner:
            return ()
        try:
            return tuple(int(p) for p in inner.split(","))
        except ValueError:
            return None
    try:
        return (int(text),)
    except ValueError:
        return None


def parse_bool(text: str) -> bool | None:
    return {"True": True, "true": True, "1": True, "False": False, "false": False, "0": False}.get(
        text.strip()
    )


def broadcast_shape(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for axis in range(ndim):
        sizes = {s[len(s) - ndim + axis] for s in shapes if len(s) - ndim + axis >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def promote_dtype(tensors: Sequence[Arg]) -> Arg | None:
    """The input whose dtype the result takes (0-dim CPU scalars promote only across categories)."""
    full = [t for t in tensors if t.dims] or list(tensors)
    if not full:
        return None
    return max(full, key=lambda t: PROMOTE_RANK.get(t.dtype or "", -1))
