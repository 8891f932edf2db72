"""The executor: one launched DBOS, its connection, its identity and its one nursery.

Invariants, and why:

* Every task the executor runs — background pieces and every workflow started with
  ``start_workflow`` — is a task in one nursery. Shutdown cancels that nursery and awaits
  every task in it *before* the system database closes: a task cancelled mid-checkpoint
  finishes its shielded cleanup on a live pool, and a workflow interrupted this way stays
  PENDING for the next launch to recover.
* Launch order: resolve identity → connect → migrate/verify → register the application
  version → recover → start background tasks. Shutdown is the mirror image.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from ._clock import Clock
from ._config import Config, redact_url
from ._errors import DBOSInitializationError
from ._identity import Identity, resolve_identity
from ._registry import Registry
from ._serialization import Codec
from .core.admission import RunningCounts
from .engine.dequeue import QueueSet
from .sysdb.protocol import SystemDatabase
from .sysdb.records import Outcome
from .sysdb.wakeups import WakeupRegistry, outcome_key

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


@attrs.define(eq=False)
class LocalExecution:
    """A workflow execution running in this process, and what it produced.

    Handles on a workflow running here wait on ``done`` (a ``trio.Event``) instead of
    polling the database. ``outcome`` is None if the execution stopped without an outcome
    (shutdown, lost ownership): waiters then fall back to the database.
    """

    workflow_id: str
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    done: trio.Event = attrs.field(factory=trio.Event)
    outcome: Outcome | None = None
    returned: Any = None
    raised: BaseException | None = None
    # Set when this process cancelled the workflow: the scope's cancellation is then a
    # CANCELLED outcome, not a shutdown.
    cancel_requested: bool = False


class Runtime:
    """What the engine's non-running parts need: a system database and how to read it.

    Handles, outcome waits and management calls work on a ``Runtime``; a
    :class:`~dbos_trio.client.Client` is one (it runs no workflow code, so ``local`` stays
    empty), and a launched :class:`Executor` is one with workflows running in it.
    ``app_name`` is None for a client acting for no application.
    """

    def __init__(
        self,
        *,
        sysdb: SystemDatabase,
        codec: Codec,
        clock: Clock,
        app_name: str | None,
        outcome_poll_interval: float,
    ) -> None:
        self.sysdb = sysdb
        self.codec = codec
        self.clock = clock
        self.wakeups = sysdb.wakeups
        self.local: dict[str, LocalExecution] = {}
        self.outcome_poll_interval = outcome_poll_interval
        self._app_name = app_name

    @property
    def app_name(self) -> str | None:
        return self._app_name


class Executor(Runtime):
    """Runtime state of one launched :class:`~dbos_trio.DBOS` instance."""

    def __init__(
        self,
        *,
        config: Config,
        registry: Registry,
        sysdb: SystemDatabase,
        identity: Identity,
        clock: Clock,
        background_interval: float | None = None,
    ) -> None:
        super().__init__(
            sysdb=sysdb,
            codec=Codec(config.serializer),
            clock=clock,
            app_name=identity.app_name,
            outcome_poll_interval=config.outcome_poll_interval,
        )
        self.config = config
        self.registry = registry
        self.identity = identity
        self.is_latest_version = True
        self._nursery: trio.Nursery | None = None
        self.recovered_count = 0
        self.running = RunningCounts()
        self.workflow_names = tuple(sorted(w.name for w in registry.all()))
        self.queue_set = QueueSet()
        # None: the engine's own intervals; else the spacing of background work (tests).
        self.background_interval = background_interval

    @property
    def app_name(self) -> str:
        return self.identity.app_name

    @property
    def app_version(self) -> str:
        return self.identity.app_version

    @property
    def executor_id(self) -> str:
        return self.identity.executor_id

    @property
    def nursery(self) -> trio.Nursery:
        assert self._nursery is not None, "the executor's nursery is not open"
        return self._nursery

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` as a task of the executor's nursery."""
        self.nursery.start_soon(fn, *args)

    def begin_local(self, workflow_id: str) -> LocalExecution:
        execution = LocalExecution(workflow_id)
        self.local[workflow_id] = execution
        return execution

    def end_local(self, execution: LocalExecution) -> None:
        if self.local.get(execution.workflow_id) is execution:
            del self.local[execution.workflow_id]
        execution.done.set()
        self.wakeups.wake(outcome_key(execution.workflow_id))


async def _open_system_database(
    config: Config, wakeups: WakeupRegistry, settings: LaunchSettings
) -> SystemDatabase:
    url = config.resolved_database_url()
    if url.startswith(("postgresql://", "postgres://")):
        from .sysdb.postgres.backend import PostgresSystemDatabase

        return await PostgresSystemDatabase.open(
            url,
            schema=config.schema,
            max_connections=config.max_connections,
            connect_timeout=config.connect_timeout,
            run_migrations=config.run_migrations,
            use_listen_notify=config.use_listen_notify,
            wakeups=wakeups,
            notification_coalesce=config.notification_coalesce,
        )
    if url.startswith("sqlite:"):
        from .sysdb.sqlite.backend import SQLiteSystemDatabase

        if settings.background_interval is not None:
            return await SQLiteSystemDatabase.open(
                url,
                run_migrations=config.run_migrations,
                wakeups=wakeups,
                recheck_interval=settings.background_interval,
            )
        return await SQLiteSystemDatabase.open(
            url, run_migrations=config.run_migrations, wakeups=wakeups
        )
    raise DBOSInitializationError(
        f"unsupported system database URL {redact_url(url)!r}: use a postgresql:// or "
        "sqlite:/// URL"
    )


@asynccontextmanager
async def open_executor(
    config: Config,
    registry: Registry,
    background: Callable[[Executor], Awaitable[None]] | None = None,
) -> AsyncIterator[Executor]:
    """Launch an executor for the block; shut it down (cancel, await, close) on exit."""
    identity = resolve_identity(config, registry.all())
    registry.freeze()
    try:
        settings = launch_settings.get() or LaunchSettings()
        sysdb = await _open_system_database(config, WakeupRegistry(), settings)
        if settings.intercept is not None:
            sysdb = settings.intercept(sysdb)
        try:
            executor = Executor(
                config=config,
                registry=registry,
                sysdb=sysdb,
                identity=identity,
                clock=Clock(),
                background_interval=settings.background_interval,
            )
            executor.is_latest_version = await sysdb.register_application_version(
                identity.app_name, identity.app_version
            )
            if not executor.is_latest_version:
                logger.warning(
                    "application version %s is not the latest registered version of %s",
                    identity.app_version,
                    identity.app_name,
                )
            async with trio.open_nursery() as nursery:
                executor._nursery = nursery
                if background is not None:
                    await background(executor)
                logger.info(
                    "launched %s version %s as executor %s (%d workflows re-enqueued for recovery)",
                    identity.app_name,
                    identity.app_version,
                    identity.executor_id,
                    executor.recovered_count,
                )
                try:
                    yield executor
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await sysdb.close()
            logger.info(
                "shut down %s version %s executor %s",
                identity.app_name,
                identity.app_version,
                identity.executor_id,
            )
    finally:
        registry.thaw()
