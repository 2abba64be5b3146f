"""The comparison's two trees side by side: a Line-API widget over a :class:`PairTree`.

One row per aligned pair: A's node on the left, B's on the right (blank where a side has no
match), the marker between them. Rows are a flat list of pair ids and depths, text is built only
for the rows in view, and nothing recurses. One cursor moves both sides; Tab picks the side the
details and ``e`` follow.
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
from tracetui.app.widgets.dispatch_tree import ICONS, MAX_INDENT, ROW_CLASSES, row_css, style_name
from tracetui.app.widgets.line_style import CachedStyles
from tracetui.app.widgets.row_tree import RowTree, row_bindings
from tracetui.compare.pair_tree import CHANGED, ONLY_A, ONLY_B, Pair, PairTree
from tracetui.views.tree import Node

GPU_WIDTH = 9
KERNELS_WIDTH = 7
GUTTER = 3  # "│~│" between the halves


class DiffTree(RowTree[int], CachedStyles, ScrollView, can_focus=True):
    """Two dispatch trees aligned row by row."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *row_bindings("diff_tree", expand_tooltip="both sides"),
        Binding(
            "e",
            "expand_chain",
            "Open chain",
            id="diff_tree.expand_chain",
            tooltip="expand the single-child chain below the cursor (judged on the active side)",
        ),
        Binding(
            "tab",
            "switch_side",
            "Switch side",
            id="diff_tree.switch_side",
            tooltip="A or B: the side the details and e follow",
        ),
        Binding("c", "collapse_all", "Collapse all", show=False, id="diff_tree.collapse_all"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *ROW_CLASSES,
        "diff-tree--only-a",
        "diff-tree--only-b",
        "diff-tree--changed",
        "diff-tree--marker-a",
        "diff-tree--marker-b",
        "diff-tree--marker-changed",
        "diff-tree--divider",
        "diff-tree--side",
        "diff-tree--cursor-other",
    }

    DEFAULT_CSS = (
        row_css("DiffTree")
        + """
    DiffTree > .diff-tree--only-a { background: $error 20%; }
    DiffTree > .diff-tree--only-b { background: $success 20%; }
    DiffTree > .diff-tree--changed { color: $text-warning; text-style: bold; }
    DiffTree > .diff-tree--marker-a { color: $text-error; text-style: bold; }
    DiffTree > .diff-tree--marker-b { color: $text-success; text-style: bold; }
    DiffTree > .diff-tree--marker-changed { color: $text-warning; text-style: bold; }
    DiffTree > .diff-tree--divider { color: $text-disabled; }
    DiffTree > .diff-tree--side { text-style: bold reverse; color: $text-accent; background: $panel; }
    DiffTree > .diff-tree--cursor-other { background: $block-cursor-blurred-background; }
    """
    )

    class CursorMoved(Message):
        """The cursor is on a new pair (or the active side changed)."""

        def __init__(self, tree: DiffTree, pid: int | None) -> None:
            super().__init__()
            self.tree = tree
            self.pid = pid

    side: var[str] = var("a", init=False)
    """The active side, ``a`` or ``b``: the details and ``e`` follow it."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.model: PairTree | None = None
        self.titles = ("A", "B")
        self._init_rows()

    # ---- RowTree ------------------------------------------------------------------------------
    def _chain_below(self, key: int) -> list[int]:
        """Judged on the active side."""
        assert self.model is not None
        return self.model.chain_below(key, self.side)

    def _post_cursor(self, key: int | None) -> None:
        self.post_message(self.CursorMoved(self, key))

    # ---- state ------------------------------------------------------------------------------
    def set_model(self, model: PairTree, path: list[int], titles: tuple[str, str]) -> None:
        """Show ``model`` with ``path`` expanded and the cursor at its end."""
        self.model = model
        self.titles = titles
        self._expanded = set(path[:-1])
        self._rebuild_rows()
        index = self._index_of(path[-1]) if path else None
        self.place_cursor(index or 0)

    # ---- expand / collapse ----------------------------------------------------------------------
    def reveal(self, path: list[int]) -> bool:
        """Expand every pair along ``path`` (top first) and put the cursor on its last one."""
        start = self._index_of(path[0]) if path else None
        if start is None:
            return False
        index, complete = self._expand_along(start, path[1:])
        if not complete:
            return False
        self._set_cursor(index, center=True, force_message=True)
        return True

    # ---- side -----------------------------------------------------------------------------------
    def action_switch_side(self) -> None:
        """Make the other side (A or B) the active one."""
        self.side = "b" if self.side == "a" else "a"

    def watch_side(self) -> None:
        self._refresh_all()
        self.post_message(self.CursorMoved(self, self.cursor_key))  # the details follow the side

    # ---- mouse ------------------------------------------------------------------------------------
    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        index = round(self.scroll_offset.y) + offset.y - 1
        if not 0 <= index < len(self._rows):
            return
        left, _ = self._halves(self.scrollable_content_region.width)
        self.side = "a" if offset.x < left else "b" if offset.x >= left + GUTTER else self.side
        if index == self._cursor:
            self.action_toggle_row()
        self._set_cursor(index, force_message=True)

    # ---- rendering -------------------------------------------------------------------------------
    @staticmethod
    def _halves(width: int) -> tuple[int, int]:
        left = max(0, (width - GUTTER) // 2)
        return left, max(0, width - GUTTER - left)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            return self._header(width)
        index = round(self.scroll_offset.y) + y - 1
        if not 0 <= index < len(self._rows) or self.model is None:
            return Strip.blank(width, self.base_style)
        pid = self._rows[index]
        cursor = index == self._cursor
        cache_key = (pid, pid in self._expanded, cursor, self.side, width)
        strip = self._strips.get(cache_key)
        if strip is None:
            strip = self._row_strip(pid, width, cursor)
            if len(self._strips) > 4 * max(64, self.size.height):
                self._strips.clear()
            self._strips[cache_key] = strip
        return strip

    def _style(self, name: str) -> Style:
        return self.component(f"dispatch-tree--{name}")

    def _columns(self, width: int) -> list[tuple[str, int]]:
        return [("GPU", GPU_WIDTH), ("kernels", KERNELS_WIDTH)] if width >= 44 else [("GPU", GPU_WIDTH)]

    def _header(self, width: int) -> Strip:
        header = self.base_style + self._style("header")
        segments: list[Segment] = []
        left, right = self._halves(width)
        for side, size, title in (("a", left, self.titles[0]), ("b", right, self.titles[1])):
            columns = self._columns(size)
            numbers = "".join(" " + pad(name, cells, "right") for name, cells in columns)
            letter = f" {side.upper()} "
            style = self.base_style + self.component("diff-tree--side") if side == self.side else header
            room = max(0, size - len(letter) - len(numbers) - 1)
            segments.append(Segment(letter, style))
            segments.append(Segment(" " + pad(title, room) + numbers, header))
            if side == "a":
                segments.append(Segment("│ │", header))
        return Strip(segments).crop_extend(0, width, self.base_style)

    def _row_strip(self, pid: int, width: int, cursor: bool) -> Strip:
        assert self.model is not None
        pair = self.model.pair(pid)
        left, right = self._halves(width)
        halves = []
        for side, size in (("a", left), ("b", right)):
            segments = self._half(pair, side, size)
            if cursor:
                post = (
                    self._style("cursor") if side == self.side else self.component("diff-tree--cursor-other")
                )
                segments = list(Segment.apply_style(segments, post_style=post))
            halves.append(segments)
        divider = self.component("diff-tree--divider")
        marker_style = {
            ONLY_A: "diff-tree--marker-a",
            ONLY_B: "diff-tree--marker-b",
            CHANGED: "diff-tree--marker-changed",
        }.get(pair.status)
        marker = self.component(marker_style) if marker_style else self.base_style
        gutter = [Segment("│", divider), Segment(pair.marker, marker), Segment("│", divider)]
        return Strip([*halves[0], *gutter, *halves[1]]).crop_extend(0, width, self.base_style)

    def _half(self, pair: Pair, side: str, width: int) -> list[Segment]:
        """One side of a row, exactly ``width`` cells (blank where the side has no node)."""
        assert self.model is not None
        key = pair.a if side == "a" else pair.b
        base = self.base_style
        if key is None or width <= 0:
            return [Segment(" " * max(0, width), base)]
        model = self.model.a if side == "a" else self.model.b
        node = model.node(key)
        depth = pair.depth_a if side == "a" else pair.depth_b
        guide = self._style("guide")
        segments: list[Segment] = []
        if depth > MAX_INDENT:
            segments.append(Segment(f"⋯{depth:>5} ", guide))
        segments.append(Segment("│ " * min(depth, MAX_INDENT), guide))
        if pair.opened:
            expander = "▾ "
        elif pair.id in self._expanded and model.has_children(key):
            expander = "▼ "
        elif model.has_children(key):
            expander = "▶ "
        else:
            expander = "  "
        segments.append(Segment(expander, guide))
        name_style = self._style(style_name(node))
        segments.append(Segment(ICONS.get(node.kind, "·") + " ", name_style))
        columns = self._columns(width)
        right = sum(size + 1 for _, size in columns)
        used = sum(cell_len(segment.text) for segment in segments)
        room = max(0, width - used - right)
        shown = fit(node.name, room)
        segments.append(Segment(shown, name_style))
        segments.append(Segment(" " * (room - cell_len(shown)), base))
        segments += self._numbers(pair, node, columns)
        tint = {ONLY_A: "diff-tree--only-a", ONLY_B: "diff-tree--only-b"}.get(pair.status)
        if tint is not None:
            segments = list(
                Segment.apply_style(segments, post_style=Style(bgcolor=self.component(tint).bgcolor))
            )
        return list(Segment.adjust_line_length(segments, width, style=base))

    def _numbers(self, pair: Pair, node: Node, columns: list[tuple[str, int]]) -> list[Segment]:
        number = self._style("number")
        if node.no_kernel:
            gap = sum(size + 1 for _, size in columns)
            return [Segment(pad("no kernel", gap, "right"), self._style("no-kernel"))]
        changed = self._changed(pair)
        values = {
            "GPU": fmt.duration(node.gpu_us),
            "kernels": fmt.kernel_count(node.kernels, node.gpu_events),
        }
        segments = []
        for title, size in columns:
            style = self.component("diff-tree--changed") if title in changed else number
            segments.append(Segment(" " + pad(values[title], size, "right"), style))
        return segments

    def _changed(self, pair: Pair) -> frozenset[str]:
        if pair.status != CHANGED or self.model is None:
            return frozenset()
        return self.model.changed(pair.id)
