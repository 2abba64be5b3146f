"""``tracetui diff A B`` on a terminal: the headlines, the two trees side by side, the cursor's pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from tracetui import formatting as fmt
from tracetui.app.messages import DifferenceFound
from tracetui.app.widgets.diff_tree import DiffTree
from tracetui.app.widgets.dispatch_tree import ICONS
from tracetui.compare.pair_tree import CHANGED, ONLY_A, ONLY_B, STATUS_WORDS, PairTree
from tracetui.safetext import shown
from tracetui.views.tree import Node

MARKER_STYLES = {ONLY_A: "bold $text-error", ONLY_B: "bold $text-success", CHANGED: "bold $text-warning"}
HINT = "Tab: side · n / N: next / previous difference · e: expand chain · ← →: collapse / expand · ? keys"


def headline_content(data: dict[str, Any]) -> Content:
    """The bar on top: which traces, then ``diff_data``'s headlines (trace text as plain text)."""
    title = Content.assemble(
        ("tracetui diff", "bold $text-accent"),
        "  ",
        ("A ", "bold $text-error"),
        (shown(data["a"]["name"]), "bold"),  # file names and trace names: outside text
        ("  →  ", "$text-muted"),
        ("B ", "bold $text-success"),
        (shown(data["b"]["name"]), "bold"),
    )
    lines = [title]
    for headline in data["headlines"]:
        lines.append(Content.assemble(("• ", "$text-muted"), shown(headline)))
    if not data["headlines"]:
        lines.append(Content.styled("no annotation, step or trace scope to compare", "$text-muted"))
    return Content("\n").join(lines)


def _side_line(letter: str, node: Node | None, active: bool) -> Content:
    label = (f" {letter} ", "bold reverse $text-accent" if active else "bold $text-muted")
    if node is None:
        return Content.assemble(label, " ", ("—", "$text-muted"))
    numbers = [f"GPU {fmt.duration(node.gpu_us)}" if node.gpu_us is not None else ""]
    if node.kernels is not None:
        numbers.append(f"{fmt.count(node.kernels)} kernel{'s' if node.kernels != 1 else ''}")
    if node.cpu_us is not None:
        numbers.append(f"CPU {fmt.duration(node.cpu_us)}")
    if node.where:
        numbers.append(node.where)
    return Content.assemble(
        label,
        " ",
        (ICONS.get(node.kind, "·") + " ", "$text-muted"),
        shown(node.full_name),
        ("   " + shown(" · ".join(n for n in numbers if n)), "$text-muted"),
    )


def pair_content(model: PairTree, pid: int, side: str) -> Content:
    """Three lines for the cursor's pair: its status and what changed, then A's and B's node."""
    pair = model.pair(pid)
    a, b = model.nodes(pid)
    status: list[str | tuple[str, str]] = [
        (f" {pair.marker} ", MARKER_STYLES.get(pair.status, "")),
        STATUS_WORDS[pair.status],
    ]
    if a is not None and b is not None and pair.status == CHANGED:
        changes: list[str] = []
        if (a.kernels or 0) != (b.kernels or 0):
            changes.append(f"kernels {fmt.count(a.kernels or 0)} → {fmt.count(b.kernels or 0)}")
        if (a.gpu_events or 0) != (b.gpu_events or 0):
            changes.append(f"GPU events {fmt.count(a.gpu_events or 0)} → {fmt.count(b.gpu_events or 0)}")
        ga, gb = a.gpu_us or 0.0, b.gpu_us or 0.0
        relative = fmt.percent_change(ga, gb)
        changes.append(
            f"GPU {fmt.duration(ga)} → {fmt.duration(gb)}" + (f" ({relative})" if relative else "")
        )
        status.append(": " + ", ".join(changes))
    elif pair.opened:
        status.append(" (shown open: its children line up with the other side)")
    return Content("\n").join(
        [Content.assemble(*status), _side_line("A", a, side == "a"), _side_line("B", b, side == "b")]
    )


class DiffScreen(Screen[None]):
    """Trace A (left) and trace B (right), matching nodes on one row."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "n",
            "next_difference",
            "Next difference",
            id="diff.next",
            tooltip="a changed pair or a run of rows only in A (only in B), expanding as needed",
        ),
        Binding("N", "previous_difference", "Previous difference", show=False, id="diff.previous"),
    ]

    def __init__(self, data: dict[str, Any], model: PairTree) -> None:
        super().__init__()
        self.data = data
        self.model = model
        self._pending: set[str] = set()

    def compose(self) -> ComposeResult:
        yield Static(headline_content(self.data), id="diff-headlines")
        yield DiffTree(id="diff-tree")
        yield Static(Content(""), id="diff-details")
        yield Static(Content.styled(" " + HINT, "$text-muted"), id="diff-status")
        yield Footer()

    @property
    def diff_tree(self) -> DiffTree:
        return self.query_one(DiffTree)

    @property
    def settled(self) -> bool:
        """No worker result outstanding (tests wait on it)."""
        return not self._pending

    def on_mount(self) -> None:
        titles = (Path(self.data["a"]["name"]).name, Path(self.data["b"]["name"]).name)
        self.diff_tree.set_model(self.model, self.model.hottest_path(), titles)
        self.diff_tree.focus()

    @on(DiffTree.CursorMoved)
    def _cursor_moved(self, event: DiffTree.CursorMoved) -> None:
        details = self.query_one("#diff-details", Static)
        details.update(
            Content("") if event.pid is None else pair_content(self.model, event.pid, self.diff_tree.side)
        )

    # ---- differences ----------------------------------------------------------------------------
    def action_next_difference(self) -> None:
        self._find(backwards=False)

    def action_previous_difference(self) -> None:
        self._find(backwards=True)

    def _find(self, *, backwards: bool) -> None:
        self._pending.add("find")
        self.find_difference(self.diff_tree.cursor_key, backwards)

    @work(thread=True, exclusive=True, group="diff-find")
    def find_difference(self, start: int | None, backwards: bool) -> None:
        pid, wrapped = self.model.find_difference(start, backwards=backwards)
        self.post_message(DifferenceFound(pid, wrapped))

    def on_difference_found(self, message: DifferenceFound) -> None:
        self._pending.discard("find")
        if message.pid is None:
            self.notify("The two traces show no difference.", timeout=3)
            return
        self.diff_tree.reveal(self.model.path_of(message.pid))
        if message.wrapped:
            self.notify("Searched past the end: back at the other end.", timeout=2)
