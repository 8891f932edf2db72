"""Contextual logging: which workflow, step, executor, version and trace a record is from.

:class:`DBOSContextFilter` stamps every record it sees with the ambient workflow context
(contextvars, so it is right in any task or worker thread of a workflow); attach it to a
*handler* to stamp everything that handler emits — the library's records (loggers
``dbos_trio.*``) and the application's alike. :class:`JSONFormatter` writes one JSON
object per line. :func:`configure_logging` sets both up on the ``dbos_trio`` logger.

Invariant: the filter never drops a record and never raises; outside a workflow the
fields are None. The trace id is read only if OpenTelemetry is already imported (tracing
on), so the filter never imports it.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import IO, Any, Final

from dbos_trio._engine.context import current_step, current_workflow

LIBRARY_LOGGER: Final = "dbos_trio"
APP_LOGGER: Final = "dbos_trio.app"
FIELDS: Final = ("workflow_id", "step_id", "executor_id", "app_version", "trace_id")

logger = logging.getLogger(APP_LOGGER)
"""A logger for application code (``dbos_trio.logger``): a child of ``dbos_trio``, so it
reaches the handler :func:`configure_logging` installs, with its context fields."""


def _trace_id() -> str | None:
    if "opentelemetry.trace" not in sys.modules:
        return None
    from dbos_trio._engine.observability.tracing import current_trace_id

    return current_trace_id()


class DBOSContextFilter(logging.Filter):
    """Adds ``workflow_id``, ``step_id``, ``executor_id``, ``app_version`` and
    ``trace_id`` to each record (None outside a workflow, or without a span); also
    ``operationUUID`` and ``traceId``, the official SDK's names. Keeps every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Set the context fields on ``record`` and keep it (always True). Never raises:
        a trace id that cannot be read is None."""
        ctx = current_workflow.get()
        step = current_step.get()
        workflow_id = None if ctx is None else ctx.workflow_id
        record.workflow_id = workflow_id
        step_id = None if step is None else step.step_id
        record.step_id = step_id
        record.executor_id = None if ctx is None else ctx.executor.executor_id
        record.app_version = None if ctx is None else ctx.executor.app_version
        try:
            trace_id = _trace_id()
        except Exception:
            trace_id = None
        record.trace_id = trace_id
        record.operationUUID = workflow_id
        record.traceId = trace_id
        # The text format's suffix: the workflow and step, only inside a workflow (a
        # launch or shutdown line read "[workflow=None step=None]").
        record.dbos_context = (
            "" if workflow_id is None else f" [workflow={workflow_id} step={step_id}]"
        )
        return True


class JSONFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (ISO 8601, UTC), ``level``, ``logger``,
    ``message``, the context fields that are set, and ``exception`` (the formatted
    traceback) when there is one. Values JSON cannot hold are written as ``str()``."""

    def __init__(self) -> None:
        super().__init__()

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """The record's time as ISO 8601 in UTC, to the millisecond (``datefmt`` unused)."""
        from datetime import UTC, datetime

        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON (see the class)."""
        entry: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                entry[field] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


TEXT_FORMAT: Final = "%(asctime)s [%(levelname)8s] (%(name)s) %(message)s%(dbos_context)s"


def configure_logging(
    level: int | str = logging.INFO,
    *,
    json_format: bool = False,
    stream: IO[str] | None = None,
) -> logging.Handler:
    """Log the library (``dbos_trio.*``) and :data:`logger` to ``stream`` (stderr by
    default) at ``level``, every record carrying its context (:class:`DBOSContextFilter`),
    as text or, with ``json_format``, one JSON object per line. Returns the handler.

    Calling it again replaces the handler it installed before (never adds a second one).
    The ``dbos_trio`` logger stops propagating to the root logger, as the official SDK's
    ``dbos`` logger does, so records are not printed twice. Cancellation does not apply
    (synchronous); a bad ``level`` raises ``ValueError`` from :mod:`logging`.
    """
    library = logging.getLogger(LIBRARY_LOGGER)
    for existing in list(library.handlers):
        if getattr(existing, "_dbos_trio_handler", False):
            library.removeHandler(existing)
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.addFilter(DBOSContextFilter())
    handler.setFormatter(JSONFormatter() if json_format else logging.Formatter(TEXT_FORMAT))
    handler._dbos_trio_handler = True  # type: ignore[attr-defined]
    library.addHandler(handler)
    library.setLevel(level)
    library.propagate = False
    return handler


def default_logging(level: str | None) -> None:
    """Install :func:`configure_logging` at ``level`` when nothing configured logging yet
    (no handler on the root logger or on the library's): what ``Config.log_level`` does at
    launch, so a program that never touched logging sees the launch line and its failures,
    as the official SDK's users do. An application's own configuration always wins; None
    leaves logging alone."""
    if level is None:
        return
    if logging.getLogger().handlers or logging.getLogger(LIBRARY_LOGGER).handlers:
        return
    configure_logging(level)
