"""Rendering: the summary of a trace and of a run (rich), the export's tables and files, the progress
of a load. The data comes from :mod:`tracetui.insight` and :mod:`tracetui.ranks`."""
