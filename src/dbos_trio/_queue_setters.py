"""Runtime setters of a stored queue, shared by :class:`~dbos_trio.Queue` and the
queues a :class:`~dbos_trio.Client` registers (:class:`QueueSetters` needs only a
runtime and a queue name). See :mod:`dbos_trio._engine.queues.stored` for the invariants.

Each setter rewrites one field of the stored ``queues`` row and returns the stored
configuration; every executor serving the queue takes the change within the queue's
polling interval. Errors: a value that makes the queue invalid raises
:class:`~dbos_trio.DBOSInvalidArgumentError` and writes nothing; a missing queue
:class:`~dbos_trio.DBOSException`; the database
:class:`~dbos_trio.SystemDatabaseError`. Cancellation before the write changes nothing;
during it, the row is either changed whole or not at all.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._core.admission import QueueConfig, RateLimit
from dbos_trio._engine.admin import pausing
from dbos_trio._engine.queues import stored as queue_admin
from dbos_trio._engine.state import Runtime


class QueueSetters:
    """``set_*`` methods over :meth:`_admin_runtime` and the queue's ``_config``."""

    _config: QueueConfig

    def _admin_runtime(self, operation: str) -> Runtime:
        raise NotImplementedError

    def _admin_application(self) -> str | None:
        return self._config.application_name

    async def _set(self, field: str, value: Any) -> QueueConfig:
        runtime = self._admin_runtime(f"Queue.set_{field}")
        stored = await queue_admin.set_queue_field(
            runtime, self._config.name, field, value, application_name=self._admin_application()
        )
        self._config = stored
        return stored

    async def set_worker_concurrency(self, value: int | None) -> QueueConfig:
        """At most ``value`` workflows of this queue at once in each executor (None: no
        per-executor limit)."""
        return await self._set("worker_concurrency", value)

    async def set_global_concurrency(self, value: int | None) -> QueueConfig:
        """At most ``value`` workflows of this queue at once across all executors."""
        return await self._set("global_concurrency", value)

    async def set_limiter(self, value: RateLimit | None) -> QueueConfig:
        """At most ``value.limit`` starts per ``value.period`` seconds (None: unlimited)."""
        return await self._set("limiter", value)

    async def set_partition_concurrency(self, value: int | None) -> QueueConfig:
        """At most ``value`` workflows of each partition at once across all executors."""
        return await self._set("partition_concurrency", value)

    async def set_partition_worker_concurrency(self, value: int | None) -> QueueConfig:
        """At most ``value`` workflows of each partition at once in each executor."""
        return await self._set("partition_worker_concurrency", value)

    async def set_partition_limiter(self, value: RateLimit | None) -> QueueConfig:
        """At most ``value.limit`` starts per ``value.period`` seconds in each partition."""
        return await self._set("partition_limiter", value)

    async def set_polling_interval_sec(self, value: float) -> QueueConfig:
        """Seconds between the dequeue supervisor's looks at this queue."""
        return await self._set("polling_interval_sec", value)

    async def pause(self) -> bool:
        """Stop every executor's claims from this queue, durably (restarts and
        re-registrations keep it paused); running workflows go on. True if this call
        paused it, False if it was paused already; a queue with no stored row raises
        :class:`~dbos_trio.DBOSException`. One statement: cancelled, it happened or not.
        Same as ``dbos.pause_queue(name)`` (or the client's)."""
        return await pausing.pause_queue(self._admin_runtime("Queue.pause"), self._config.name)

    async def unpause(self) -> bool:
        """Let executors claim from this queue again, with the global concurrency it had;
        True if this call unpaused it, False if it was not paused. Errors and cancellation
        as :meth:`pause`."""
        return await pausing.unpause_queue(self._admin_runtime("Queue.unpause"), self._config.name)
