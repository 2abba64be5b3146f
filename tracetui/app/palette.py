"""Command palette providers: every action of the screen, and a jump-to-name search."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content


class NameSearch(Provider):
    """Type part of an op, annotation or kernel name; Enter goes to its first occurrence."""

    async def search(self, query: str) -> Hits:
        screen = self.screen
        names = getattr(screen, "palette_names", None)
        if names is None or not query.strip():
            return
        matcher = self.matcher(query)
        lowered = query.lower()
        for name, kind, count in names():
            score = matcher.match(name)
            if score <= 0:
                continue
            shown = Content(name)
            found = name.lower().find(lowered)
            if found >= 0:
                shown = shown.stylize("bold underline", found, found + len(lowered))
            yield Hit(
                score,
                Content.assemble(("go to ", "$text-muted"), shown),
                partial(screen.jump_to_name, name, kind),
                text=f"go to {name}",
                help=f"{kind}, {count:,} in the trace",
            )

    async def discover(self) -> Hits:
        screen = self.screen
        names = getattr(screen, "palette_names", None)
        if names is None:
            return
        for name, kind, count in names()[:10]:
            yield DiscoveryHit(
                Content.assemble(("go to ", "$text-muted"), Content(name)),
                partial(screen.jump_to_name, name, kind),
                text=f"go to {name}",
                help=f"{kind}, {count:,} in the trace",
            )
