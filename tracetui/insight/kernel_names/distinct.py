"""Short forms that tell distinct kernels apart: where several names of one trace decode to the same
short form (``batch_norm`` ×4, ``cutlass gemm`` ×2, ``layer_norm bwd`` ×2), each gets the part that
distinguishes it, in brackets: the decoded fields that differ (dtype, tile, stages, cluster,
variant, …), else the function's own name, else the template arguments that differ, else a number.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from tracetui.insight.kernel_names.cpp import clip_text, collapse_templates, function_head, template_args
from tracetui.insight.kernel_names.fields import KernelName

FIELDS = (
    "dtype",
    "tile",
    "stages",
    "cluster",
    "variant",
    "layout",
    "alignment",
    "mma",
    "vector_width",
    "arch",
)
ARG_CHARS = 24  # a differing template argument is shown up to this many characters


def distinct_shorts(decoded: Iterable[KernelName]) -> dict[str, str]:
    """``name -> short``: the decoded short form, with a distinguishing suffix where it collides."""
    groups: dict[str, list[KernelName]] = defaultdict(list)
    for kernel in decoded:
        groups[kernel.short].append(kernel)
    result: dict[str, str] = {}
    for short, members in groups.items():
        unique = {k.name: k for k in members}
        if len(unique) == 1:
            result |= {name: short for name in unique}
            continue
        for name, suffix in _suffixes(sorted(unique.values(), key=lambda k: k.name)).items():
            result[name] = clip_text(f"{short} [{suffix}]")
    return result


def _suffixes(members: Sequence[KernelName]) -> dict[str, str]:
    """What tells each member of a colliding group apart."""
    parts: dict[str, list[str]] = {k.name: [] for k in members}
    for readings in (_fields, _function, _arguments):
        pending = _colliding(members, parts)
        if not pending:
            break
        for group in pending:
            for name, text in readings(group).items():
                if text:
                    parts[name].append(text)
    unnamed = [k for k in members if not parts[k.name]]  # told apart only by what the others have
    for group in [*_colliding(members, parts), *([unnamed] if len(unnamed) == 1 else [])]:
        for number, kernel in enumerate(group, 1):
            parts[kernel.name].append(f"#{number}")
    return {name: ", ".join(values) or "…" for name, values in parts.items()}


def _colliding(members: Sequence[KernelName], parts: dict[str, list[str]]) -> list[list[KernelName]]:
    by_text: dict[tuple[str, ...], list[KernelName]] = defaultdict(list)
    for kernel in members:
        by_text[tuple(parts[kernel.name])].append(kernel)
    return [group for group in by_text.values() if len(group) > 1]


def _fields(group: Sequence[KernelName]) -> dict[str, str]:
    differing = [f for f in FIELDS if len({getattr(k, f) for k in group}) > 1]
    return {
        k.name: " ".join(str(getattr(k, f)) for f in differing if getattr(k, f) is not None) for k in group
    }


def _function(group: Sequence[KernelName]) -> dict[str, str]:
    heads = {k.name: function_head(k.name).rsplit("::", 1)[-1] for k in group}
    return heads if len(set(heads.values())) > 1 else {}


def _arguments(group: Sequence[KernelName]) -> dict[str, str]:
    shown = {k.name: [_argument(a) for a in template_args(k.name)] for k in group}
    width = max((len(a) for a in shown.values()), default=0)
    columns = [i for i in range(width) if len({a[i] if i < len(a) else "" for a in shown.values()}) > 1]
    return {name: ", ".join(values[i] for i in columns if i < len(values)) for name, values in shown.items()}


def _argument(text: str) -> str:
    short = collapse_templates(text).rsplit("::", 1)[-1] if "<" in text or "(" in text else text
    return short if len(short) <= ARG_CHARS else short[: ARG_CHARS - 1] + "…"
