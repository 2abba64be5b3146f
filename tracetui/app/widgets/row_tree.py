"""What the dispatch tree and the comparison's tree share: shown rows as a flat list, the cursor.

The shown rows are a list of keys and a list of depths (one header line above them); expanding
a row splices its shown descendants in, collapsing cuts them out, and nothing recurses. The widget's
``model`` answers ``tops()``, ``children(key)`` and ``has_children(key)``; the widget supplies
:meth:`RowTree._chain_below`, the cursor message and the drawing.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from textual.binding import Binding
from textual.geometry import Size

if TYPE_CHECKING:
    from textual.scroll_view import ScrollView
    from textual.strip import Strip

    _Base = ScrollView
else:  # a plain mixin, like CachedStyles: no part in CSS type matching

    class _Base:
        pass


K = TypeVar("K", bound=Hashable)


def cursor_bindings(prefix: str) -> list[Binding]:
    """The row-cursor keys of a Line-API list (trees and tables), with ids under ``prefix``."""
    return [
        Binding("up", "cursor_up", "Up", show=False, id=f"{prefix}.up"),
        Binding("down", "cursor_down", "Down", show=False, id=f"{prefix}.down"),
        Binding("pageup", "page_up", "Page up", show=False, id=f"{prefix}.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id=f"{prefix}.page_down"),
        Binding("home", "first", "First row", show=False, id=f"{prefix}.first"),
        Binding("end", "last", "Last row", show=False, id=f"{prefix}.last"),
    ]


def row_bindings(prefix: str, expand_tooltip: str = "") -> list[Binding]:
    """The cursor and expand/collapse keys of a tree, with ids under ``prefix``."""
    return [
        *cursor_bindings(prefix),
        Binding("right", "expand", "Expand", show=False, id=f"{prefix}.expand", tooltip=expand_tooltip),
        Binding("left", "collapse", "Collapse / parent", show=False, id=f"{prefix}.collapse"),
        Binding("enter,space", "toggle_row", "Toggle", show=False, id=f"{prefix}.toggle"),
    ]


class RowTree(_Base, Generic[K]):
    """Mixin for a Line-API tree widget over a model of keys."""

    model: Any  # tops(), children(key), has_children(key); None until set

    def _init_rows(self) -> None:
        self._rows: list[K] = []
        self._depths: list[int] = []
        self._expanded: set[K] = set()
        self._cursor = 0
        # Set by place_cursor and kept until the cursor moves: every resize centres the cursor
        # again, so where it ends up depends on the final size only, not on the layout's steps.
        self._recentre = False
        self._strips: dict[tuple[Any, ...], Strip] = {}

    # ---- the widget's part -------------------------------------------------------------------
    def _chain_below(self, key: K) -> Sequence[K]:
        """The keys of the single-child chain below ``key`` (``e``)."""
        raise NotImplementedError

    def _post_cursor(self, key: K | None) -> None:
        raise NotImplementedError

    # ---- state --------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def cursor_key(self) -> K | None:
        return self._rows[self._cursor] if self._rows else None

    def is_expanded(self, key: K) -> bool:
        return key in self._expanded

    def _rebuild_rows(self) -> None:
        rows: list[K] = []
        depths: list[int] = []
        for top in self.model.tops():
            self._collect(top, 0, rows, depths)
        self._rows, self._depths = rows, depths
        self._refresh_all()

    def _collect(self, key: K, depth: int, rows: list[K], depths: list[int]) -> None:
        """Append ``key`` and, for expanded rows, their shown descendants (iteratively)."""
        stack = [(key, depth)]
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

    def _index_of(self, key: K, start: int = 0) -> int | None:
        try:
            return self._rows.index(key, start)
        except ValueError:
            return None

    def _top_of(self, index: int) -> K:
        while index > 0 and self._depths[index] > 0:
            index -= 1
        return self._rows[index]

    # ---- expand / collapse --------------------------------------------------------------------
    def expand_row(self, index: int) -> None:
        """Expand the row at ``index`` (its previously expanded descendants come back too)."""
        if self.model is None:
            return
        key = self._rows[index]
        if key in self._expanded or not self.model.has_children(key):
            return
        self._expanded.add(key)
        rows: list[K] = []
        depths: list[int] = []
        for child in self.model.children(key):
            self._collect(child, self._depths[index] + 1, rows, depths)
        self._rows[index + 1 : index + 1] = rows
        self._depths[index + 1 : index + 1] = depths
        self._refresh_all()

    def collapse_row(self, index: int) -> None:
        key = self._rows[index]
        if key not in self._expanded:
            return
        self._expanded.discard(key)
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
        depths = self._depths
        while end < len(depths) and depths[end] > depth:
            end += 1
        return end

    def _expand_along(self, index: int, keys: Sequence[K]) -> tuple[int, bool]:
        """Expand from the row at ``index`` down ``keys`` (each a child of the one before).
        Returns the last row reached and whether every key was found."""
        for key in keys:
            self.expand_row(index)
            found = self._index_of(key, index + 1)
            if found is None:
                return index, False
            index = found
        return index, True

    # ---- cursor -------------------------------------------------------------------------------
    def _set_cursor(self, index: int, *, center: bool = False, force_message: bool = False) -> None:
        if not self._rows:
            self._cursor = 0
            self.refresh()
            self._post_cursor(None)
            return
        index = max(0, min(index, len(self._rows) - 1))
        moved = index != self._cursor
        self._cursor = index
        self._recentre = False
        self._scroll_to_cursor(center)
        self.refresh()
        if moved or force_message:
            self._post_cursor(self._rows[index])

    def place_cursor(self, index: int) -> None:
        """Put the cursor on row ``index``, centred in the view, and announce it (a new model)."""
        self._set_cursor(index, center=True, force_message=True)
        self._recentre = True
        self.call_after_refresh(self._scroll_to_cursor, True)

    def _scroll_to_cursor(self, center: bool) -> None:
        visible = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_offset.y)
        if center and (self._recentre or not top <= self._cursor < top + visible):
            self.scroll_to(y=max(0, self._cursor - visible // 2), animate=False, immediate=True, force=True)
        elif self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True, force=True)
        elif self._cursor >= top + visible:
            self.scroll_to(y=self._cursor - visible + 1, animate=False, immediate=True, force=True)

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
        """Expand; on an expanded row: go to its first child."""
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
        """Collapse; on a collapsed row: go to its parent."""
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

    def action_toggle_row(self) -> None:
        """Expand or collapse the cursor's row (not Textual's ``toggle``, which flips an attribute)."""
        if not self._rows:
            return
        if self._rows[self._cursor] in self._expanded:
            self.collapse_row(self._cursor)
        else:
            self.expand_row(self._cursor)

    def action_expand_chain(self) -> None:
        """Expand the single-child chain below the cursor (memray's ``e``)."""
        if not self._rows or self.model is None:
            return
        chain = self._chain_below(self._rows[self._cursor])
        if not chain:
            self.expand_row(self._cursor)
            return
        index, _ = self._expand_along(self._cursor, chain)
        self._set_cursor(index, center=True)

    def action_collapse_all(self) -> None:
        """Collapse everything; the cursor goes to the top-level row it was under."""
        if self.model is None or not self._rows:
            return
        top = self._top_of(self._cursor)
        self._expanded.clear()
        self._rebuild_rows()
        self._set_cursor(self._index_of(top) or 0, force_message=True)

    # ---- size / styles ------------------------------------------------------------------------
    def on_resize(self) -> None:
        self._refresh_all()
        self._scroll_to_cursor(center=True)

    def styles_changed(self) -> None:
        self._strips.clear()
