"""Debouncers, as made by ``DBOS.debouncer``: coalesce bursts of calls into one workflow."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, ParamSpec, TypeVar

from dbos_trio._core import validate
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.schedules.debounce_loop import check_timeout
from dbos_trio._engine.schedules.debouncer import Target, debounce
from dbos_trio._engine.state import ExecutorSlot
from dbos_trio._engine.workflows.handle import WorkflowHandle
from dbos_trio._queue import Queue
from dbos_trio._registry import resolve_workflow

P = ParamSpec("P")
R = TypeVar("R")


class Debouncer(Generic[P, R]):
    """Debounces one workflow: ``await debouncer.debounce(key, period_sec, *args)``.

    Calls with the same key coalesce onto one workflow (created by the first call, DELAYED
    on the debouncer's queue) that starts once ``period_sec`` passes with no further call
    for the key — but no later than ``debounce_timeout_sec`` after the first call — and
    runs with the last call's arguments. The row is the official SDK's, so debounces of the
    same workflow and key from dbos 3.4 processes coalesce with these.
    """

    def __init__(
        self,
        slot: ExecutorSlot,
        declared: Any,
        target: Target,
    ) -> None:
        self._slot = slot
        self._declared = declared
        self._target = target

    @property
    def workflow_name(self) -> str:
        """The registered name of the workflow this debouncer starts."""
        return self._target.registered.name

    def debounce(
        self, debounce_key: str, debounce_period_sec: float, *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, WorkflowHandle[R]]:
        """Debounce one call; the handle of the workflow it coalesced onto (or made).

        Not async: from a workflow body the first step id is taken at the call (the bounce
        and any fresh enqueue are checkpoints there, so a replay neither bounces nor
        enqueues again). Raises before writing for a bad key or period, for enqueue
        options a debounce owns (``SetEnqueueOptions`` deduplication id, delay, priority,
        partition key, ``duplication_policy="return-existing"``) and for an undeclared or
        partitioned queue; :class:`~dbos_trio.DBOSQueueDeduplicatedError` if the key's
        deduplication id is held by a workflow that is not this debouncer's. Cancelled,
        a bounce or fresh enqueue either committed whole or not at all.
        """
        validate.text(debounce_key, "debounce_key")
        executor = self._slot.require("debounce")
        return debounce(
            executor,
            self._target,
            self._declared,
            debounce_key,
            debounce_period_sec,
            tuple(args),
            dict(kwargs),
        )


class Debouncing(DBOSBase):
    def debouncer(
        self,
        workflow: Callable[P, Awaitable[R]],
        *,
        debounce_timeout_sec: float | None = None,
        queue: Queue | str | None = None,
        application_name: str | None = None,
    ) -> Debouncer[P, R]:
        """A :class:`Debouncer` for a registered workflow function (not a bound method),
        running on ``queue`` (the internal queue by default). A bad argument raises here.

        ``application_name`` debounces for another application sharing the database (as
        dbos 3.4's ``Debouncer.create(..., application_name=...)``): the key is its, the
        workflow it makes is its (with no version, so its latest version runs it), and
        a holder of the key owned by any other application is a
        :class:`~dbos_trio.DBOSQueueDeduplicatedError`. Default: this application."""
        if inspect.ismethod(workflow):
            raise TypeError("Only workflow functions may be debounced, not methods")
        registered, _ = resolve_workflow(workflow, ())
        if isinstance(queue, Queue):
            queue_name: str | None = queue.name
        else:
            queue_name = validate.optional_text(queue, "queue")
        timeout = check_timeout(debounce_timeout_sec)
        application = validate.optional_text(application_name, "application_name")
        target = Target(registered, queue_name, timeout, application)
        return Debouncer(self._slot, self._queues, target)
