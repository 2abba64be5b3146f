"""Styles for the Line-API widgets, cached between style updates.

``Widget.rich_style`` walks every ancestor on each access (~0.2 ms); a widget that draws 50
lines a frame asks for it hundreds of times. The cache is dropped whenever Textual updates the
widget's styles (theme, focus, CSS), as are the strips drawn with the old style.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.style import Style

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:  # a plain mixin: a Widget base would take part in CSS type matching and reset `overflow`
    _Base = object


class CachedStyles(_Base):
    """Mixin for Line-API widgets: ``base_style`` and ``component(name)`` computed once per update."""

    _cached_base: Style | None = None
    _cached_components: dict[str, Style] | None = None

    @property
    def base_style(self) -> Style:
        if self._cached_base is None:
            self._cached_base = self.rich_style
        return self._cached_base

    def component(self, name: str) -> Style:
        """The full (background-blended) rich style of a component class."""
        if self._cached_components is None:
            self._cached_components = {}
        style = self._cached_components.get(name)
        if style is None:
            style = self._cached_components[name] = self.get_component_rich_style(name)
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cached_base = None
        self._cached_components = None
        self.styles_changed()

    def styles_changed(self) -> None:
        """Drop anything drawn with the old styles (override)."""
