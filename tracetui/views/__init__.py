"""View models: what the explorer's and the comparison's widgets show, as plain data.

UI-free (no Textual, no rich; polars over the trace model): ``tree`` (the dispatch tree: which
node shows under which, what its row says), ``timeline`` (busy lanes of a time window), ``tables``
(the six tables: frames, columns, where a row leads), ``insight`` (roofline and verdict rows per
event). The widgets in :mod:`tracetui.app.widgets` draw them; :mod:`tracetui.compare.pair_tree`
aligns two trees.
"""
