"""Structured logs: one JSON object per line, or a readable rendering on a terminal.

Every process calls :func:`configure_logging` once. Standard-library records (Temporal's own
loggers included) go through the same processors as structlog events, so every line a worker
writes has the same shape.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from typing import Any, TextIO

import structlog

LOG_FIELDS = ("ts", "level", "worker", "task_id", "platform", "stage", "canonical_url", "attempt",
              "duration_ms", "outcome", "error_class", "bytes", "event")

MAX_FIELD_CHARS = 2000


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


def configure_logging(
    *, stream: TextIO | None = None, json: bool | None = None, level: str = "INFO", worker: str | None = None
) -> None:
    """Configure structlog and the standard library for this process.

    Args:
        stream: where lines go (stdout by default).
        json: force JSON (True) or console (False) rendering; by default JSON unless a TTY.
        level: the minimum level.
        worker: the ``worker`` field on every line.
    """
    stream = stream or sys.stdout
    if json is None:
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
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
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
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # The activity interceptor already writes one line per failed attempt, with its class.
    logging.getLogger("temporalio.activity").setLevel(logging.ERROR)



def get_logger(name: str = "trawl") -> structlog.stdlib.BoundLogger:
    return structlog.stdlib.get_logger(name)
