"""The Textual explorer (``tracetui open``) and comparison (``tracetui diff`` on a terminal): reads
the trace model, never the JSON.

``launch`` (the entry points), ``app`` / ``diff_app`` (the Apps and their
loading workers), ``messages`` (what workers post back), ``palette`` (the name search),
``collector`` (idle-time garbage collection), ``screens/`` and ``widgets/``. The data they draw is
built UI-free in :mod:`tracetui.views` (view models) and :mod:`tracetui.compare` (the pair tree);
numbers are written by :mod:`tracetui.formatting`.
"""
