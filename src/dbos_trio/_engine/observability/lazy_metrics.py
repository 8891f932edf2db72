"""The executor's prometheus metrics, if on, without importing prometheus-client when
they are off (the face reads them through here)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dbos_trio._engine.observability.metrics import PrometheusMetrics
    from dbos_trio._engine.state import Executor


def prometheus_metrics(executor: Executor) -> PrometheusMetrics | None:
    """The executor's :class:`~.metrics.PrometheusMetrics`, or None (metrics off)."""
    if executor.metrics is None or "dbos_trio._engine.observability.metrics" not in sys.modules:
        return None
    from dbos_trio._engine.observability.metrics import PrometheusMetrics

    return executor.metrics if isinstance(executor.metrics, PrometheusMetrics) else None
