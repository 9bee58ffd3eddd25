"""The ``trawl`` command: argument parsing, logging set-up and dispatch.

Every command and flag is declared in :mod:`trawl.cli.args`, which imports nothing heavy, so
``--version`` and ``--help`` answer at once; a command's module is imported only when it runs.
The commands live in one module per group:

- :mod:`trawl.cli.crawl`: ``crawl``, ``crawls`` (:mod:`trawl.cli.choices`: what ``-f`` and
  ``--limit-rate`` choose; :mod:`trawl.cli.cookies`: ``--cookies`` and ``--cookies-from-browser``);
  :mod:`trawl.cli.crawl_status`: ``crawl-status``
- :mod:`trawl.cli.catalog`: ``items``, ``fsck``
- :mod:`trawl.cli.resolve`: ``resolve`` (and the URLs of a source or a listing)
- :mod:`trawl.cli.steering`: ``status``, ``pause``, ``resume``, ``cancel``
- :mod:`trawl.cli.serve`: ``server``, ``worker``, ``up``, ``api``, ``setup``, ``demo``, ``simulator``
- :mod:`trawl.cli.logs`: ``logs triage``
- :mod:`trawl.cli.watch`: ``watch add|list|pause|resume|trigger|remove``
- :mod:`trawl.cli.export`: ``export`` (named files; ``crawl --export``)
- :mod:`trawl.cli.config`: ``config`` (the settings in effect and the paths)
- :mod:`trawl.cli.shell`: ``completion``, ``manpage`` (generated from the parser)

What they print comes from :mod:`trawl.cli.output` (lines, the live status line; sizes, speeds
and ETAs from :mod:`trawl.formatting`, which the web page shares) and
:mod:`trawl.starter.views` (the JSON forms, shared with the HTTP API); :mod:`trawl.cli.progress`
measures work being awaited, :mod:`trawl.cli.common` holds the Temporal session. A person's mistake is a
:class:`~trawl.cli.output.CommandError`: one line, no traceback, exit status 2 for usage and
configuration errors.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from trawl.cli.exits import EXIT_INTERRUPTED, EXIT_USAGE

if TYPE_CHECKING:
    import argparse

# Names other modules and tests take from ``trawl.cli``, loaded when first asked for (PEP 562):
# ``trawl --version`` and ``--help`` import none of them, and a command the warm process runs
# (trawl.cli.quick) imports neither these nor argparse and asyncio before it hands itself over.
_LAZY = {
    "build_parser": "trawl.cli.args",
    "crawl_urls": "trawl.cli.crawl", "read_urls": "trawl.cli.crawl", "session": "trawl.cli.common",
    "EXIT_FAILED_ITEMS": "trawl.cli.exits", "crawl_progress_line": "trawl.cli.output", "progress_bar": "trawl.cli.output",
    "result_line": "trawl.cli.output", "stats_line": "trawl.cli.output",
}

__all__ = ["EXIT_USAGE", "console_main", "main", "yt_dlp_aliases", *_LAZY]

# The commands that only read: they never start a Temporal server nor create a catalog or any
# other file (trawl.cli.common.session, open_catalog); in the wrong directory they say where
# they looked. The one list, so the command modules need not repeat it.
READ_ONLY_COMMANDS = frozenset({"status", "crawls", "crawl-status", "items", "watch list", "logs triage"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def full_command(args: argparse.Namespace) -> str:
    """``watch list``, ``logs triage``, ``status``: the command with its subcommand."""
    sub = getattr(args, "watch_command", None) or getattr(args, "logs_command", None)
    return f"{args.command} {sub}" if sub else args.command


def command_function(args: argparse.Namespace) -> Any:
    """The function that runs the parsed command (``"crawl:cmd_crawl"``), its module imported now."""
    module, name = args.func.split(":")
    return getattr(importlib.import_module(f"trawl.cli.{module}"), name)


def yt_dlp_aliases(argv: list[str]) -> list[str]:
    """yt-dlp's habits: ``trawl -j URL`` (dump-JSON) is ``trawl resolve --json URL``, and a URL
    where the command goes is ``trawl crawl``: ``trawl URL``, ``trawl -o '%(title)s.%(ext)s' URL``
    (the crawl's options before the URL apply; ``--log-level`` stays the command's)."""
    if argv and argv[0] in ("-j", "--dump-json"):
        return ["resolve", "--json", *argv[1:]]
    if argv and not argv[0].startswith("-"):  # the usual case, told without the parser: a command or a URL
        return ["crawl", *argv] if "://" in argv[0] else argv
    from trawl.cli.args import command_parser

    commands, valued = _command_words(command_parser())
    index = 0
    while index < len(argv):  # the first word that is neither an option nor an option's value
        word = argv[index]
        if word == "--" or not word.startswith("-") or word == "-":
            break
        index += 2 if word in valued else 1
    if index >= len(argv):
        return argv
    first = argv[index + 1] if argv[index] == "--" and index + 1 < len(argv) else argv[index]
    if first in commands or "://" not in first:
        return argv
    top, rest, position = [], [], 0
    while position < index:
        word = argv[position]
        if word == "--log-level":
            top += argv[position:position + 2]
            position += 2
            continue
        (top if word.startswith("--log-level=") else rest).append(word)
        position += 1
    return [*top, "crawl", *rest, *argv[index:]]


def _command_words(parser: argparse.ArgumentParser) -> tuple[set[str], set[str]]:
    """The parser's command names, and the options of the top level and of ``crawl`` that take a
    value (so that a value, ``-o '%(title)s.%(ext)s'``, is not taken for the command)."""
    import argparse

    sub = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    valued = {option for part in (parser, sub.choices["crawl"]) for action in part._actions
              if action.nargs != 0 for option in action.option_strings}
    return set(sub.choices), valued


def main(argv: list[str] | None = None) -> int:
    from trawl.cli.args import command_parser

    args = command_parser().parse_args(yt_dlp_aliases(sys.argv[1:] if argv is None else argv))
    import asyncio  # after the parse: --version and --help need none of it
    if getattr(args, "needs_nothing", False):  # completion, manpage: from the parser alone, like --help
        return command_function(args)(args)
    name = getattr(args, "command_name", args.command)
    # What every command needs, once its arguments parse (never for --version or --help); the
    # rest loads with the command's own module.
    from trawl.cli.output import AroundStatusLine, is_terminal
    from trawl.logs import configure_logging, default_worker_name, quiet_stream, stdout_for_logs
    from trawl.settings import ConfigError, load_settings

    if full_command(args) in READ_ONLY_COMMANDS:
        from trawl.cli.common import only_reading

        only_reading()
    try:
        settings = load_settings()
    except ConfigError as err:
        print(f"trawl: {err}", file=sys.stderr)
        return EXIT_USAGE
    _tell_of_an_old_archive(settings)
    long_running = getattr(args, "long_running", False)
    if long_running:
        from trawl.cli.common import in_foreground

        in_foreground()  # a server it starts stops with it, not in the background
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
    # A one-shot command's stderr is a person's, whatever it is attached to (a terminal, a pipe, a
    # cron mail): plain lines there, the JSON record in the data directory's trawl.log, unless
    # --log-json (logs.json_stderr) asks for the JSON on stderr.
    plain = not long_running and not (args.log_json or settings.logs.json_stderr)
    configure_logging(stream=log_stream,
                      level=args.log_level or ("INFO" if long_running else getattr(args, "log_level_default",
                                                                                   None) or "WARNING"),
                      worker=settings.worker.identity or default_worker_name(),
                      json=True if not long_running and not plain else None,
                      plain=plain, record_file=settings.data_dir / "trawl.log" if plain else None)
    if args.command == "crawl":
        _find_server_early(args, settings)
    try:
        if supervising:
            from trawl.http_client import make_client
            from trawl.worker.supervisor import supervise  # signal handlers need the main thread

            make_client(settings.net).close()  # a refused proxy is said once here, not by every child
            return supervise(settings, processes)
        func = command_function(args)
        if not asyncio.iscoroutinefunction(func):
            return func(args, settings)
        from trawl.worker.runtime import install_core_logging

        install_core_logging()  # before any client connects: the core's lines become log records
        return asyncio.run(func(args, settings))
    except BrokenPipeError:
        # The reader of our output went away (`trawl logs triage | head`): stop writing, quietly,
        # with the status a shell shows for a tool that SIGPIPE stopped.
        quiet_stream(sys.stdout)
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except asyncio.CancelledError:
        common = sys.modules.get("trawl.cli.common")
        if common is None or not common.stopped_by_signal():
            raise
        return 0  # SIGINT or SIGTERM while it started: what had started is torn down, as asked
    except Exception as err:  # noqa: BLE001 - what is not a person's mistake is raised again
        said = _mistake(err, settings)
        if said is None:
            raise
        print(f"trawl {name}: {said[0]}", file=sys.stderr)
        return said[1]
    finally:
        embedded = sys.modules.get("trawl.starter.embedded")
        if embedded is not None:
            embedded.drop_early()  # begun for a session the command never reached (a mistake in its input)


def _find_server_early(args: argparse.Namespace, settings: Any) -> None:
    """Begin finding or starting the Temporal server ``trawl crawl`` will use, and the background
    worker it will ask for, while the command imports the rest of what it needs: the first
    command with nothing running waits for the server to boot and a worker to start, and these
    then run beside its own imports instead of after them. The session takes the search over
    (trawl.cli.common); a crawl whose settings its options change (--cookies) asks for the
    worker again with them."""
    from trawl.starter.embedded import background_worker_settings, start_early

    if not (args.urls or args.file or args.source):
        return  # refused for want of input before it needs a server
    linger = settings.temporal.idle_timeout.total_seconds()  # trawl.cli.common's, for a one-shot command
    wants_worker = not (args.no_worker or args.cookies or args.cookies_from_browser)
    # An attached crawl that starts the server does its own items first (trawl.cli.common.session);
    # a detached one leaves them to the background worker, which starts with the server.
    start_early(settings, linger=linger,
                worker_settings=background_worker_settings(settings) if wants_worker and linger > 0 else None,
                own_worker_first=wants_worker and not args.detach)


def _tell_of_an_old_archive(settings: Any) -> None:
    """One line when ./data holds an archive of an earlier trawl (which kept it in the working
    directory) and the settings use the default data directory instead."""
    from trawl.paths import old_archive_here, user_config_file

    old = None if "data_dir" in settings.model_fields_set else old_archive_here(settings.data_dir)
    if old is not None:
        print(f"trawl: {old} holds an archive of an earlier trawl, which kept it in the working directory; the "
              f"archive is now {settings.data_dir}: keep using {old} with TRAWL_DATA_DIR={old} (or data_dir = "
              f"\"{old}\" in {user_config_file()}), or move it there (mv {old} {settings.data_dir}, while that does "
              "not exist)", file=sys.stderr)


def _loaded(module: str, *names: str) -> tuple[type, ...]:
    """Classes of ``module`` if this command imported it, else none: an exception cannot come from
    a module the command never loaded, and checking for one must not load it."""
    loaded = sys.modules.get(module)
    return tuple(getattr(loaded, name) for name in names) if loaded is not None else ()


def _mistake(err: Exception, settings: Any) -> tuple[str, int] | None:
    """A person's mistake or a condition they can fix, as ``(one line, exit status)``; None for a bug."""
    if isinstance(err, _loaded("trawl.cli.output", "CommandError")):
        return err.message, err.code  # type: ignore[attr-defined]
    if isinstance(err, (*_loaded("trawl.errors", "UnsupportedUrl", "BlockedAddress"),
                        *_loaded("trawl.starter.embedded", "ServerError"),
                        *_loaded("trawl.starter.binding", "ApiConfigError"))):
        return str(err), EXIT_USAGE
    if isinstance(err, _loaded("trawl.worker.sandbox", "CodeChanged")):
        return str(err), 1  # not a usage error: a worker supervisor starts it again, on the new files
    if isinstance(err, _loaded("trawl.errors", "StorageError")):  # a catalog that cannot be opened at start-up
        return str(err).strip().splitlines()[0], EXIT_USAGE
    if isinstance(err, _loaded("temporalio.service", "RPCError")):
        return f"Temporal: {err.message}", EXIT_USAGE  # type: ignore[attr-defined]
    common = sys.modules.get("trawl.cli.common")
    if common is not None and common.connect_failed(err):
        return common.unreachable_error(settings, err).message, EXIT_USAGE
    return None


def console_main() -> None:
    """Entry point of the installed ``trawl`` command.

    Leaves with ``os._exit`` once output is flushed: the Temporal SDK's native threads can still
    call into Python while the interpreter finalizes, which aborts the process
    ("PyGILState_Release ... must be current") after all work is done and the exit code is known.
    Everything trawl writes (catalog transactions, blob renames) is complete by this point. For
    the same reason an unexpected exception (a bug) prints its traceback here and exits 1, rather
    than leaving the interpreter to finalize under those threads.
    """
    argv = yt_dlp_aliases(sys.argv[1:])
    from trawl.cli.quick import delegate

    code = delegate(argv)  # a warm process of the background server runs it, when there is one
    os._exit(run_command(argv) if code is None else code)


def run_command(argv: list[str]) -> int:
    """Run the command ``argv`` as the installed ``trawl`` does and return its exit status, with
    output flushed (see :func:`console_main`, and :mod:`trawl.cli.zygote`, whose forked children
    run commands so)."""
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse: --help, a usage error
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else EXIT_USAGE)
        if not isinstance(exit_.code, (int, type(None))):
            print(exit_.code, file=sys.stderr)
    except BrokenPipeError:  # raised outside main's commands (argparse's help, a usage error)
        from trawl.logs import quiet_stream

        quiet_stream(sys.stdout)
        code = 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    except Exception:  # noqa: BLE001 - a bug: say where, then leave like every other exit
        import traceback

        traceback.print_exc()
        code = 1
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # what was still buffered for a reader that went away
            from trawl.logs import quiet_stream

            quiet_stream(stream)
            code = code or 128 + signal.SIGPIPE
    return code


if __name__ == "__main__":
    console_main()
