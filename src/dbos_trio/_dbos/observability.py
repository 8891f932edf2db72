"""Reading the executor's metrics in process (for an HTTP ``/metrics`` endpoint, a test,
or a health check), without knowing prometheus-client's registry API.

Invariant: these read only; with metrics off they raise :class:`DBOSException` saying how
to turn them on, rather than returning an empty page that looks healthy.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.observability.lazy_metrics import prometheus_metrics
from dbos_trio.errors import DBOSException


class Observability(DBOSBase):
    def _metrics(self, operation: str) -> Any:
        executor = self._require_executor(operation)
        metrics = prometheus_metrics(executor)
        if metrics is None:
            raise DBOSException(
                f"{operation}: metrics are off; launch with Config(enable_metrics=True)"
            )
        return metrics

    def metrics_text(self) -> str:
        """The executor's metrics in Prometheus' text exposition format (what a
        ``/metrics`` endpoint serves). Launched only (``DBOSNotLaunchedError`` before);
        raises :class:`DBOSException` when metrics are off. Synchronous."""
        text: str = self._metrics("metrics_text").exposition()
        return text

    @property
    def metrics_registry(self) -> Any:
        """The ``prometheus_client.CollectorRegistry`` the executor's metrics are in."""
        return self._metrics("metrics_registry").registry

    async def refresh_metrics(self) -> None:
        """Read the figures that live in the database (queue depths) now, instead of at
        the next poll. Database errors propagate; cancellation interrupts the read."""
        await self._metrics("refresh_metrics").refresh_queue_depths()
