"""The dispatch-chain tree: a Line-API widget over a :class:`TreeModel`.

Rows are a flat list of node keys and depths; a row's text is built only when it scrolls into
view (``render_line``), so expanding a node with 100k children costs a list splice, and a
3 000-level python stack is as cheap as a flat one (no recursion anywhere; indentation is capped
and the depth shown as a number beyond the cap).
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tracetui import formatting as fmt
from tracetui.app.widgets.cells import fit, pad
from tracetui.app.widgets.line_style import CachedStyles
from tracetui.app.widgets.row_tree import RowTree, row_bindings
from tracetui.views.path_marks import NO_TREE_MARKS, TreeMarks
from tracetui.views.tree import Node, NodeKey, TreeModel

ICONS = {
    "step": "◆",
    "annotation": "◇",
    "op": "○",
    "python": "λ",
    "call": "→",
    "cpu": "·",
    "kernel": "■",
    "memcpy": "⇄",
    "memset": "▭",
    "sync": "⧗",
    "thread": "≡",
    "outside": "…",
    "orphans": "?",
}
PATH_GLYPHS = {"on": "» ", "above": "› ", "": "  "}
"""The gutter of a tree with a critical path marked: on the path, holding an event on it, neither."""
MAX_INDENT = 24  # levels drawn as guides; deeper rows show their depth as a number
CPU_WIDTH = 9
GPU_WIDTH = 9
KERNELS_WIDTH = 7
ROW_CLASSES = tuple(
    f"dispatch-tree--{name}"
    for name in (
        "header",
        "guide",
        "step",
        "annotation",
        "op",
        "python",
        "call",
        "gpu",
        "memory",
        "synthetic",
        "no-kernel",
        "number",
        "where",
        "match",
        "path",
        "path-above",
        "cursor",
    )
)


def row_css(widget: str) -> str:
    """The tree rows' component styles, for ``widget`` (the dispatch tree and the comparison's)."""
    return f"""
    {widget} {{
        background: $surface;
        scrollbar-gutter: stable;
    }}
    {widget} > .dispatch-tree--header {{ text-style: bold; color: $text-muted; background: $panel; }}
    {widget} > .dispatch-tree--guide {{ color: $text-disabled; }}
    {widget} > .dispatch-tree--step {{ text-style: bold; color: $text-accent; }}
    {widget} > .dispatch-tree--annotation {{ text-style: bold; color: $text-secondary; }}
    {widget} > .dispatch-tree--op {{ color: $foreground; }}
    {widget} > .dispatch-tree--python {{ color: $text-muted; text-style: italic; }}
    {widget} > .dispatch-tree--call {{ color: $text-primary; }}
    {widget} > .dispatch-tree--gpu {{ color: $text-success; text-style: bold; }}
    {widget} > .dispatch-tree--memory {{ color: $text-warning; }}
    {widget} > .dispatch-tree--synthetic {{ color: $text-muted; text-style: italic; }}
    {widget} > .dispatch-tree--no-kernel {{ color: $text-disabled; }}
    {widget} > .dispatch-tree--number {{ color: $foreground; }}
    {widget} > .dispatch-tree--where {{ color: $text-muted; }}
    {widget} > .dispatch-tree--match {{ text-style: bold underline; }}
    {widget} > .dispatch-tree--path {{ color: $text-warning; text-style: bold; }}
    {widget} > .dispatch-tree--path-above {{ color: $text-warning; }}
    {widget} > .dispatch-tree--cursor {{ background: $block-cursor-blurred-background; }}
    {widget}:focus > .dispatch-tree--cursor {{
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }}
    """


def style_name(node: Node) -> str:
    """The component class (after ``dispatch-tree--``) a node's name is drawn with."""
    if node.no_kernel and node.kind in ("op", "python", "call", "cpu", "annotation"):
        return "no-kernel"
    kind = node.kind
    if kind == "kernel":
        return "gpu"
    if kind in ("memcpy", "memset", "sync"):
        return "memory"
    if kind in ("thread", "outside", "orphans"):
        return "synthetic"
    return kind if kind in ("step", "annotation", "op", "python", "call") else "op"


class DispatchTree(RowTree[NodeKey], CachedStyles, ScrollView, can_focus=True):
    """Steps → annotations → ops → runtime calls → the GPU work they launched."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *row_bindings("tree"),
        Binding(
            "e",
            "expand_chain",
            "Open chain",
            id="tree.expand_chain",
            tooltip="expand the single-child chain below the cursor down to the kernel",
        ),
        Binding(
            "g",
            "goto_launcher",
            "Go to op",
            id="tree.goto_launcher",
            tooltip="from GPU work or a runtime call to the op that launched it",
        ),
        Binding(
            "f",
            "goto_forward",
            "Forward op",
            show=False,
            id="tree.goto_forward",
            tooltip="from a backward op to the forward op that created it",
        ),
        Binding(
            "h", "hot_chain", "Hot chain", show=False, id="tree.hot_chain", tooltip="expand the hottest chain"
        ),
        Binding("c", "collapse_all", "Collapse all", show=False, id="tree.collapse_all"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = set(ROW_CLASSES)

    DEFAULT_CSS = row_css("DispatchTree")

    class CursorMoved(Message):
        """The cursor is on a new node."""

        def __init__(self, tree: DispatchTree, key: NodeKey | None) -> None:
            super().__init__()
            self.tree = tree
            self.key = key

    find_query: var[str] = var("", init=False)
    """Names containing it are underlined (a find's query)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.model: TreeModel | None = None
        self.marks: TreeMarks = NO_TREE_MARKS
        self._init_rows()

    # ---- RowTree ------------------------------------------------------------------------------
    def _chain_below(self, key: NodeKey) -> list[NodeKey]:
        assert self.model is not None
        return self.model.chain_below(key)

    def _post_cursor(self, key: NodeKey | None) -> None:
        self.post_message(self.CursorMoved(self, key))

    # ---- state ------------------------------------------------------------------------------
    @property
    def cursor_node(self) -> Node | None:
        key = self.cursor_key
        return None if key is None or self.model is None else self.model.node(key)

    def set_model(self, model: TreeModel, *, initial: bool = False) -> None:
        """Show ``model``. ``initial``: expand the hottest chain and put the cursor at its end;
        otherwise keep the expanded nodes and the cursor (or its nearest shown ancestor)."""
        previous = self.cursor_key
        self.model = model
        if initial:
            path = model.hottest_path()
            self._expanded = set(path[:-1])
            target: NodeKey | None = path[-1] if path else None
        else:
            target = previous
        self._rebuild_rows()
        index = self._index_of(target) if target is not None else None
        if index is None and isinstance(target, int):
            index = self._reveal_nearest(target)
        self.place_cursor(index or 0)

    def _reveal_nearest(self, event_id: int) -> int | None:
        """Cursor target for an event no longer shown: its nearest shown ancestor."""
        assert self.model is not None
        for ancestor in reversed(self.model.trace.ancestors(event_id)[:-1]):
            path = self.model.path_to(ancestor)
            if path is not None:
                return self.reveal(path, move=False)
        return None

    def set_marks(self, marks: TreeMarks) -> None:
        """Mark the events on a critical path (``»``) and the nodes holding them (``›``) in a
        gutter left of the rows (none: no gutter)."""
        self.marks = marks
        self._strips.clear()
        self.refresh()

    def _gutter(self) -> int:
        return 2 if self.marks else 0

    # ---- expand / collapse ----------------------------------------------------------------------
    def reveal(self, path: list[NodeKey], *, move: bool = True) -> int | None:
        """Expand every node along ``path`` (top-level key first); move the cursor to its end."""
        start = self._index_of(path[0])
        if start is None:
            return None
        index, complete = self._expand_along(start, path[1:])
        if not complete:
            return None
        if move:
            self._set_cursor(index, center=True)
        return index

    def reveal_event(self, event_id: int) -> bool:
        """Show an event (expanding its ancestors) and put the cursor on it."""
        if self.model is None:
            return False
        path = self.model.path_to(event_id)
        return path is not None and self.reveal(path) is not None

    def action_hot_chain(self) -> None:
        """Expand the hottest chain again and go to its end."""
        if self.model is not None and (path := self.model.hottest_path()):
            self.reveal(path)

    def action_goto_launcher(self) -> None:
        """On GPU work: the op that launched it (else its runtime call); on a call: its op."""
        node = self.cursor_node
        if node is None or node.event_id is None or self.model is None:
            return
        event = self.model.trace.event(node.event_id)
        if node.is_gpu:
            target, what = event["launch_op_id"] or event["launch_id"], "launching op"
        elif node.kind in ("call", "python", "cpu"):
            target, what = event["op_id"], "enclosing op"
        else:
            self.notify("Already on an op: 'g' jumps from GPU work or a runtime call to its op.", timeout=3)
            return
        self._jump(target, what)

    def action_goto_forward(self) -> None:
        """On a backward op: the forward op that created it."""
        node = self.cursor_node
        if node is None or node.event_id is None or self.model is None:
            return
        self._jump(self.model.forward_of(node.key), "forward op")

    def _jump(self, target: int | None, what: str) -> None:
        if target is None:
            self.notify(f"No {what} in the trace for this node.", severity="warning", timeout=3)
        elif not self.reveal_event(target):
            self.notify(f"The {what} is hidden by the current filters.", severity="warning", timeout=3)

    # ---- mouse --------------------------------------------------------------------------------
    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        index = round(self.scroll_offset.y) + offset.y - 1
        if not 0 <= index < len(self._rows):
            return
        indent = self._gutter() + self._indent_width(self._depths[index])
        if index == self._cursor or indent <= offset.x < indent + 2:
            self._set_cursor(index)
            self.action_toggle_row()
        else:
            self._set_cursor(index)

    # ---- find ---------------------------------------------------------------------------------
    def watch_find_query(self) -> None:
        self._strips.clear()
        self.refresh()

    # ---- rendering ------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.base_style
        if y == 0:
            return self._header(width)
        index = round(self.scroll_offset.y) + y - 1
        if not 0 <= index < len(self._rows) or self.model is None:
            return Strip.blank(width, base)
        key = self._rows[index]
        cursor = index == self._cursor
        cache_key = (key, self._depths[index], key in self._expanded, cursor, width)
        strip = self._strips.get(cache_key)
        if strip is None:
            strip = self._row_strip(index, width, cursor)
            if len(self._strips) > 4 * max(64, self.size.height):
                self._strips.clear()
            self._strips[cache_key] = strip
        return strip

    def _columns(self, width: int) -> list[tuple[str, int]]:
        columns = [("GPU", GPU_WIDTH), ("kernels", KERNELS_WIDTH)]
        if width >= 56:
            columns.insert(0, ("CPU", CPU_WIDTH))
        return columns

    def _header(self, width: int) -> Strip:
        style = self.base_style + self.component("dispatch-tree--header")
        columns = self._columns(width)
        right = "".join(" " + pad(title, size, "right") for title, size in columns)
        text = pad(" name", width - len(right)) + right
        return Strip([Segment(fit(text, width), style)], width)

    def _indent_width(self, depth: int) -> int:
        return min(depth, MAX_INDENT) * 2 + (7 if depth > MAX_INDENT else 0)

    def _style(self, name: str) -> Style:
        return self.component(f"dispatch-tree--{name}")

    def _row_strip(self, index: int, width: int, cursor: bool) -> Strip:
        assert self.model is not None
        key, depth = self._rows[index], self._depths[index]
        node = self.model.node(key)
        guide = self._style("guide")
        segments: list[Segment] = []
        if self.marks:
            mark = self.marks.of(key)
            style = self._style("path" if mark == "on" else "path-above") if mark else guide
            segments.append(Segment(PATH_GLYPHS[mark], style))
        if depth > MAX_INDENT:
            segments.append(Segment(f"⋯{depth:>5} ", guide))
        segments.append(Segment("│ " * min(depth, MAX_INDENT), guide))
        if key in self._expanded:
            expander = "▼ "
        elif self.model.has_children(key):
            expander = "▶ "
        else:
            expander = "  "
        segments.append(Segment(expander, guide))
        name_style = self._name_style(node)
        segments.append(Segment(ICONS.get(node.kind, "·") + " ", name_style))
        columns = self._columns(width)
        right_width = sum(size + 1 for _, size in columns)
        used = sum(Segment.get_line_length([s]) for s in segments)
        room = max(0, width - used - right_width)
        shown = fit(node.name, room)
        segments.extend(self._highlight(shown, name_style))
        filler = room - cell_len(shown)
        tag = f"  {node.where}" if node.is_gpu else ""
        if tag and filler >= len(tag):
            segments.append(Segment(tag, self._style("where")))
            filler -= len(tag)
        base = self.base_style  # component styles are full styles: only the filler needs the base
        segments.append(Segment(" " * filler, base))
        segments.extend(self._number_segments(node, columns))
        if cursor:
            segments = list(Segment.apply_style(segments, post_style=self._style("cursor")))
        if used + right_width <= width:  # exactly `width` cells by construction
            return Strip(segments, width)
        return Strip(segments).crop_extend(0, width, base)

    def _name_style(self, node: Node) -> Style:
        return self._style(style_name(node))

    def _highlight(self, text: str, style: Style) -> list[Segment]:
        query = self.find_query.lower()
        if not query or query not in text.lower():
            return [Segment(text, style)]
        match = style + self._style("match")
        segments = []
        lower = text.lower()
        start = 0
        while (found := lower.find(query, start)) >= 0:
            if found > start:
                segments.append(Segment(text[start:found], style))
            segments.append(Segment(text[found : found + len(query)], match))
            start = found + len(query)
        if start < len(text):
            segments.append(Segment(text[start:], style))
        return segments

    def _number_segments(self, node: Node, columns: list[tuple[str, int]]) -> list[Segment]:
        number = self._style("number")
        dim = self._style("no-kernel")
        segments = []
        if node.no_kernel:
            for title, size in columns:
                if title == "CPU":
                    segments.append(Segment(" " + pad(fmt.duration(node.cpu_us), size, "right"), number))
            gap = sum(size + 1 for title, size in columns if title != "CPU")
            segments.append(Segment(pad("no kernel", gap, "right"), dim))
            return segments
        values = {
            "CPU": fmt.duration(node.cpu_us),
            "GPU": fmt.duration(node.gpu_us),
            "kernels": fmt.kernel_count(node.kernels, node.gpu_events),
        }
        for title, size in columns:
            segments.append(Segment(" " + pad(values[title], size, "right"), number))
        return segments
