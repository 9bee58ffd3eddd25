"""Structured logs: one JSON object per line, or a readable rendering on a terminal.

Every process calls :func:`configure_logging` once. Standard-library records (Temporal's own
loggers included) go through the same processors as structlog events, so every line a worker
writes has the same shape.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import socket
import sys
from typing import Any, TextIO

import structlog

LOG_FIELDS = ("ts", "level", "worker", "task_id", "platform", "stage", "canonical_url", "attempt",
              "duration_ms", "outcome", "error_class", "bytes", "event")

MAX_FIELD_CHARS = 2000

# The worker's record of its work: one line per activity attempt (``event: activity``) and one per
# item (``event: item``, logged by the workflow logger). Its failures are warnings and its
# successes info, so a level between the two would keep every retry and drop the successes that
# answer them, and ``trawl logs triage`` would call recovered failures still failing.
RECORD_LOGGERS = ("trawl.activity", "temporalio.workflow")


def default_worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _cap_strings(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    # Values may come from the web (titles, URLs); the JSON renderer escapes control characters,
    # and the cap keeps one hostile value from making a line unreadable.
    for key, value in event.items():
        if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
            event[key] = value[:MAX_FIELD_CHARS] + "..."
    return event


def _required_fields(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    # Every line has every field, null where it does not apply, so readers need no guessing.
    for key in LOG_FIELDS:
        event.setdefault(key, None)
    return event


def _flatten_extra(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    record = event.get("_record")
    extra = getattr(record, "trawl", None) if record is not None else None
    if isinstance(extra, dict):
        for key, value in extra.items():
            event.setdefault(key, value)
    return event


class _StaticFields:
    """Adds fixed fields to every line; contextvars would not reach the activity threads."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def __call__(self, _logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        for key, value in self.fields.items():
            event.setdefault(key, value)
        return event


def quiet_stream(stream: TextIO) -> TextIO:
    """Point ``stream`` at /dev/null (its file descriptor when it has one): its reader went away.

    What is still buffered, and whatever is written later, is dropped without an error.
    """
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
    return stream


class _LogHandler(logging.StreamHandler):
    """A stream handler that goes quiet when the reader of its stream goes away.

    ``trawl worker | head`` closes the pipe under the worker: the standard handler would print a
    "--- Logging error ---" traceback on stderr for every line after that. This one sends the
    rest to /dev/null, as a tool killed by SIGPIPE would have stopped writing.
    """

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        if isinstance(sys.exc_info()[1], BrokenPipeError):
            self.stream = quiet_stream(self.stream)
            return
        super().handleError(record)


def stdout_for_logs() -> TextIO:
    """A stream to what stdout is now, for log lines only; the descriptor 1 goes to stderr.

    Native code writes to descriptor 1 directly: the Temporal core's console logger (of a runtime
    whose logs are not forwarded to Python) would put its coloured lines between the JSON lines
    of a worker's stdout. After this, the JSON stream holds trawl's lines only and anything else
    written to descriptor 1 lands on stderr.
    """
    sys.stdout.flush()
    own = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return os.fdopen(own, "w", buffering=1, encoding="utf-8", errors="backslashreplace")


# Set when this process's stream carries plain lines for a person (see configure_logging's ``plain``).
_plain_stream = False
RECORD_FILE_BYTES = 10 * 1024 * 1024  # the data directory's log file is rotated at this size, 3 kept


def plain_stream() -> bool:
    """This process writes plain lines for a person on its log stream (a one-shot command)."""
    return _plain_stream


def _plain(_logger: Any, _name: str, event: dict[str, Any]) -> str:
    """``trawl: <message> (key=value, ...)``: a line for a person, whatever the stream is attached to."""
    message = event.pop("event", "")
    level = event.pop("level", "")
    trace = event.pop("exception", None)
    for key in ("ts", "worker", "logger"):
        event.pop(key, None)
    details = ", ".join(f"{key}={value}" for key, value in event.items() if value is not None and value != "")
    head = "trawl: " + ("" if level in ("warning", "info", "") else f"{level}: ")
    return head + str(message) + (f" ({details})" if details else "") + (f"\n{trace}" if trace else "")


class _NotTheRecord(logging.Filter):
    """Keeps the worker's record of its work (:data:`RECORD_LOGGERS`) off a person's stream."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith(RECORD_LOGGERS)


class _RecordFile(logging.handlers.RotatingFileHandler):
    """The data directory's log file: opened at the first line, and only when the directory is
    there (a command that only reads creates no file); a line it cannot write is dropped."""

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None and not os.path.isdir(os.path.dirname(self.baseFilename)):
            return
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass


def configure_logging(
    *, stream: TextIO | None = None, json: bool | None = None, level: str = "INFO", worker: str | None = None,
    plain: bool = False, record_file: os.PathLike[str] | str | None = None,
) -> None:
    """Configure structlog and the standard library for this process.

    Args:
        stream: where lines go (stdout by default).
        json: force JSON (True) or console (False) rendering; by default JSON unless a TTY.
        level: the minimum level; on a JSON stream the worker's record (:data:`RECORD_LOGGERS`)
            is kept whole, successes included, as long as the level keeps warnings.
        worker: the ``worker`` field on every line.
        plain: the stream is a person's (a one-shot command's stderr, on a terminal or not): plain
            ``trawl: ...`` lines at ``level``, without the worker's record of its work.
        record_file: with ``plain``, the JSON lines (INFO and up, the record whole) go to this
            file instead (the data directory's ``trawl.log``; rotated at 10 MiB, 3 kept).
    """
    global _plain_stream
    _plain_stream = plain
    stream = stream or sys.stdout
    if plain:
        json = False
    elif json is None:
        json = not stream.isatty()
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
        _flatten_extra,
        _cap_strings,
    ]
    if worker:
        shared.insert(0, _StaticFields(worker=worker))
    renderer: Any = (_plain if plain else structlog.processors.JSONRenderer() if json
                     else structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            *([_required_fields] if json else []),
            renderer,
        ],
    )
    handler = _LogHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    if plain:
        handler.setLevel(level.upper())
        handler.addFilter(_NotTheRecord())
        if record_file is not None:
            recorded = _RecordFile(record_file, maxBytes=RECORD_FILE_BYTES, backupCount=3, delay=True,
                                   encoding="utf-8")
            recorded.setFormatter(structlog.stdlib.ProcessorFormatter(
                foreign_pre_chain=shared,
                processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                            structlog.processors.format_exc_info, _required_fields,
                            structlog.processors.JSONRenderer()]))
            recorded.setLevel(logging.INFO)
            root.addHandler(recorded)
            root.setLevel(min(root.level, logging.INFO))
    # A JSON stream is read by programs (triage): it carries the record whole whenever it carries
    # the record's warnings. On a terminal the level alone decides what a person sees.
    whole_record = (json or (plain and record_file is not None)) and root.level <= logging.WARNING
    for name in RECORD_LOGGERS:
        logging.getLogger(name).setLevel(min(root.level, logging.INFO) if whole_record else logging.NOTSET)
    # Alembic says at INFO what it loads and each migration it checks, at every start of a command
    # that opens the catalog; its warnings stay.
    for noisy in ("httpx", "httpcore", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # The activity interceptor already writes one line per failed attempt, with its class.
    logging.getLogger("temporalio.activity").setLevel(logging.ERROR)



def get_logger(name: str = "trawl") -> structlog.stdlib.BoundLogger:
    return structlog.stdlib.get_logger(name)
