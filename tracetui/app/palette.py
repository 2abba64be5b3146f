"""The command palette's jump-to-name search (the screen's actions come from the app).

Names are scored with :func:`name_score` (substring, words, subsequence: linear time), not
Textual's fuzzy matcher, whose search explodes on 400-character C++ kernel names.
"""

from __future__ import annotations

from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from tracetui import formatting as fmt
from tracetui.app.widgets.cells import fit
from tracetui.safetext import shown


def _shown(name: str, kind: str, query: str = "") -> Content:
    """``go to NAME`` with the query underlined; GPU work: its decoded short form, then the name cut
    to 70 cells."""
    from tracetui.views.tree import short_kernel_name

    text = Content(fit(name, 70)).stylize("$text-muted") if kind == "GPU" else Content(shown(name))
    found = text.plain.lower().find(query.lower()) if query else -1
    if found >= 0:
        text = text.stylize("bold underline", found, found + len(query))
    if kind != "GPU":
        return Content.assemble(("go to ", "$text-muted"), text)
    return Content.assemble(("go to ", "$text-muted"), (shown(short_kernel_name(name)), "bold"), "  ", text)


def name_score(query: str, name: str) -> float:
    """How well ``query`` matches ``name``, in [0, 1]: equal, contained (earlier and shorter
    names first), every word contained, or the letters in order; 0 for no match."""
    query, name = query.lower().strip(), name.lower()
    if not query:
        return 0.0
    if name == query:
        return 1.0
    found = name.find(query)
    if found >= 0:
        return 0.9 - min(found, 200) / 1000 - min(len(name), 1000) / 10000
    if all(word in name for word in query.split()):
        return 0.6
    position = 0
    for char in query:
        position = name.find(char, position) + 1
        if position == 0:
            return 0.0
    return 0.3


@runtime_checkable
class NamedScreen(Protocol):
    """A screen whose names the palette searches (the explorer)."""

    def palette_names(self) -> list[tuple[str, str, int]]: ...

    def jump_to_name(self, name: str, kind: str) -> None: ...


class NameSearch(Provider):
    """Type part of an op, annotation or kernel name; Enter goes to its first occurrence."""

    async def search(self, query: str) -> Hits:
        screen = self.screen
        if not isinstance(screen, NamedScreen) or not query.strip():
            return
        from tracetui.views.tree import short_kernel_name

        for name, kind, count in screen.palette_names():
            score = name_score(query, name)
            if kind == "GPU":
                score = max(score, name_score(query, short_kernel_name(name)))
            if score <= 0:
                continue
            yield Hit(
                score,
                _shown(name, kind, query),
                partial(screen.jump_to_name, name, kind),
                text=f"go to {name}",
                help=f"{kind}, {fmt.count(count)} in the trace",
            )

    async def discover(self) -> Hits:
        screen = self.screen
        if not isinstance(screen, NamedScreen):
            return
        for name, kind, count in screen.palette_names()[:10]:
            yield DiscoveryHit(
                _shown(name, kind),
                partial(screen.jump_to_name, name, kind),
                text=f"go to {name}",
                help=f"{kind}, {fmt.count(count)} in the trace",
            )
