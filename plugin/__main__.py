"""``python -m plugin``: the adaptalloc command line (the same as the console script)."""

from plugin.cli import main

main()
