"""The explorer's screens: ``explorer`` (tree, details, timeline, find), ``diff`` (two trees side by
side), ``tables``, ``help``, ``loading``, ``error``. A screen composes widgets, starts workers and
routes their messages; what it shows comes from :mod:`tracetui.views`."""
