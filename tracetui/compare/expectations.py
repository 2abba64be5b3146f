"""Read an expectations file (TOML): what a trace should contain, written before looking.

Every ``[[expect]]`` table names one subject and one or more checks::

    [[expect]]
    annotation = "mlp_fwd"          # subject: annotation | step | op | kernel
    kernels_per_call = 5            # exact; min_… / max_… for bounds
    max_gpu_us = 250                # GPU time per call (mean over calls)

    [[expect]]
    kernel = "triton_poi_fused_*gelu_mul*"   # glob over GPU work names
    per = "mlp_fwd"                 # count in each call of mlp_fwd ("step": each step)
    count = 1

    [[expect]]
    memory = "cuda:0"               # a device's memory ("*": every device)
    peak_allocated_max = "900 MiB"  # sizes: text with a unit, or bytes

The key set is :data:`SUBJECTS`, :data:`CHECKS` (with :data:`APPLIES`), ``per`` and ``note``; see
``docs/compare.md``. Anything else is an error naming its line: :func:`load_expectations` raises
:class:`~tracetui.errors.TraceError` with ``line N: problem``. This module needs no polars, so
``tracetui capture --expect`` can validate the file before it profiles.
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tracetui.compare.globs import glob_problem
from tracetui.errors import TraceError
from tracetui.formatting import parse_size
from tracetui.safetext import clean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 needs the tomli backport
    import tomli as tomllib

Subject = Literal["annotation", "step", "op", "kernel", "memory"]
Comparison = Literal["==", ">=", "<="]

SUBJECTS: tuple[Subject, ...] = ("annotation", "step", "op", "kernel", "memory")
ALL_DEVICES = "*"
PER_STEP = "step"
ALL_STEPS = "*"

# quantity -> (value kind, subjects it applies to). Keys: counts have exact, min_ and max_; times and
# percentages (pct: 0-100) min_ and max_ only; flags the exact key only; sizes (bytes) a _max bound only.
_SPAN: tuple[Subject, ...] = ("annotation", "step")
_MATCH: tuple[Subject, ...] = ("op", "kernel")
QUANTITIES: dict[str, tuple[str, tuple[Subject, ...]]] = {
    "calls": ("count", _SPAN),
    "kernels_per_call": ("count", _SPAN),
    "memcpys_per_call": ("count", _SPAN),
    "memsets_per_call": ("count", _SPAN),
    "gpu_events_per_call": ("count", _SPAN),
    "count": ("count", _MATCH),
    "gpu_us": ("time", (*_SPAN, *_MATCH)),
    "cpu_us": ("time", (*_SPAN, "op")),
    "launches_kernels": ("flag", ("op",)),
    "critical_path_gpu_pct": ("pct", _SPAN),
    "gpu_idle_pct": ("pct", ("step",)),
    "peak_allocated": ("size", ("memory", "step")),
    "peak_reserved": ("size", ("memory",)),
}


def _check_keys() -> dict[str, tuple[str, Comparison]]:
    keys: dict[str, tuple[str, Comparison]] = {}
    for quantity, (kind, _) in QUANTITIES.items():
        if kind == "size":
            keys[f"{quantity}_max"] = (quantity, "<=")
            continue
        if kind not in ("time", "pct"):
            keys[quantity] = (quantity, "==")
        if kind != "flag":
            keys[f"min_{quantity}"] = (quantity, ">=")
            keys[f"max_{quantity}"] = (quantity, "<=")
    return keys


CHECKS: dict[str, tuple[str, Comparison]] = _check_keys()
"""Every check key: the quantity it bounds and how (``max_gpu_us`` → ``("gpu_us", "<=")``)."""
APPLIES: dict[str, tuple[Subject, ...]] = {key: QUANTITIES[q][1] for key, (q, _) in CHECKS.items()}
"""The subjects each check key may be used with."""
OTHER_KEYS = ("per", "note")
KNOWN_KEYS: tuple[str, ...] = (*SUBJECTS, *CHECKS, *OTHER_KEYS)


@dataclass(frozen=True)
class Check:
    """One bound on one quantity, as written: ``max_gpu_us = 250`` on line 12."""

    key: str
    quantity: str
    comparison: Comparison
    value: int | float | bool
    line: int
    written: str | None = None
    """A size as the file wrote it (``"900 MiB"``); ``value`` holds its bytes."""

    @property
    def text(self) -> str:
        """The check as written in the file."""
        if self.written is not None:
            return f'{self.key} = "{self.written}"'
        value = str(self.value).lower() if isinstance(self.value, bool) else _number(self.value)
        return f"{self.key} = {value}"

    def holds(self, actual: float | bool) -> bool:
        """Whether a measured value satisfies the bound."""
        if self.comparison == ">=":
            return actual >= self.value
        if self.comparison == "<=":
            return actual <= self.value
        return actual == self.value


@dataclass(frozen=True)
class Expectation:
    """One ``[[expect]]`` table: a subject, the unit it is counted in, and its checks."""

    index: int
    """1-based position in the file."""
    line: int
    """Line of its ``[[expect]]`` header."""
    subject: Subject
    target: str | int
    """Annotation name, op or kernel glob, step number, ``"*"`` (every step), or a device
    (``cuda:0``; ``"*"``: every device with memory events)."""
    per: str | None
    """op/kernel: count in each call of this annotation, in each step (``"step"``), or the whole
    trace (``None``)."""
    checks: tuple[Check, ...]
    note: str | None = None

    @property
    def label(self) -> str:
        """``annotation mlp_fwd``, ``kernel triton_poi_* per mlp_fwd``, ``step 3``, ``every step``."""
        if self.subject == "step":
            return "every step" if self.target == ALL_STEPS else f"step {self.target}"
        if self.subject == "memory":
            return "memory on every device" if self.target == ALL_DEVICES else f"memory on {self.target}"
        text = f"{self.subject} {self.target}"
        if self.per is not None:
            text += " per step" if self.per == PER_STEP else f" per {self.per}"
        return text


def load_expectations(path: str | Path) -> list[Expectation]:
    """Read and validate an expectations file; :class:`TraceError` (``line N: …``) if it is bad."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(path, "no such expectations file") from None
    except IsADirectoryError:
        raise TraceError(path, "is a directory, not an expectations file") from None
    except OSError as exc:
        raise TraceError(path, f"cannot read the expectations file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceError(path, f"line {line}: not UTF-8 text (an expectations file is TOML)") from None
    return parse_expectations(text, path)


def parse_expectations(text: str, path: str | Path | None = None) -> list[Expectation]:
    """Validate TOML text as an expectations file (``path`` only names it in errors)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TraceError(path, _toml_problem(str(exc))) from None
    return _Parser(text, path).expectations(document)


class _Parser:
    """Validation of a decoded document, with line numbers found in its text."""

    def __init__(self, text: str, path: str | Path | None) -> None:
        self.where = _Locator(text)
        self.path = path

    def fail(self, line: int, problem: str) -> TraceError:
        return TraceError(self.path, f"line {line}: {problem}")

    def expectations(self, document: dict[str, Any]) -> list[Expectation]:
        for key in document:
            if key != "expect":
                raise self.fail(
                    self.where.top_key(key),
                    f"unknown top-level key {clean(key)!r}; expected [[expect]] tables",
                )
        tables = document.get("expect")
        if tables is None or tables == []:
            line = 1 if tables is None else self.where.top_key("expect")
            raise self.fail(line, "no [[expect]] tables: an empty expectations file checks nothing")
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            raise self.fail(self.where.top_key("expect"), "'expect' must be [[expect]] tables")
        return [self.expectation(i + 1, table) for i, table in enumerate(tables)]

    def expectation(self, index: int, table: dict[str, Any]) -> Expectation:
        header = self.where.table(index)

        def line(key: str) -> int:
            return self.where.key(index, key)

        for key in table:
            if key not in KNOWN_KEYS:
                raise self.fail(line(key), _unknown_key(key))
        subjects = [k for k in table if k in SUBJECTS]
        if not subjects:
            raise self.fail(
                header, f"[[expect]] #{index} names no subject: give one of {', '.join(SUBJECTS)}"
            )
        if len(subjects) > 1:
            first, second = subjects[:2]
            raise self.fail(line(second), f"[[expect]] #{index} names two subjects: {first} and {second}")
        subject: Subject = subjects[0]
        target = self.target(subject, table[subject], line(subject))
        per = self.per(subject, table.get("per"), line("per"))
        note = table.get("note")
        if note is not None and not isinstance(note, str):
            raise self.fail(line("note"), f"'note' must be a string, got {_shown(note)}")
        checks = [self.check(key, value, subject, line(key)) for key, value in table.items() if key in CHECKS]
        if not checks:
            raise self.fail(
                header, f"[[expect]] #{index} ({subject}) has nothing to check: add e.g. {_example(subject)}"
            )
        self.consistent(checks)
        return Expectation(
            index=index,
            line=header,
            subject=subject,
            target=target,
            per=per,
            checks=tuple(checks),
            note=clean(note) if note else None,
        )

    def target(self, subject: Subject, value: Any, line: int) -> str | int:
        if subject == "step":
            number = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            if not number and value != ALL_STEPS:
                raise self.fail(
                    line,
                    f"'step' must be a step number (ProfilerStep#N) or \"{ALL_STEPS}\", got {_shown(value)}",
                )
            return value
        if not isinstance(value, str) or not value:
            if subject == "memory":
                raise self.fail(
                    line,
                    f'\'memory\' must be a device such as "cuda:0" or "{ALL_DEVICES}", got {_shown(value)}',
                )
            raise self.fail(line, f"'{subject}' must be a non-empty string, got {_shown(value)}")
        if subject in _MATCH and (problem := glob_problem(value)):
            raise self.fail(line, f"bad glob in '{subject}': {clean(problem)}")
        return clean(value)

    def per(self, subject: Subject, value: Any, line: int) -> str | None:
        if value is None:
            return None
        if subject not in _MATCH:
            raise self.fail(line, f"'per' applies to op and kernel expectations, not to {subject}")
        if not isinstance(value, str) or not value:
            raise self.fail(line, f"'per' must be an annotation name or \"{PER_STEP}\", got {_shown(value)}")
        return clean(value)

    def check(self, key: str, value: Any, subject: Subject, line: int) -> Check:
        quantity, comparison = CHECKS[key]
        if subject not in APPLIES[key]:
            users = (
                ", ".join(APPLIES[key][:-1]) + (" or " if len(APPLIES[key]) > 1 else "") + APPLIES[key][-1]
            )
            raise self.fail(line, f"'{key}' does not apply to {subject} expectations (only to {users})")
        kind = QUANTITIES[quantity][0]
        if kind == "size":
            return self.size_check(key, quantity, comparison, value, line)
        if kind == "flag":
            if not isinstance(value, bool):
                raise self.fail(line, f"'{key}' must be true or false, got {_shown(value)}")
        elif kind == "count":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise self.fail(line, f"'{key}' must be a whole number ≥ 0, got {_shown(value)}")
        elif kind == "pct":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
                raise self.fail(line, f"'{key}' must be a percentage from 0 to 100, got {_shown(value)}")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise self.fail(line, f"'{key}' must be a number of µs ≥ 0, got {_shown(value)}")
        return Check(key=key, quantity=quantity, comparison=comparison, value=value, line=line)

    def size_check(self, key: str, quantity: str, comparison: Comparison, value: Any, line: int) -> Check:
        """A size: text with a unit (``"900 MiB"``) or a whole number of bytes."""
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return Check(key=key, quantity=quantity, comparison=comparison, value=value, line=line)
        if not isinstance(value, str):
            raise self.fail(line, f"'{key}' must be a size such as \"900 MiB\", got {_shown(value)}")
        try:
            size = parse_size(value)
        except ValueError as exc:
            raise self.fail(line, f"'{key}': {clean(str(exc))}") from None
        return Check(
            key=key, quantity=quantity, comparison=comparison, value=size, line=line, written=clean(value)
        )

    def consistent(self, checks: list[Check]) -> None:
        """No exact value beside a bound on the same quantity; no minimum above its maximum."""
        for quantity in dict.fromkeys(c.quantity for c in checks):
            bounds = {c.comparison: c for c in checks if c.quantity == quantity}
            low, high = bounds.get(">="), bounds.get("<=")
            if "==" in bounds and (bound := low or high):
                raise self.fail(
                    bound.line, f"'{bound.key}' and '{quantity}' together: give an exact value or bounds"
                )
            if low and high and low.value > high.value:
                raise self.fail(
                    high.line,
                    f"'{high.key}' ({_number(high.value)}) is below '{low.key}' ({_number(low.value)})",
                )


def _example(subject: Subject) -> str:
    return {
        "annotation": "kernels_per_call = 5",
        "step": "kernels_per_call = 5",
        "op": "launches_kernels = false",
        "kernel": "count = 1",
        "memory": 'peak_allocated_max = "900 MiB"',
    }[subject]


def _unknown_key(key: str) -> str:
    shown = clean(key)
    close = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key {shown!r}{hint}; see docs/compare.md for the keys"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return repr(clean(value))
    if isinstance(value, (int, float)):
        return _number(value)
    return f"a {type(value).__name__}"


def _number(value: float | int | bool) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _toml_problem(message: str) -> str:
    """``Invalid value (at line 3, column 9)`` → ``line 3: not valid TOML: invalid value (column 9)``."""
    message = clean(message)
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if m:
        reason = message[: m.start()]
        return f"line {m.group(1)}: not valid TOML: {reason[:1].lower()}{reason[1:]} (column {m.group(2)})"
    m = re.search(r"\s*\(at end of document\)$", message)
    if m:
        return f"at the end: not valid TOML: {message[: m.start()]}"
    return f"not valid TOML: {message}"


class _Locator:
    """Line numbers for tables and keys (``tomllib`` keeps none): found by scanning the text."""

    _HEADER = re.compile(r"^\s*\[\[\s*expect\s*\]\]")
    _ANY_HEADER = re.compile(r"^\s*\[")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.headers = [i for i, line in enumerate(self.lines) if self._HEADER.match(line)]

    def table(self, index: int) -> int:
        """1-based line of the ``index``-th (1-based) ``[[expect]]`` header."""
        if 0 < index <= len(self.headers):
            return self.headers[index - 1] + 1
        return self.top_key("expect")

    def key(self, index: int, key: str) -> int:
        """Line of ``key`` inside the ``index``-th table (its header line if not found)."""
        pattern = self._key_pattern(key)
        if 0 < index <= len(self.headers):
            start = self.headers[index - 1] + 1
            for i in range(start, len(self.lines)):
                if self._ANY_HEADER.match(self.lines[i]):
                    break
                if pattern.match(self.lines[i]):
                    return i + 1
            return start
        return self._first(pattern) or self.table(index)

    def top_key(self, key: str) -> int:
        """Line where a top-level key (``key = …`` or a ``[key]`` header) first appears."""
        escaped = re.escape(key)
        header = re.compile(rf"^\s*\[\[?\s*(?:{escaped}|\"{escaped}\"|'{escaped}')\s*[\].]")
        return self._first(header) or self._first(self._key_pattern(key)) or 1

    def _first(self, pattern: re.Pattern[str]) -> int | None:
        return next((i + 1 for i, line in enumerate(self.lines) if pattern.match(line)), None)

    @staticmethod
    def _key_pattern(key: str) -> re.Pattern[str]:
        escaped = re.escape(key)
        return re.compile(rf"^\s*(?:{escaped}|\"{escaped}\"|'{escaped}')\s*[=.]")
