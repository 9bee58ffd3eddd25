"""The ``trawl`` command's exit statuses (no imports: the entry point reads them before any other)."""

EXIT_FAILED_ITEMS = 1
EXIT_USAGE = 2  # usage and configuration errors
EXIT_INTERRUPTED = 130
