"""The Textual explorer (``tracetui open``): reads the trace model, never the JSON.

Modules: ``command`` (the click command), ``app`` (the App and its loading worker), screens
(``explorer_screen``, ``tables_screen``, ``help_screen``, ``loading_screen``, ``error_screen``),
Line-API widgets (``dispatch_tree``, ``table_view``, ``timeline``), and the pure parts they draw
(``tree_model``, ``tables``, ``timeline_model``, ``node_details``, ``formatting``).
"""
