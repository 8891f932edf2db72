"""``Queue``: a named durable queue, declared with ``dbos.register_queue`` before launch."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, ParamSpec, TypeVar

import attrs

from dbos_trio._core.admission import QueueConfig
from dbos_trio._engine.queues import bulk
from dbos_trio._engine.queues import enqueue as queues
from dbos_trio._engine.queues.bulk import EnqueueCall
from dbos_trio._engine.state import ExecutorSlot, Runtime
from dbos_trio._engine.workflows.handle import WorkflowHandle, handle_for
from dbos_trio._queue_setters import QueueSetters
from dbos_trio._registry import resolve_workflow

P = ParamSpec("P")
R = TypeVar("R")


class Queue(QueueSetters):
    """A queue's configuration, and the way to enqueue workflows on it.

    The configuration is the one it was declared or retrieved with; other executors, or
    ``dbos.delete_queue``, may have changed the ``queues`` row since (retrieve it again
    to see the stored one). Enqueueing checks the partition key against it.
    """

    def __init__(self, slot: ExecutorSlot, config: QueueConfig) -> None:
        self._slot = slot
        self._config = config

    def __repr__(self) -> str:
        return f"Queue({self._config!r})"

    def _admin_runtime(self, operation: str) -> Runtime:
        return self._slot.require(operation)

    @property
    def name(self) -> str:
        """The queue's name, unique within the system database (across applications)."""
        return self._config.name

    @property
    def config(self) -> QueueConfig:
        """The queue's settings (concurrency, rate limit, priority, partitioning)."""
        return self._config

    def __getattr__(self, field: str) -> Any:
        # global_concurrency, worker_concurrency, limiter, partition_*, polling_interval_sec
        if field.startswith("_"):
            raise AttributeError(field)
        return getattr(self._config, field)

    def enqueue(
        self, fn: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, WorkflowHandle[R]]:
        """Enqueue ``fn(*args, **kwargs)``; the awaitable returns once its row exists.

        Not async: from a workflow body the step id is taken at the call. Before launch
        (or after shutdown) raises :class:`~dbos_trio.DBOSNotLaunchedError`; a bad option
        or partition key raises :class:`~dbos_trio.DBOSException` before anything is
        written.
        """
        executor = self._slot.require(f"enqueueing on queue {self.name!r}")
        registered, call_args = resolve_workflow(fn, args)
        return queues.enqueue(
            executor, self.name, registered, call_args, dict(kwargs), config=self._config
        )

    async def enqueue_many(
        self, fn: Callable[..., Awaitable[R]], calls: Iterable[EnqueueCall | tuple[Any, ...]]
    ) -> list[WorkflowHandle[R]]:
        """Enqueue ``fn`` once per call (an :class:`~dbos_trio.EnqueueCall`, or a tuple
        of positional arguments) in few statements; the handles, in order.

        Each row is deduplicated and idempotent as one ``enqueue`` of it would be, with
        ``SetEnqueueOptions`` applying to every row that does not set its own. Every row
        is checked first: a bad one raises :class:`~dbos_trio.DBOSInvalidArgumentError`
        naming its index, and nothing is written. Rows refused while writing (a held
        deduplication id, say) raise :class:`~dbos_trio.DBOSEnqueueManyError` listing
        each, after every other row was enqueued (its ``workflow_ids`` say which).
        Refused from a workflow body. Cancelled midway, the rows of the chunks already
        committed stay enqueued (enqueue again with the same ids to be sure of all).
        """
        executor = self._slot.require(f"enqueueing on queue {self.name!r}")
        registered, bound = bulk.resolve_bound(fn)
        rows = bulk.as_calls(calls)
        if bound:
            rows = [attrs.evolve(row, args=bound + row.args) for row in rows]
        planned = bulk.plan_queue_rows(executor, self.name, self._config, registered, rows)
        ids = await bulk.write_rows(executor, planned)
        return [handle_for(executor, workflow_id) for workflow_id in ids]
