"""The engine's observability hooks: what tracing and metrics are told, and nothing else.

Invariant: with tracing and metrics off (the default) the engine pays one attribute read
and one ``is None`` test per workflow and per durable call, and imports neither
OpenTelemetry nor prometheus-client. The engine only knows the two protocols below;
the implementations (:mod:`.tracing`, :mod:`.metrics`) are imported by launch, lazily,
when ``Config`` turns them on.

The trace context of the code that starts or enqueues a workflow is persisted with the
row, as the official SDKs do, under the reserved attribute ``"dbos.otelContext"`` of
``workflow_status.attributes`` (W3C ``traceparent``/``tracestate`` only: baggage is
unbounded and often carries user data). A row dequeued or recovered by any process
starts its workflow span under that context, so the caller's trace continues there.
"""

from __future__ import annotations

import json
import sys
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol

OTEL_CARRIER_ATTRIBUTE: Final = "dbos.otelContext"
"""The reserved key of ``workflow_status.attributes`` that holds the trace carrier."""


class CarrierSource(Protocol):
    def carrier(self) -> dict[str, str] | None:
        """The W3C carrier of the current span's context, or None without a valid one."""


class Tracing(CarrierSource, Protocol):
    """Spans for workflows and durable calls (implemented in :mod:`.tracing`)."""

    def workflow_span(
        self,
        name: str,
        workflow_id: str,
        queue_name: str | None,
        carrier: dict[str, Any] | None,
    ) -> AbstractContextManager[None]:
        """The span of one workflow execution, current for the block: under ``carrier``
        if it holds a valid context, else under the caller's current span. OK when the
        block returns, ERROR (with the exception as its description) when it raises."""

    def operation_span(self, name: str, workflow_id: str) -> AbstractContextManager[None]:
        """The span of one step or durable call of a workflow, current for the block."""

    def attempt_failed(self, attempt: int, error: BaseException) -> None:
        """A step attempt (1-based) failed and will be retried: an event on its span."""


class Metrics(Protocol):
    """Counters and histograms (implemented in :mod:`.metrics`). Every method is cheap
    and synchronous, and never raises."""

    def workflow_started(self, name: str) -> None: ...

    def workflow_ended(self, name: str, status: str) -> None:
        """An execution of workflow ``name`` recorded ``status`` (SUCCESS or ERROR)."""

    def workflow_failed(self, name: str, status: str, error_type: str) -> None:
        """An execution of workflow ``name`` recorded a failure: ``status`` ERROR (its body
        raised an ``error_type``) or MAX_RECOVERY_ATTEMPTS_EXCEEDED (``error_type`` empty)."""

    def step_ended(self, name: str, seconds: float, failed: bool) -> None: ...

    def step_retried(self, name: str) -> None: ...

    def dispatched(self, queue_name: str, waited_seconds: float, recovered: bool) -> None:
        """A row of ``queue_name`` was claimed and started, ``waited_seconds`` after it was
        created; ``recovered``: it had been dispatched before (recovery)."""

    def dead_lettered(self, name: str) -> None: ...

    def recovered_at_launch(self, count: int) -> None: ...


def carrier_attributes(tracing: CarrierSource | None) -> str | None:
    """The ``attributes`` JSON of a new row started here and now: the current trace
    carrier, or None (tracing off, or no valid span)."""
    if tracing is None:
        return None
    carrier = tracing.carrier()
    if not carrier:
        return None
    return json.dumps({OTEL_CARRIER_ATTRIBUTE: carrier})


def ambient_carrier_attributes() -> str | None:
    """Like :func:`carrier_attributes`, for a :class:`~dbos_trio.Client` (which has no
    tracing of its own): the current span's carrier if the application uses
    OpenTelemetry (already imported), so a workflow a client enqueues from a traced
    request continues that request's trace in whichever executor runs it."""
    if "opentelemetry.trace" not in sys.modules:
        return None
    from dbos_trio._engine.observability.tracing import OtelTracing

    return carrier_attributes(OtelTracing.ambient())


def carrier_of(attributes: Any) -> dict[str, Any] | None:
    """The carrier in a row's ``attributes`` (a dict, or JSON text), if well formed.

    Attributes are user-writable: any other shape is ignored, never an error, so a bad
    value can never stop a workflow from running."""
    if isinstance(attributes, str):
        try:
            attributes = json.loads(attributes)
        except ValueError:
            return None
    if not isinstance(attributes, dict):
        return None
    carrier = attributes.get(OTEL_CARRIER_ATTRIBUTE)
    return carrier if isinstance(carrier, dict) else None
