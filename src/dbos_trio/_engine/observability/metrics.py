"""Prometheus metrics of one executor (the optional ``metrics`` extra: prometheus-client).

Imported only when ``Config(enable_metrics=True)``: this is the one engine module that
imports ``prometheus_client``. The instruments live in one ``CollectorRegistry``: a fresh
one per launch (it keeps its figures after shutdown), or the configured one, which they
are registered in at launch and unregistered from at shutdown, so relaunching into the
same registry never collides (its counts start again from zero). Counting is in memory
(cheap, synchronous, never raises); the figures that live in the database are read by
the executor's own task (:func:`poll`): the queue depths every ``interval``; the retry
and outage counters of the statement loop are read when the registry is collected.

Everything a scrape needs is in :meth:`PrometheusMetrics.exposition` (the text format),
so an HTTP endpoint (the dashboard's ``/metrics``) is a one-liner on top.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import trio
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from dbos_trio._sysdb.errors import is_control

if TYPE_CHECKING:
    from dbos_trio._sysdb.protocol import SystemDatabase

logger = logging.getLogger("dbos_trio.metrics")

# Step and queue-wait buckets (seconds): sub-millisecond checkpoints to minute-long waits.
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
QUEUE_DEPTH_INTERVAL = 5.0


class _DatabaseCounters(Collector):
    """The statement loop's retry and outage counts, read at collection time."""

    def __init__(self, sysdb: SystemDatabase) -> None:
        self._sysdb = sysdb

    def collect(self) -> Iterator[Metric]:
        retries, outages = self._sysdb.retry_counts()
        yield CounterMetricFamily(
            "dbos_database_retries",
            "System-database statements retried after a transient error",
            value=retries,
        )
        yield CounterMetricFamily(
            "dbos_database_outages",
            "Times the system database became unreachable (one per outage)",
            value=outages,
        )


# The most dbos_queue_depth series one executor reports (see refresh_queue_depths).
MAX_DEPTH_SERIES = 200
OTHER_QUEUES = "(other)"


def bounded_depths(
    depths: dict[tuple[str, str], int], most: int
) -> dict[tuple[str, str], int]:
    """``depths`` if it has at most ``most`` entries; else the ``most - 3`` deepest, and the
    rest summed per status under :data:`OTHER_QUEUES` (at most three statuses)."""
    if len(depths) <= most:
        return depths
    ranked = sorted(depths.items(), key=lambda item: (-item[1], item[0]))
    kept = dict(ranked[: most - 3])
    for (_, status), count in ranked[most - 3 :]:
        key = (OTHER_QUEUES, status)
        kept[key] = kept.get(key, 0) + count
    return kept


class PrometheusMetrics:
    """:class:`~dbos_trio._engine.observability.hooks.Metrics` on prometheus-client instruments."""

    def __init__(self, sysdb: SystemDatabase, registry: CollectorRegistry | None) -> None:
        self.registry = CollectorRegistry() if registry is None else registry
        self._shared = registry is not None
        self._sysdb = sysdb
        self._collectors: list[Any] = []

        def add(collector: Any) -> Any:
            self.registry.register(collector)
            self._collectors.append(collector)
            return collector

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return add(Counter(name, doc, labels, registry=None))  # type: ignore[no-any-return]

        self.started = counter(
            "dbos_workflows_started", "Workflow executions started", ("workflow",)
        )
        self.completed = counter(
            "dbos_workflows_completed", "Workflow executions that recorded SUCCESS", ("workflow",)
        )
        self.failed = counter(
            "dbos_workflows_failed", "Workflow executions that recorded ERROR", ("workflow",)
        )
        # Bounded like the workflow names: error types are the application's classes.
        self.failures_by_type = counter(
            "dbos_workflow_failures",
            "Workflow failures recorded, by workflow, status (ERROR or "
            "MAX_RECOVERY_ATTEMPTS_EXCEEDED) and error type (empty when parked)",
            ("workflow", "status", "error_type"),
        )
        self.step_seconds: Histogram = add(
            Histogram(
                "dbos_step_duration_seconds",
                "Time a step body took, retries included (replays are not timed)",
                ("step",),
                buckets=LATENCY_BUCKETS,
                registry=None,
            )
        )
        self.step_failures = counter(
            "dbos_step_failures", "Steps that raised after their last attempt", ("step",)
        )
        self.step_retries = counter(
            "dbos_step_retries", "Step attempts that failed and were retried", ("step",)
        )
        self.queue_wait: Histogram = add(
            Histogram(
                "dbos_queue_wait_seconds",
                "Time from a queued row's creation to its claim and start (claim latency)",
                ("queue",),
                buckets=LATENCY_BUCKETS,
                registry=None,
            )
        )
        self.queue_depth: Gauge = add(
            Gauge(
                "dbos_queue_depth",
                "Active rows per queue: ENQUEUED (waiting), DELAYED (not due), PENDING (running)",
                ("queue", "status"),
                registry=None,
            )
        )
        self.recovered = counter(
            "dbos_workflows_recovered",
            "Workflows recovered: re-enqueued at launch, or dispatched again after an "
            "interrupted execution",
        )
        self.parked = counter(
            "dbos_workflows_dead_lettered",
            "Workflows parked as MAX_RECOVERY_ATTEMPTS_EXCEEDED",
            ("workflow",),
        )
        add(_DatabaseCounters(sysdb))
        self._depth_labels: set[tuple[str, str]] = set()
        # Series set to 0 at the last refresh: removed at this one unless they came back.
        self._emptied: set[tuple[str, str]] = set()

    # --- Metrics --------------------------------------------------------------------

    def workflow_started(self, name: str) -> None:
        self.started.labels(name).inc()

    def workflow_ended(self, name: str, status: str) -> None:
        if status == "SUCCESS":
            self.completed.labels(name).inc()
        elif status == "ERROR":
            self.failed.labels(name).inc()

    def workflow_failed(self, name: str, status: str, error_type: str) -> None:
        self.failures_by_type.labels(name, status, error_type).inc()

    def step_ended(self, name: str, seconds: float, failed: bool) -> None:
        self.step_seconds.labels(name).observe(seconds)
        if failed:
            self.step_failures.labels(name).inc()

    def step_retried(self, name: str) -> None:
        self.step_retries.labels(name).inc()

    def dispatched(self, queue_name: str, waited_seconds: float, recovered: bool) -> None:
        self.queue_wait.labels(queue_name).observe(waited_seconds)
        if recovered:
            self.recovered.inc()

    def dead_lettered(self, name: str) -> None:
        self.parked.labels(name).inc()

    def recovered_at_launch(self, count: int) -> None:
        if count:
            self.recovered.inc(count)

    # --- reading --------------------------------------------------------------------

    async def refresh_queue_depths(self) -> None:
        """Read the queue depths now (one grouped count).

        Bounded: a (queue, status) that emptied reads 0 at this refresh and its series is
        removed at the next (any writer may put any number of queue names in the table,
        and a series kept for each for ever grows without end); and at most
        :data:`MAX_DEPTH_SERIES` series are reported, the deepest, the rest summed under
        ``queue="(other)"``."""
        depths = {(d.queue_name, d.status): d.count for d in await self._sysdb.queue_depths()}
        depths = bounded_depths(depths, MAX_DEPTH_SERIES)
        for labels in self._emptied:
            if labels not in depths:
                self.queue_depth.remove(*labels)
        emptied = self._depth_labels - depths.keys()
        for labels in emptied:
            self.queue_depth.labels(*labels).set(0)
        for labels, count in depths.items():
            self.queue_depth.labels(*labels).set(count)
        self._emptied = emptied
        self._depth_labels = set(depths.keys())

    def exposition(self) -> str:
        """The registry in Prometheus' text format (what a ``/metrics`` endpoint serves)."""
        return generate_latest(self.registry).decode("utf-8")

    def close(self) -> None:
        """Unregister this launch's instruments from a configured registry, so a later
        launch can register its own there; a registry of this launch's own keeps its
        final figures (readable after shutdown)."""
        if not self._shared:
            return
        for collector in self._collectors:
            with contextlib.suppress(KeyError):  # unregistered by the application
                self.registry.unregister(collector)
        self._collectors.clear()


async def poll(
    metrics: PrometheusMetrics,
    interval: float = QUEUE_DEPTH_INTERVAL,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Refresh the queue depths every ``interval`` for the executor's lifetime. A failed
    read (the database away) keeps the last figures and is logged at DEBUG: the outage
    itself is logged once by the statement loop."""
    task_status.started()
    while True:
        try:
            await metrics.refresh_queue_depths()
        except Exception as error:
            if not is_control(error):
                raise
            logger.debug("queue depth read failed (keeping the last figures): %s", error)
        await trio.sleep(interval)
