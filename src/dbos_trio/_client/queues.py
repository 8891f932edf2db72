"""Registering queues from a :class:`~dbos_trio.Client`, and changing them at run time.

``client.register_queue(name, ...)`` upserts the ``queues`` row (default
``on_conflict="always_update"``, as the official client's) and returns a
:class:`ClientQueue`, whose ``set_*`` methods rewrite one field of the stored row while
the client is open. See :mod:`dbos_trio._engine.queues.stored` for the invariants.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._client.options import EnqueueOptions, payload_format
from dbos_trio._client.rows import enqueued_row
from dbos_trio._core.admission import QueueConfig, RateLimit
from dbos_trio._engine.queues import bulk
from dbos_trio._engine.queues.bulk import EnqueueCall
from dbos_trio._engine.state import Runtime
from dbos_trio._engine.workflows.options import StartExtras
from dbos_trio._ops import queues as ops
from dbos_trio._ops.queues import OnConflict
from dbos_trio._queue_setters import QueueSetters
from dbos_trio.errors import DBOSArgumentTypeError, DBOSException, DBOSInvalidArgumentError


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
        stored = await ops.register_queue(
            self._reach,
            name,
            worker_concurrency=worker_concurrency,
            global_concurrency=global_concurrency,
            limiter=limiter,
            partition_concurrency=partition_concurrency,
            partition_worker_concurrency=partition_worker_concurrency,
            partition_limiter=partition_limiter,
            polling_interval_sec=polling_interval_sec,
            on_conflict=on_conflict,
            application_name=application_name or self._app_name,
        )
        return ClientQueue(self, stored)

    async def retrieve_queue(self, name: str) -> ClientQueue | None:
        """The stored queue ``name`` with its setters, or None."""
        stored = await ops.retrieve_queue(self._reach, name)
        return None if stored is None else ClientQueue(self, stored)

    async def list_queues(
        self, *, application_name: str | Sequence[str] | None = None
    ) -> list[ClientQueue]:
        """The stored queues, by name, each with its setters: those of
        ``application_name`` (one name or several) and the unclaimed ones; by default the
        client's application's (every queue for a client of no application). One read per
        application; cancellation changes nothing."""
        found = await ops.list_queues(self._reach, application_name=application_name)
        return [ClientQueue(self, config) for config in found]

    async def pause_queue(self, name: str) -> bool:
        """Stop every executor's claims from queue ``name``, durably (restarts and
        re-registrations keep it paused); running work goes on. True if this call paused
        it, False if it was already paused; no such queue raises
        :class:`~dbos_trio.DBOSException`. One statement."""
        return await ops.pause_queue(self._reach, name)

    async def unpause_queue(self, name: str) -> bool:
        """Let executors claim from queue ``name`` again, with the global concurrency it
        had; True if this call unpaused it, False if it was not paused."""
        return await ops.unpause_queue(self._reach, name)

    async def delete_queue(self, name: str) -> None:
        """Delete the queue's row (a missing one is not an error). Its ENQUEUED workflows
        stay as they are, unserved, until a queue of that name is registered again. One
        statement: cancelled, it happened or it did not."""
        await ops.delete_queue(self._reach, name)

    async def enqueue_many(
        self, options: EnqueueOptions, calls: Iterable[EnqueueCall | tuple[Any, ...]]
    ) -> list[ClientWorkflowHandle[Any]]:
        """Enqueue ``options.workflow_name`` on ``options.queue_name`` once per call (an
        :class:`~dbos_trio.EnqueueCall`, or a tuple of positional arguments) in few
        statements; the handles, in order.

        ``options`` applies to every row; a call's own ``workflow_id``,
        ``deduplication_id``, ``priority``, ``queue_partition_key`` or ``delay_seconds``
        replace it for that row (``options.workflow_id`` is refused for more than one
        row). Each row is deduplicated and idempotent as one ``enqueue`` of it would be.
        Every row is checked first: a bad one raises
        :class:`~dbos_trio.DBOSInvalidArgumentError` naming its index, and nothing is
        written. Rows refused while writing raise :class:`~dbos_trio.DBOSEnqueueManyError`
        listing each, after every other row was enqueued. Cancelled midway, the rows of
        the chunks already committed stay enqueued.
        """
        runtime = self._require("enqueue_many")
        if not isinstance(options, EnqueueOptions):
            raise DBOSArgumentTypeError(
                f"enqueue_many needs EnqueueOptions, not {type(options).__name__}"
            )
        rows = bulk.as_calls(calls)
        if options.workflow_id is not None and len(rows) > 1:
            raise DBOSInvalidArgumentError(
                "enqueue_many: EnqueueOptions.workflow_id names one workflow; give each row "
                "its own EnqueueCall(workflow_id=...)"
            )
        extras = StartExtras(reuse_policy=options.workflow_id_reuse_policy)
        fmt = payload_format(runtime.codec, options.serialization)
        plan = bulk.BulkPlan(len(rows), options.duplication_policy, extras)
        for index, call in enumerate(rows):
            try:
                if plan.template is not None and not bulk.has_own_options(call):
                    # As enqueued_row would build it, without re-deriving what every plain
                    # row shares (writer, placement, attributes): its own id and inputs.
                    bulk.add_plain_call(plan, index, runtime.codec, fmt, call)
                    continue
                row_options = bulk.row_options(options, call)
                if call.workflow_id is not None:
                    row_options = attrs.evolve(row_options, workflow_id=call.workflow_id)
                new = enqueued_row(runtime, row_options, call.args, dict(call.kwargs))
            except DBOSException as error:
                raise DBOSInvalidArgumentError(
                    f"enqueue_many row {index}: {error.message}"
                ) from error
            if not bulk.has_own_options(call) and options.workflow_id is None:
                plan.start_plain(index, new)
            else:
                plan.add_single(index, bulk.PlannedRow(new, options.duplication_policy, extras))
        bulk.check_ids(plan)
        ids = await bulk.write_rows(runtime, plan)
        return [self._handle(workflow_id) for workflow_id in ids]
