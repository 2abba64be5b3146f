"""Reports over the trace model: ``tracetui summary`` and ``tracetui export``."""
