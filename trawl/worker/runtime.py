"""The Temporal runtime's logging and the worker identity mark: what clients share with workers.

Its own module, light to import, so that a client (the CLI, the API) does not load the worker
and every activity for these few names.
"""

from __future__ import annotations

import logging

from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

CORE_LOGGER = "temporalio.core"
# Appended to the identity of a worker that lives only as long as one command.
ONE_SHOT_MARK = "/one-shot"
# Appended to the identity of the worker an embedded server runs in the background for one-shot
# commands (trawl.starter.embedded): not a deployment's worker, and replaced when settings differ.
BACKGROUND_MARK = "/background"


def core_logging() -> LoggingConfig:
    """The Temporal core's (Rust) log lines forwarded to the Python logger ``temporalio.core``.

    Left to itself the core writes coloured text straight to descriptor 1; forwarded, its lines go
    through trawl's handler like every other record (JSON on a log stream that is not a terminal).
    """
    return LoggingConfig(
        filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=logging.getLogger(CORE_LOGGER), append_target_to_name=False),
    )


def install_core_logging() -> None:
    """Make the default runtime (every client connected without a runtime of its own) forward its logs.

    Call before the first client connects: a runtime's logging is fixed when it is created.
    """
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=core_logging())), error_if_already_set=False)
