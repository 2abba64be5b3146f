"""The command palette's commands for a distributed run: switch to a rank, compare the open rank
with another, show the Ranks screen (the app posts what they ask for)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.message import Message

from tracetui.app.rank_messages import CompareRanks, OpenRank, ShowRanks
from tracetui.safetext import shown

if TYPE_CHECKING:
    from tracetui.ranks.view import RankChoice


@runtime_checkable
class RunLike(Protocol):
    """An app showing a run: its ranks and the one open."""

    choices: list[RankChoice]

    @property
    def current_rank(self) -> int | None: ...

    def post_message(self, message: Message) -> bool: ...


def rank_commands(app: RunLike) -> list[tuple[str, str, Callable[[], object]]]:
    """``(text, help, callback)`` of every command: switch to each rank, compare the open rank with
    each other one, show the Ranks screen."""
    commands: list[tuple[str, str, Callable[[], object]]] = []
    current = app.current_rank
    for choice in app.choices:
        if choice.rank != current:
            commands.append(
                (
                    f"switch to {choice.title}",
                    f"its tree, tables and timeline ({shown(choice.path.name)})",
                    partial(app.post_message, OpenRank(choice.rank)),
                )
            )
    if current is not None:
        for choice in app.choices:
            if choice.rank != current:
                commands.append(
                    (
                        f"compare rank {current} with rank {choice.rank}",
                        "the comparison screen: the two trees side by side",
                        partial(app.post_message, CompareRanks(current, choice.rank)),
                    )
                )
    commands.append(
        (
            "show the Ranks table",
            "ranks, collectives, kernels across ranks",
            partial(app.post_message, ShowRanks()),
        )
    )
    return commands


class RankCommands(Provider):
    """Switch ranks, compare two, show the Ranks screen."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = self.app
        return rank_commands(app) if isinstance(app, RunLike) else []

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help, callback in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback, text=text, help=help)

    async def discover(self) -> Hits:
        for text, help, callback in self._commands():
            yield DiscoveryHit(text, callback, text=text, help=help)
