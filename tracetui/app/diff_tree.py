"""The comparison's two trees side by side: a Line-API widget over a :class:`DiffModel`.

One row per aligned pair: A's node on the left, B's on the right (blank where a side has no
match), the marker between them. Rows are a flat list of pair ids and depths, text is built only
for the rows in view, and nothing recurses. One cursor moves both sides; Tab picks the side the
details and ``e`` follow.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tracetui.app.diff_model import CHANGED, ONLY_A, ONLY_B, DiffModel, Pair
from tracetui.app.dispatch_tree import ICONS, MAX_INDENT, ROW_CLASSES, row_css, style_name
from tracetui.app.formatting import fit, fmt_count, fmt_us, pad
from tracetui.app.line_style import CachedStyles
from tracetui.app.tree_model import Node

GPU_WIDTH = 9
KERNELS_WIDTH = 7
GUTTER = 3  # "│~│" between the halves


class DiffTree(CachedStyles, ScrollView, can_focus=True):
    """Two dispatch trees aligned row by row."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Up", show=False, id="diff_tree.up"),
        Binding("down", "cursor_down", "Down", show=False, id="diff_tree.down"),
        Binding("pageup", "page_up", "Page up", show=False, id="diff_tree.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="diff_tree.page_down"),
        Binding("home", "first", "First row", show=False, id="diff_tree.first"),
        Binding("end", "last", "Last row", show=False, id="diff_tree.last"),
        Binding("right", "expand", "Expand", show=False, id="diff_tree.expand", tooltip="both sides"),
        Binding("left", "collapse", "Collapse / parent", show=False, id="diff_tree.collapse"),
        Binding("enter,space", "toggle", "Toggle", show=False, id="diff_tree.toggle"),
        Binding(
            "e",
            "expand_chain",
            "Expand chain",
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

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.model: DiffModel | None = None
        self.side = "a"
        self.titles = ("A", "B")
        self._rows: list[int] = []
        self._depths: list[int] = []
        self._expanded: set[int] = set()
        self._cursor = 0
        self._strips: dict[tuple[Any, ...], Strip] = {}

    # ---- state ------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def cursor_pid(self) -> int | None:
        return self._rows[self._cursor] if self._rows else None

    def is_expanded(self, pid: int) -> bool:
        return pid in self._expanded

    def set_model(self, model: DiffModel, path: list[int], titles: tuple[str, str]) -> None:
        """Show ``model`` with ``path`` expanded and the cursor at its end."""
        self.model = model
        self.titles = titles
        self._expanded = set(path[:-1])
        self._rebuild_rows()
        index = self._index_of(path[-1]) if path else None
        self._set_cursor(index or 0, center=True, force_message=True)
        self.call_after_refresh(self._scroll_to_cursor, True)

    def _rebuild_rows(self) -> None:
        assert self.model is not None
        rows: list[int] = []
        depths: list[int] = []
        for top in self.model.tops():
            self._collect(top, 0, rows, depths)
        self._rows, self._depths = rows, depths
        self._refresh_all()

    def _collect(self, pid: int, depth: int, rows: list[int], depths: list[int]) -> None:
        """Append ``pid`` and, when expanded, its shown descendants (iteratively)."""
        assert self.model is not None
        stack = [(pid, depth)]
        while stack:
            current, level = stack.pop()
            rows.append(current)
            depths.append(level)
            if current in self._expanded:
                stack.extend((child, level + 1) for child in reversed(self.model.children(current)))

    def _refresh_all(self) -> None:
        self._strips.clear()
        self.virtual_size = Size(self.scrollable_content_region.width, len(self._rows) + 1)
        self.refresh()

    def _index_of(self, pid: int, start: int = 0) -> int | None:
        try:
            return self._rows.index(pid, start)
        except ValueError:
            return None

    # ---- expand / collapse ----------------------------------------------------------------------
    def expand_row(self, index: int) -> None:
        """Expand the pair at ``index`` on both sides."""
        assert self.model is not None
        pid = self._rows[index]
        if pid in self._expanded or not self.model.has_children(pid):
            return
        self._expanded.add(pid)
        rows: list[int] = []
        depths: list[int] = []
        for child in self.model.children(pid):
            self._collect(child, self._depths[index] + 1, rows, depths)
        self._rows[index + 1 : index + 1] = rows
        self._depths[index + 1 : index + 1] = depths
        self._refresh_all()

    def collapse_row(self, index: int) -> None:
        pid = self._rows[index]
        if pid not in self._expanded:
            return
        self._expanded.discard(pid)
        end = self._subtree_end(index)
        del self._rows[index + 1 : end]
        del self._depths[index + 1 : end]
        if index < self._cursor < end:
            self._cursor = index
        elif self._cursor >= end:
            self._cursor -= end - index - 1
        self._refresh_all()

    def _subtree_end(self, index: int) -> int:
        depth = self._depths[index]
        end = index + 1
        while end < len(self._depths) and self._depths[end] > depth:
            end += 1
        return end

    def reveal(self, path: list[int]) -> bool:
        """Expand every pair along ``path`` (top first) and put the cursor on its last one."""
        index = self._index_of(path[0]) if path else None
        if index is None:
            return False
        for pid in path[1:]:
            self.expand_row(index)
            found = self._index_of(pid, index + 1)
            if found is None:
                return False
            index = found
        self._set_cursor(index, center=True, force_message=True)
        return True

    # ---- cursor ---------------------------------------------------------------------------------
    def _set_cursor(self, index: int, *, center: bool = False, force_message: bool = False) -> None:
        if not self._rows:
            self._cursor = 0
            self.refresh()
            self.post_message(self.CursorMoved(self, None))
            return
        index = max(0, min(index, len(self._rows) - 1))
        moved = index != self._cursor
        self._cursor = index
        self._scroll_to_cursor(center)
        self.refresh()
        if moved or force_message:
            self.post_message(self.CursorMoved(self, self._rows[index]))

    def _scroll_to_cursor(self, center: bool) -> None:
        visible = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_offset.y)
        if center and not (top <= self._cursor < top + visible):
            self.scroll_to(y=max(0, self._cursor - visible // 2), animate=False, immediate=True, force=True)
        elif self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True, force=True)
        elif self._cursor >= top + visible:
            self.scroll_to(y=self._cursor - visible + 1, animate=False, immediate=True, force=True)

    def select_row(self, index: int) -> None:
        """Put the cursor on the shown row ``index``."""
        self._set_cursor(index, center=True)

    def action_cursor_up(self) -> None:
        self._set_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self._set_cursor(self._cursor + 1)

    def action_page_up(self) -> None:
        self._set_cursor(self._cursor - max(1, self.scrollable_content_region.height - 2))

    def action_page_down(self) -> None:
        self._set_cursor(self._cursor + max(1, self.scrollable_content_region.height - 2))

    def action_first(self) -> None:
        self._set_cursor(0)

    def action_last(self) -> None:
        self._set_cursor(len(self._rows) - 1)

    def action_expand(self) -> None:
        """Expand both sides; on an expanded pair: go to its first child."""
        if not self._rows or self.model is None:
            return
        if self._rows[self._cursor] in self._expanded:
            if (
                self._cursor + 1 < len(self._rows)
                and self._depths[self._cursor + 1] > self._depths[self._cursor]
            ):
                self._set_cursor(self._cursor + 1)
        else:
            self.expand_row(self._cursor)

    def action_collapse(self) -> None:
        """Collapse both sides; on a collapsed pair: go to its parent."""
        if not self._rows:
            return
        if self._rows[self._cursor] in self._expanded:
            self.collapse_row(self._cursor)
            return
        depth = self._depths[self._cursor]
        index = self._cursor - 1
        while index >= 0 and self._depths[index] >= depth:
            index -= 1
        if index >= 0:
            self._set_cursor(index)

    def action_toggle(self) -> None:
        if not self._rows:
            return
        if self._rows[self._cursor] in self._expanded:
            self.collapse_row(self._cursor)
        else:
            self.expand_row(self._cursor)

    def action_expand_chain(self) -> None:
        """Expand the single-child chain below the cursor (judged on the active side)."""
        if not self._rows or self.model is None:
            return
        chain = self.model.chain_below(self._rows[self._cursor], self.side)
        if not chain:
            self.expand_row(self._cursor)
            return
        index = self._cursor
        for pid in chain:
            self.expand_row(index)
            found = self._index_of(pid, index + 1)
            if found is None:
                break
            index = found
        self._set_cursor(index, center=True)

    def action_switch_side(self) -> None:
        """Make the other side (A or B) the active one."""
        self.side = "b" if self.side == "a" else "a"
        self._refresh_all()
        self.post_message(self.CursorMoved(self, self.cursor_pid))

    def action_collapse_all(self) -> None:
        if self.model is None or not self._rows:
            return
        index = self._cursor
        while index > 0 and self._depths[index] > 0:
            index -= 1
        top = self._rows[index]
        self._expanded.clear()
        self._rebuild_rows()
        self._set_cursor(self._index_of(top) or 0, force_message=True)

    # ---- mouse ------------------------------------------------------------------------------------
    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return
        index = round(self.scroll_offset.y) + offset.y - 1
        if not 0 <= index < len(self._rows):
            return
        left, _ = self._halves(self.scrollable_content_region.width)
        side = "a" if offset.x < left else "b" if offset.x >= left + GUTTER else self.side
        if side != self.side:
            self.side = side
            self._refresh_all()
        if index == self._cursor:
            self.action_toggle()
        self._set_cursor(index, force_message=True)

    # ---- size / styles ------------------------------------------------------------------------
    def on_resize(self) -> None:
        self._refresh_all()
        self._scroll_to_cursor(center=True)

    def styles_changed(self) -> None:
        self._strips.clear()

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
        values = {"GPU": fmt_us(node.gpu_us), "kernels": fmt_count(node.kernels)}
        segments = []
        for title, size in columns:
            style = self.component("diff-tree--changed") if title in changed else number
            segments.append(Segment(" " + pad(values[title], size, "right"), style))
        return segments

    def _changed(self, pair: Pair) -> frozenset[str]:
        if pair.status != CHANGED or self.model is None:
            return frozenset()
        return self.model.changed(pair.id)

    # ---- plain data (tests, debugging) ------------------------------------------------------------
    def rows_as_data(self) -> list[tuple[str, str, str]]:
        """Every shown row as ``(marker, A's label, B's label)``."""
        assert self.model is not None
        return self.model.rows(self._rows)

    def cursor_as_data(self) -> tuple[str, str, str] | None:
        pid = self.cursor_pid
        return None if pid is None or self.model is None else self.model.rows([pid])[0]
