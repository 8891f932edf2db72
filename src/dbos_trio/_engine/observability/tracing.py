"""OpenTelemetry spans for workflows and durable calls (the optional ``otel`` extra).

Imported only when ``Config(enable_otel=True)``: this is the one engine module that
imports ``opentelemetry``. Spans follow the official SDKs (reference §1.21): the tracer
is ``"dbos-tracer"``; one span per workflow execution and per step or durable call,
named after the function (or the operation, e.g. ``DBOS.getStatus``), nested under the
caller's current span; attributes in the "legacy" names the TypeScript SDK uses, or the
"semconv" ones; status OK, or ERROR with the exception as its description; a failed
step attempt that will be retried adds the event ``"Step attempt N failed"``.

Trio keeps OpenTelemetry's context (a contextvar) per task, and copies it into tasks a
body spawns and into the worker threads of ``def`` steps, so the user's own spans nest
under ours without any help. Attach and detach happen in the same task, around the
block: a cancelled workflow still ends its span (ERROR: ``Cancelled``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, TracerProvider

    from dbos_trio._identity import Identity

TRACER_NAME: Final = "dbos-tracer"

# (legacy, semconv) names of each attribute (reference §1.21).
ATTRIBUTE_NAMES: Final = {
    "workflow_id": ("operationUUID", "dbos.operation.workflow_id"),
    "type": ("operationType", "dbos.operation.type"),
    "application_id": ("applicationID", "dbos.application.id"),
    "application_version": ("applicationVersion", "dbos.application.version"),
    "executor_id": ("executorID", "dbos.executor.id"),
    "queue_name": ("queueName", "dbos.queue.name"),
    "user": ("authenticatedUser", "dbos.user.name"),
    "roles": ("authenticatedUserRoles", "dbos.user.roles"),
    "assumed_role": ("authenticatedUserAssumedRole", "dbos.user.assumed_role"),
}
ATTRIBUTE_FORMATS: Final = ("legacy", "semconv")

# Only the W3C trace context travels in a persisted carrier, never baggage.
_PROPAGATOR = TraceContextTextMapPropagator()


class _Carrier:
    def carrier(self) -> dict[str, str] | None:
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return carrier or None


class OtelTracing:
    """:class:`~dbos_trio._engine.observability.hooks.Tracing` on an OpenTelemetry tracer provider
    (the global one unless ``Config.otel_tracer_provider`` names one)."""

    def __init__(
        self, identity: Identity, provider: TracerProvider | None, attribute_format: str
    ) -> None:
        if attribute_format not in ATTRIBUTE_FORMATS:
            raise ValueError(f"unknown attribute format {attribute_format!r}")
        self._tracer = trace.get_tracer(TRACER_NAME, tracer_provider=provider)
        self._index = ATTRIBUTE_FORMATS.index(attribute_format)
        self._identity = {
            "application_id": identity.application_id or None,  # unset ("") is left out
            "application_version": identity.app_version,
            "executor_id": identity.executor_id,
        }

    def _attributes(self, values: dict[str, Any]) -> dict[str, Any]:
        values = {**self._identity, **values}
        return {
            ATTRIBUTE_NAMES[key][self._index]: value
            for key, value in values.items()
            if value is not None
        }

    @staticmethod
    def ambient() -> _Carrier:
        """Only the carrier half, for a client that has no tracer of its own."""
        return _Carrier()

    def carrier(self) -> dict[str, str] | None:
        return _Carrier().carrier()

    @contextmanager
    def workflow_span(
        self,
        name: str,
        workflow_id: str,
        queue_name: str | None,
        carrier: dict[str, Any] | None,
    ) -> Iterator[None]:
        attributes = self._attributes(
            {"workflow_id": workflow_id, "type": "workflow", "queue_name": queue_name}
        )
        with self._span(name, attributes, _parent(carrier)):
            yield

    @contextmanager
    def operation_span(self, name: str, workflow_id: str) -> Iterator[None]:
        attributes = self._attributes({"workflow_id": workflow_id, "type": "step"})
        with self._span(name, attributes, None):
            yield

    @contextmanager
    def _span(
        self, name: str, attributes: dict[str, Any], parent: Context | None
    ) -> Iterator[None]:
        with self._tracer.start_as_current_span(
            name,
            context=parent,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield
            except BaseException as error:
                _fail(span, error)
                raise
            span.set_status(Status(StatusCode.OK))

    def attempt_failed(self, attempt: int, error: BaseException) -> None:
        trace.get_current_span().add_event(
            f"Step attempt {attempt} failed",
            {"exception.type": type(error).__name__, "exception.message": str(error)},
        )


def _fail(span: Span, error: BaseException) -> None:
    description = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    span.set_status(Status(StatusCode.ERROR, description))


def _parent(carrier: dict[str, Any] | None) -> Context | None:
    """The context a persisted carrier names, or None (use the current one).

    Never raises: the carrier sits in user-writable attributes, and a malformed one must
    not stop a workflow (the propagator raises on non-string values)."""
    if carrier is None:
        return None
    try:
        extracted = _PROPAGATOR.extract(carrier)
    except Exception:
        return None
    if not trace.get_current_span(extracted).get_span_context().is_valid:
        return None
    return extracted


def current_trace_id() -> str | None:
    """The current span's trace id (32 hex digits), or None without a valid span."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None
