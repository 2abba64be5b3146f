"""``python -m tracetui`` runs the command line."""

from tracetui.cli import main

main()
