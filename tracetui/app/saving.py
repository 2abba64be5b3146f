"""Pictures of the screen: the file name a saved view gets, and the SVG itself (Textual's screenshot,
which is deterministic: the same screen gives the same bytes)."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracetui.errors import TraceError
from tracetui.output import write_file

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9._-]+")
MAX_STEM = 60


def file_stem(name: str) -> str:
    """A trace file's name as part of a file name: letters, digits, ``._-``; its suffixes dropped."""
    for suffix in (".gz", ".json", ".pt.trace"):
        name = name.removesuffix(suffix)
    return UNSAFE_IN_NAME.sub("_", name).strip("._")[:MAX_STEM] or "trace"


def free_name(folder: Path, stem: str, suffix: str) -> Path:
    """``folder/stem.suffix``, or ``stem-2.suffix``, ``stem-3.suffix``, … : the first that does not
    exist (no clock in the name, and no file is ever overwritten)."""
    candidate = folder / f"{stem}{suffix}"
    number = 1
    while candidate.exists():
        number += 1
        candidate = folder / f"{stem}-{number}{suffix}"
    return candidate


def write_svg(target: Path, svg: str, *, replace: bool = True) -> None:
    """Write ``svg`` to ``target`` whole or not at all (:func:`tracetui.output.write_file`;
    ``replace=False``: never over a file that exists); an OS error is one line."""
    try:
        write_file(target, lambda tmp: tmp.write_text(svg, encoding="utf-8"), replace=replace)
    except FileExistsError:
        raise TraceError(target, "exists already: not replaced") from None
    except OSError as exc:
        raise TraceError(target, f"cannot write: {exc.strerror or exc}") from None


def save_svg(app: App[Any], target: Path) -> None:
    """Write the current screen of a running ``app`` to ``target`` (a new file) as SVG."""
    write_svg(target, app.export_screenshot(), replace=False)


def shown_folder(folder: Path) -> str:
    """A folder as the notification names it: ``~/…`` under the home folder."""
    home = os.path.expanduser("~")
    text = str(folder)
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        text = "~" + text[len(home) :]
    return text


def view_name(screen: Screen[object]) -> str:
    """What a screen shows, for a picture's file name: its ``view_name`` (the explorer: ``tree``; the
    tables: the active table), else its class's name (``diff``, …)."""
    name = getattr(screen, "view_name", None)
    if isinstance(name, str) and name:
        return name
    return type(screen).__name__.lower().removesuffix("screen") or "screen"


def save_screen(app: App[Any], traces: Sequence[Path], folder: Path) -> str:
    """Save ``app``'s current screen as ``tracetui_<trace>_<view>.svg`` in ``folder`` (in a browser:
    send it as a download); returns the notification's text, which says where it went."""
    stem = "_".join(["tracetui", *(file_stem(p.name) for p in traces), view_name(app.screen)])
    if app.is_web:
        name = f"{stem}.svg"
        svg = io.StringIO(app.export_screenshot())
        app.deliver_text(svg, save_filename=name, open_method="download", mime_type="image/svg+xml")
        return f"Sent {name} to the browser (your downloads folder)"
    target = free_name(folder, stem, ".svg")
    save_svg(app, target)
    return f"Saved the screen as {target.name} in {shown_folder(folder)}"
