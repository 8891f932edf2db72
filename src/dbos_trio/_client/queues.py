"""Registering queues from a :class:`~dbos_trio.Client`, and changing them at run time.

``client.register_queue(name, ...)`` upserts the ``queues`` row (default
``on_conflict="always_update"``, as the official client's) and returns a
:class:`ClientQueue`, whose ``set_*`` methods rewrite one field of the stored row while
the client is open. See :mod:`dbos_trio._engine.queues.stored` for the invariants.
"""

from __future__ import annotations

from dbos_trio._client.base import ClientBase
from dbos_trio._core.admission import QueueConfig, RateLimit
from dbos_trio._engine.queues import stored as queue_admin
from dbos_trio._engine.queues.stored import OnConflict
from dbos_trio._engine.state import Runtime
from dbos_trio._queue_setters import QueueSetters
from dbos_trio.errors import DBOSInvalidArgumentError


class ClientQueue(QueueSetters):
    """A stored queue as a client sees it: its configuration when last read or written
    (``config``), and setters that change the stored row."""

    def __init__(self, client: ClientBase, config: QueueConfig) -> None:
        self._client = client
        self._config = config

    def __repr__(self) -> str:
        return f"ClientQueue({self._config!r})"

    @property
    def name(self) -> str:
        return self._config.name

    @property
    def config(self) -> QueueConfig:
        return self._config

    def _admin_runtime(self, operation: str) -> Runtime:
        return self._client._require(operation)


class ClientQueues(ClientBase):
    async def register_queue(
        self,
        name: str,
        *,
        worker_concurrency: int | None = None,
        global_concurrency: int | None = None,
        limiter: RateLimit | None = None,
        partition_concurrency: int | None = None,
        partition_worker_concurrency: int | None = None,
        partition_limiter: RateLimit | None = None,
        polling_interval_sec: float = 1.0,
        on_conflict: OnConflict = "always_update",
        application_name: str | None = None,
    ) -> ClientQueue:
        """Create or update the queue row ``name`` for ``application_name`` (else the
        client's application; None: unclaimed) and return it as stored.

        ``on_conflict`` is ``"always_update"`` (the default: overwrite an existing row of
        the application, or an unclaimed one) or ``"never_update"`` (keep it);
        ``"update_if_latest_version"`` is an executor's mode (a client runs no version)
        and is refused. A bad value raises :class:`~dbos_trio.DBOSInvalidArgumentError`
        before anything is written; a name another application owns raises
        :class:`~dbos_trio.DBOSException` in every mode.
        """
        mode = queue_admin.check_on_conflict(on_conflict)
        if mode == "update_if_latest_version":
            raise DBOSInvalidArgumentError(
                "on_conflict='update_if_latest_version' needs an application version, which "
                "a client does not run: use 'always_update' or 'never_update'"
            )
        config = QueueConfig(
            name=name,
            global_concurrency=global_concurrency,
            worker_concurrency=worker_concurrency,
            limiter=limiter,
            partition_concurrency=partition_concurrency,
            partition_worker_concurrency=partition_worker_concurrency,
            partition_limiter=partition_limiter,
            polling_interval_sec=polling_interval_sec,
            application_name=application_name or self._app_name,
        )
        runtime = self._require("register_queue")
        stored = await queue_admin.register_queue(
            runtime, config, overwrite=mode == "always_update"
        )
        return ClientQueue(self, stored)

    async def retrieve_queue(self, name: str) -> ClientQueue | None:
        """The stored queue ``name`` with its setters, or None."""
        runtime = self._require("retrieve_queue")
        stored = await runtime.sysdb.get_queue(name)
        return None if stored is None else ClientQueue(self, stored)
