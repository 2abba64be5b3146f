"""The widgets: Line-API views that format only what scrolls into sight (``dispatch_tree``,
``diff_tree`` over the shared ``row_tree``, ``table_view``, ``timeline``), the header, the
expectations panel, the details pane's text (``details``) and what they share (``cells``: text fit
to terminal cells; ``line_style``: cached component styles)."""
