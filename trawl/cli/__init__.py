"""The ``trawl`` command: argument parsing, logging set-up and dispatch.

The commands live in one module per group, each with a ``register(subparsers)``:

- :mod:`trawl.cli.crawl`: ``crawl``, ``resolve``, ``crawls``, ``crawl-status``, ``items``, ``fsck``
- :mod:`trawl.cli.steering`: ``status``, ``pause``, ``resume``, ``cancel``
- :mod:`trawl.cli.serve`: ``server``, ``worker``, ``up``, ``api``, ``setup``, ``demo``, ``simulator``
- :mod:`trawl.cli.logs`: ``logs triage``
- :mod:`trawl.cli.watch`: ``watch add|list|pause|resume|trigger|remove``
- :mod:`trawl.cli.export`: ``export`` (named files; ``crawl``'s yt-dlp-style flags)

What they print comes from :mod:`trawl.cli.output` (lines, speed, the live status line) and
:mod:`trawl.starter.views` (the JSON forms, shared with the HTTP API); :mod:`trawl.cli.progress`
measures work being awaited, :mod:`trawl.cli.common` holds the Temporal session. A person's mistake is a
:class:`~trawl.cli.output.CommandError`: one line, no traceback, exit status 2 for usage and
configuration errors.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import traceback
from typing import Any

from temporalio.service import RPCError

from trawl.starter.binding import ApiConfigError
from trawl.cli import crawl, export, logs, serve, steering, watch
from trawl.cli.common import connect_failed, only_reading, session, stopped_by_signal, unreachable_error
from trawl.cli.crawl import crawl_urls, read_urls
from trawl.cli.output import (
    EXIT_FAILED_ITEMS,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    AroundStatusLine,
    CommandError,
    crawl_progress_line,
    format_eta,
    format_speed,
    is_terminal,
    progress_bar,
    result_line,
    stats_line,
)
from trawl.starter.embedded import ServerError
from trawl.errors import BlockedAddress, StorageError, UnsupportedUrl
from trawl.logs import configure_logging, default_worker_name, quiet_stream, stdout_for_logs
from trawl.settings import ConfigError, load_settings
from trawl.worker.runtime import install_core_logging

__all__ = [
    "EXIT_FAILED_ITEMS", "EXIT_USAGE", "build_parser", "console_main", "crawl_progress_line", "crawl_urls",
    "format_eta", "format_speed", "main", "progress_bar", "read_urls", "result_line", "session", "stats_line",
]


# The commands that only read: they never start a Temporal server nor create a catalog or any
# other file (trawl.cli.common.session, open_catalog); in the wrong directory they say where
# they looked. The one list, so the command modules need not repeat it.
READ_ONLY_COMMANDS = frozenset({"status", "crawls", "crawl-status", "items", "watch list", "logs triage"})


def full_command(args: argparse.Namespace) -> str:
    """``watch list``, ``logs triage``, ``status``: the command with its subcommand."""
    sub = getattr(args, "watch_command", None) or getattr(args, "logs_command", None)
    return f"{args.command} {sub}" if sub else args.command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trawl", description="A durable media crawler on Temporal.")
    parser.add_argument("--log-level", default=None, help="log level (default WARNING for one-shot commands)")
    parser.add_argument("--version", action="version", version=f"trawl {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (crawl, steering, serve, logs, watch, export):
        group.register(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trawl")
    except PackageNotFoundError:
        return "unknown"


def yt_dlp_aliases(argv: list[str]) -> list[str]:
    """``trawl -j URL`` (yt-dlp's dump-JSON) is ``trawl resolve --json URL``."""
    if argv and argv[0] in ("-j", "--dump-json"):
        return ["resolve", "--json", *argv[1:]]
    return argv


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(yt_dlp_aliases(sys.argv[1:] if argv is None else argv))
    name = getattr(args, "command_name", args.command)
    only_reading(full_command(args) in READ_ONLY_COMMANDS)
    try:
        settings = load_settings()
    except ConfigError as err:
        print(f"trawl: {err}", file=sys.stderr)
        return EXIT_USAGE
    long_running = getattr(args, "long_running", False)
    processes = getattr(args, "processes", None) or settings.worker.processes
    supervising = args.command == "worker" and not args.supervised and processes > 1
    # Long-running commands log on stdout; one with a Temporal client of its own keeps that stream
    # for trawl's lines (the core of a runtime it does not configure writes to descriptor 1). A
    # supervisor's children inherit its stdout, so it keeps the real one.
    log_stream: Any = sys.stderr
    if long_running:
        log_stream = sys.stdout if supervising else stdout_for_logs()
    elif is_terminal(sys.stderr):
        log_stream = AroundStatusLine(sys.stderr)  # `trawl crawl` keeps a live line there
    configure_logging(stream=log_stream,
                      level=args.log_level or ("INFO" if long_running else getattr(args, "log_level_default",
                                                                                   None) or "WARNING"),
                      worker=settings.worker.identity or default_worker_name())
    try:
        if supervising:
            from trawl.http import make_client
            from trawl.worker.supervisor import supervise  # signal handlers need the main thread

            make_client(settings.net).close()  # a refused proxy is said once here, not by every child
            return supervise(settings, processes)
        if not asyncio.iscoroutinefunction(args.func):
            return args.func(args, settings)
        install_core_logging()  # before any client connects: the core's lines become log records
        return asyncio.run(args.func(args, settings))
    except BrokenPipeError:
        # The reader of our output went away (`trawl logs triage | head`): stop writing, quietly,
        # with the status a shell shows for a tool that SIGPIPE stopped.
        quiet_stream(sys.stdout)
        return 128 + signal.SIGPIPE
    except CommandError as err:
        print(f"trawl {name}: {err.message}", file=sys.stderr)
        return err.code
    except (ServerError, UnsupportedUrl, ApiConfigError, BlockedAddress) as err:
        print(f"trawl {name}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except StorageError as err:  # a catalog that cannot be opened at start-up (`trawl up`'s worker)
        print(f"trawl {name}: {str(err).strip().splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except asyncio.CancelledError:
        if not stopped_by_signal():
            raise
        return 0  # SIGINT or SIGTERM while it started: what had started is torn down, as asked
    except RPCError as err:
        print(f"trawl {name}: Temporal: {err.message}", file=sys.stderr)
        return EXIT_USAGE
    except RuntimeError as err:
        if not connect_failed(err):
            raise
        print(f"trawl {name}: {unreachable_error(settings, err).message}", file=sys.stderr)
        return EXIT_USAGE


def console_main() -> None:
    """Entry point of the installed ``trawl`` command.

    Leaves with ``os._exit`` once output is flushed: the Temporal SDK's native threads can still
    call into Python while the interpreter finalizes, which aborts the process
    ("PyGILState_Release ... must be current") after all work is done and the exit code is known.
    Everything trawl writes (catalog transactions, blob renames) is complete by this point. For
    the same reason an unexpected exception (a bug) prints its traceback here and exits 1, rather
    than leaving the interpreter to finalize under those threads.
    """
    try:
        code = main()
    except SystemExit as exit_:  # argparse: --help, a usage error
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else EXIT_USAGE)
        if not isinstance(exit_.code, (int, type(None))):
            print(exit_.code, file=sys.stderr)
    except BrokenPipeError:  # raised outside main's commands (argparse's help, a usage error)
        quiet_stream(sys.stdout)
        code = 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    except Exception:  # noqa: BLE001 - a bug: say where, then leave like every other exit
        traceback.print_exc()
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # what was still buffered for a reader that went away
            quiet_stream(stream)
            code = code or 128 + signal.SIGPIPE
    os._exit(code)


if __name__ == "__main__":
    console_main()
