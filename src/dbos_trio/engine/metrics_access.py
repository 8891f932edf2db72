"""The executor's prometheus metrics, if on, without importing prometheus-client when
they are off (the face reads them through here)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .executor import Executor
    from .metrics import PrometheusMetrics


def prometheus_metrics(executor: Executor) -> PrometheusMetrics | None:
    """The executor's :class:`~.metrics.PrometheusMetrics`, or None (metrics off)."""
    if executor.metrics is None or "dbos_trio.engine.metrics" not in sys.modules:
        return None
    from .metrics import PrometheusMetrics

    return executor.metrics if isinstance(executor.metrics, PrometheusMetrics) else None
