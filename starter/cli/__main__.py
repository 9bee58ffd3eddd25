"""``python -m starter.cli``: the ``trawl`` command (the worker supervisor starts its children so)."""

from starter.cli import console_main

console_main()
