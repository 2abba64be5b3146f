"""The CLI's commands, one module per command: the click command and its options, calling into the
packages that own the work (:mod:`tracetui.cli` imports each lazily).

A command that loads a trace starts :mod:`tracetui.trace.prefetch` first and imports its work after
it (the scan runs on another core while polars, rich or textual are imported): that import, in the
command's body, is this package's one lazy seam.
"""
