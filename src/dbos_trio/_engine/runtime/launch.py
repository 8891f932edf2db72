"""Launch and shutdown, top to bottom, in one place.

Launch order, and why:

1. **Identity** (app name, version, executor id), then freeze the registry: a stored row
   names a workflow, which must not mean different code from one moment to the next.
2. **Connect and migrate** (or only verify, with ``run_migrations=False``), then open the
   registered resources (datasources: connect, migrate their checkpoint tables), so a
   workflow recovered at launch can already run its transactions.
3. **Register the application version**, learning whether it is the latest (only the
   latest overwrites queue rows and runs version-less queued work).
4. **Open the executor's one nursery**, and in it the backend's own tasks first (LISTEN,
   the NOTIFY notifier), so no wakeup is missed from here on.
5. **Upsert the declared queues**, then **recover**: one write re-enqueues this
   executor's abandoned PENDING rows, before launch returns — a workflow the application
   starts the instant launch returns is PENDING under the same executor id, and must not
   be swept up as abandoned.
6. **Start the dequeue supervisor, the timeout sweep, the orphan sweep** (which runs
   again any workflow of this executor that nothing here runs: a live executor owns its
   work until it ends) **and the cancel watcher** (which stops a workflow running here
   once its row was cancelled or re-owned elsewhere). Before them (after recovery),
   **apply the declared schedules** (``@dbos.scheduled``) and start the scheduler.

Shutdown mirrors it (after an optional drain, :mod:`.drain`: claiming stops and running
workflows get ``drain_seconds`` to finish): cancel the nursery, await every task in it
(a task cancelled mid-checkpoint finishes its shielded cleanup on a live pool, and a
workflow interrupted this way stays PENDING for the next launch), then close the
datasources and the system database (flushing the notifier), then thaw the registry.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial

import attrs
import trio

from dbos_trio._clock import Clock
from dbos_trio._config import Config
from dbos_trio._core.admission import QueueConfig
from dbos_trio._engine.admin import retention, timeouts
from dbos_trio._engine.observability.logs import default_logging
from dbos_trio._engine.queues import enqueue as queues
from dbos_trio._engine.recovery import adoption, versions
from dbos_trio._engine.recovery import at_launch as recovery
from dbos_trio._engine.runtime import dequeue, drain, orphans, watch
from dbos_trio._engine.runtime.pacing import default_background_interval
from dbos_trio._engine.schedules import scheduler
from dbos_trio._engine.state import Executor, ExecutorSlot
from dbos_trio._identity import resolve_identity
from dbos_trio._redact import redact_url
from dbos_trio._registry import LaunchResource, Registry
from dbos_trio._sysdb.open import BackendOptions, open_system_database
from dbos_trio._sysdb.protocol import SystemDatabase

logger = logging.getLogger("dbos_trio")


@attrs.frozen
class LaunchSettings:
    """How one launch is opened and paced, beyond its ``Config`` (set by dbos_trio.testing).

    ``background_interval`` spaces the background sweeps (dequeue supervisor, timeout
    sweep), queue polling and SQLite waiters' re-checks further apart: under an autojumping
    ``MockClock`` real time is spent per wakeup, not per virtual second. ``intercept`` wraps
    the system database before anything writes through it (crash injection).
    """

    background_interval: float | None = None
    intercept: Callable[[SystemDatabase], SystemDatabase] | None = None


launch_settings: contextvars.ContextVar[LaunchSettings | None] = contextvars.ContextVar(
    "dbos_trio_launch_settings", default=None
)


@asynccontextmanager
async def open_executor(
    config: Config,
    registry: Registry,
    declared_queues: list[QueueConfig],
    slot: ExecutorSlot | None = None,
    *,
    drain_seconds: float | None = None,
    queue_conflicts: dict[str, str] | None = None,
) -> AsyncIterator[Executor]:
    """Launch an executor for the block; shut it down (cancel, await, close) on exit.

    ``slot`` holds the executor from the moment it exists, before any background task
    starts: a workflow recovered during launch already runs, and reaches it through the
    slot.

    Errors at launch propagate (nothing is left open); cancellation of the block is the
    normal way to stop, and interrupted workflows stay PENDING for the next launch. With
    ``drain_seconds`` (else ``config.shutdown_drain_seconds``) the exit first drains
    (:mod:`.drain`): no new claims, running workflows get up to that long to finish.
    """
    if drain_seconds is None:
        drain_seconds = config.shutdown_drain_seconds
    default_logging(config.log_level)
    identity = resolve_identity(config, registry.all())
    registry.freeze()
    try:
        database_url = config.resolved_database_url()
        # Nobody paced this launch (a plain ``dbos.launched()``): pace it for its clock.
        settings = launch_settings.get() or LaunchSettings(
            background_interval=default_background_interval(database_url)
        )
        sysdb = await open_system_database(
            database_url,
            BackendOptions.from_config(config, recheck_interval=settings.background_interval),
        )
        if settings.intercept is not None:
            sysdb = settings.intercept(sysdb)
        opened: list[LaunchResource] = []
        try:
            await _open_resources(registry, opened)
            is_latest = await sysdb.register_application_version(
                identity.app_name, identity.app_version
            )
            if not is_latest:
                logger.warning(
                    "application version %s is not the latest registered version of %s",
                    identity.app_version,
                    identity.app_name,
                )
            async with trio.open_nursery() as nursery:
                executor = Executor(
                    config=config,
                    registry=registry,
                    sysdb=sysdb,
                    identity=identity,
                    clock=Clock(),
                    nursery=nursery,
                    background_interval=settings.background_interval,
                )
                executor.is_latest_version = is_latest
                _observe(executor)
                if slot is not None:
                    slot.executor = executor
                    executor.slot = slot
                try:
                    await _start(executor, declared_queues, queue_conflicts)
                    # Where and as what it runs, the first thing to check when work is
                    # not picked up (the official SDK logs its launch too); no password.
                    logger.info(
                        "launched %s version %s as executor %s on %s, queues: %s "
                        "(%d workflows re-enqueued for recovery)",
                        identity.app_name,
                        identity.app_version,
                        identity.executor_id,
                        redact_url(database_url),
                        ", ".join(sorted(q.name for q in declared_queues)) or "none",
                        executor.recovered_count,
                    )
                    yield executor
                finally:
                    if drain_seconds is not None:
                        await drain.drain(executor, drain_seconds)
                    nursery.cancel_scope.cancel()
                    if slot is not None:
                        slot.executor = None
                    _unobserve(executor)
        finally:
            with trio.CancelScope(shield=True):
                await _close_resources(opened)
                await sysdb.close()
            logger.info(
                "shut down %s version %s executor %s on %s",
                identity.app_name,
                identity.app_version,
                identity.executor_id,
                redact_url(database_url),
            )
    finally:
        registry.thaw()


async def _open_resources(registry: Registry, opened: list[LaunchResource]) -> None:
    """Open the registered resources (datasources: connect, migrate) in order, noting each
    in ``opened`` so shutdown closes exactly those; a failure raises, the rest unopened."""
    for resource in registry.resources:
        await resource.open()
        opened.append(resource)


async def _close_resources(opened: list[LaunchResource]) -> None:
    """Close what was opened, last first; a failure is logged, never stops the others."""
    for resource in reversed(opened):
        try:
            await resource.close()
        except Exception:
            logger.exception("closing %r failed", resource)


async def _start(
    executor: Executor,
    declared_queues: list[QueueConfig],
    queue_conflicts: dict[str, str] | None = None,
) -> None:
    """Steps 4-6 of the launch order (see the module docs)."""
    nursery = executor.nursery
    for task in executor.sysdb.background_tasks():
        await nursery.start(task)
    await queues.register_queues(executor, declared_queues, queue_conflicts)
    executor.recovered_count = await recovery.reenqueue_abandoned(executor)
    await versions.warn_pinned_elsewhere(executor)
    if executor.metrics is not None:
        executor.metrics.recovered_at_launch(executor.recovered_count)
        await nursery.start(_poll_metrics, executor)
    await scheduler.start(executor)
    await nursery.start(adoption.heartbeat, executor)
    interval = executor.background_interval
    # What starts workflows here runs in scopes a drain cancels (engine/drain.py).
    if interval is None:
        await nursery.start(drain.stoppable, executor, partial(dequeue.supervise, executor))
        await nursery.start(timeouts.sweep, executor)
        await nursery.start(drain.stoppable, executor, partial(orphans.sweep, executor))
        await nursery.start(watch.watch, executor)
        await nursery.start(versions.census, executor)
    else:
        supervise = partial(dequeue.supervise, executor, sweep_interval=interval)
        await nursery.start(drain.stoppable, executor, supervise)
        await nursery.start(partial(timeouts.sweep, executor, interval=interval))
        sweep_orphans = partial(orphans.sweep, executor, interval=interval)
        await nursery.start(drain.stoppable, executor, sweep_orphans)
        await nursery.start(partial(watch.watch, executor, interval=interval))
        await nursery.start(partial(versions.census, executor, interval=interval))
    if executor.config.retention is not None:
        await nursery.start(retention.run_policy, executor, executor.config.retention)


def _observe(executor: Executor) -> None:
    """Turn on the tracing and metrics ``Config`` asks for: their modules are imported
    here, only then (see :mod:`.telemetry`)."""
    config = executor.config
    if config.enable_otel:
        from dbos_trio._engine.observability.tracing import OtelTracing

        executor.tracing = OtelTracing(
            executor.identity, config.otel_tracer_provider, config.otel_attribute_format
        )
    if config.enable_metrics:
        from dbos_trio._engine.observability.metrics import PrometheusMetrics

        executor.metrics = PrometheusMetrics(executor.sysdb, config.metrics_registry)


def _unobserve(executor: Executor) -> None:
    if executor.metrics is not None:
        from dbos_trio._engine.observability.metrics import PrometheusMetrics

        if isinstance(executor.metrics, PrometheusMetrics):
            executor.metrics.close()


async def _poll_metrics(
    executor: Executor, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    from dbos_trio._engine.observability.metrics import (
        QUEUE_DEPTH_INTERVAL,
        PrometheusMetrics,
        poll,
    )

    metrics = executor.metrics
    if not isinstance(metrics, PrometheusMetrics):
        task_status.started()
        return
    interval = executor.background_interval or QUEUE_DEPTH_INTERVAL
    await poll(metrics, interval, task_status=task_status)
