"""``python -m trawl.cli``: the ``trawl`` command (the worker supervisor starts its children so)."""

from trawl.cli import console_main

console_main()
