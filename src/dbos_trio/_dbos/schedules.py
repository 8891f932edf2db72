"""Schedules, as methods of ``DBOS``: cron-driven workflows stored in the database.

``@dbos.scheduled(cron)`` declares a schedule applied at launch; the other calls create,
redefine, list and change schedules while launched (see
:mod:`dbos_trio._engine.schedules.definitions` for what is checked and
:mod:`dbos_trio._engine.schedules.scheduler` for how they fire). Called from a workflow
body, ``create_schedule``, ``list_schedules``, ``get_schedule``, ``delete_schedule``,
``pause_schedule`` and ``resume_schedule`` are checkpoints (``DBOS.createSchedule``, ...);
``apply_schedules``, ``backfill_schedule`` and ``trigger_schedule`` are refused there, as in
dbos 3.4.

Cancellation: every change is one transaction, so a cancelled call either committed or
changed nothing (``apply_schedules`` all of its batch or none); a cancelled
``backfill_schedule`` leaves the ticks it fired so far, and running it again fires only
the rest (the ids are the ticks').
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any, TypeVar

from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.schedules import definitions as schedules
from dbos_trio._engine.workflows.handle import WorkflowHandle, handle_for
from dbos_trio._ops import schedules as ops
from dbos_trio._ops.schedules import ScheduleInput, WorkflowSchedule
from dbos_trio._registry import DeclaredSchedule
from dbos_trio.errors import DBOSArgumentTypeError

F = TypeVar("F", bound=Callable[..., Any])


class Schedules(DBOSBase):
    def scheduled(
        self,
        schedule: str,
        *,
        name: str | None = None,
        context: Any = None,
        automatic_backfill: bool = False,
        cron_timezone: str | None = None,
        queue_name: str | None = None,
    ) -> Callable[[F], F]:
        """Declare a schedule for the workflow below (``@dbos.scheduled("*/5 * * * *")``
        over ``@dbos.workflow()``), applied at every launch like ``apply_schedules``.

        The schedule is named ``name`` (default: the workflow's registered name). A bad
        cron expression, time zone or signature raises here; an undeclared queue raises at
        launch, before any schedule is written.
        """
        schedules.check_definition(
            name or "scheduled", schedule, automatic_backfill, cron_timezone, queue_name
        )
        registry = self._registry
        registry.check_registration_allowed("a schedule")

        def declare(fn: F) -> F:
            workflow_name, class_name = schedules.workflow_of(registry, fn)
            registry.add_schedule(
                DeclaredSchedule(
                    schedule_name=name or workflow_name,
                    workflow_name=workflow_name,
                    class_name=class_name,
                    schedule=schedule,
                    context=context,
                    automatic_backfill=automatic_backfill,
                    cron_timezone=cron_timezone,
                    queue_name=queue_name,
                )
            )
            return fn

        return declare

    def create_schedule(
        self,
        *,
        schedule_name: str,
        workflow: Callable[..., Any] | None = None,
        schedule: str,
        context: Any = None,
        automatic_backfill: bool = False,
        cron_timezone: str | None = None,
        queue_name: str | None = None,
        workflow_fn: Callable[..., Any] | None = None,
    ) -> Coroutine[Any, Any, None]:
        """Create a schedule running ``workflow(scheduled_time, context)`` at every tick of
        ``schedule`` (5 cron fields, or 6 with seconds first) in ``cron_timezone`` (an IANA
        name; UTC by default), on ``queue_name`` (the internal queue by default).

        The workflow is given as ``workflow=`` or, as dbos 3.4 names it, ``workflow_fn=``
        (exactly one of the two). Raises before anything is written for a bad cron
        expression, time zone, workflow (unregistered, an instance method, or not
        callable as ``(scheduled_time, context)``), an undeclared queue, or a context
        that cannot be serialized; a name that exists raises :class:`DBOSException` and
        changes nothing.
        """
        chosen = workflow if workflow is not None else workflow_fn
        if chosen is None or (workflow is not None and workflow_fn is not None):
            raise DBOSArgumentTypeError(
                "create_schedule needs the workflow as workflow_fn= (or workflow=), exactly once"
            )
        entry = ScheduleInput(
            schedule_name=schedule_name,
            workflow=chosen,
            schedule=schedule,
            context=context,
            automatic_backfill=automatic_backfill,
            cron_timezone=cron_timezone,
            queue_name=queue_name,
        )
        return ops.create_schedule(
            self._reach, entry, registry=self._registry, declared=self._queues
        )

    async def apply_schedules(self, entries: Sequence[ScheduleInput]) -> None:
        """Create or redefine several schedules at once, atomically (all or none).

        A redefined schedule keeps its id, its status (a paused one stays paused) and its
        ``last_fired_at``. Every entry is checked first, as by :meth:`create_schedule`;
        refused inside a workflow.
        """
        await ops.apply_schedules(
            self._reach, entries, registry=self._registry, declared=self._queues
        )

    def list_schedules(
        self,
        *,
        status: str | Sequence[str] | None = None,
        workflow_name: str | Sequence[str] | None = None,
        schedule_name_prefix: str | Sequence[str] | None = None,
        application_name: str | Sequence[str] | None = None,
    ) -> Coroutine[Any, Any, list[WorkflowSchedule]]:
        """Stored schedules, by name: by default this application's and unclaimed ones."""
        return ops.list_schedules(
            self._reach,
            status=status,
            workflow_name=workflow_name,
            schedule_name_prefix=schedule_name_prefix,
            application_name=application_name,
        )

    def get_schedule(self, name: str) -> Coroutine[Any, Any, WorkflowSchedule | None]:
        """The schedule called ``name``, or None."""
        return ops.get_schedule(self._reach, name)

    def delete_schedule(self, name: str) -> Coroutine[Any, Any, None]:
        """Delete the schedule (no error if there is none); runs already made stay."""
        return ops.delete_schedule(self._reach, name)

    def pause_schedule(self, name: str) -> Coroutine[Any, Any, None]:
        """Stop the schedule firing (every executor stops within one polling interval)."""
        return ops.pause_schedule(self._reach, name)

    def resume_schedule(self, name: str) -> Coroutine[Any, Any, None]:
        """Let a paused schedule fire again, from its next tick (paused ticks are skipped)."""
        return ops.resume_schedule(self._reach, name)

    async def backfill_schedule(
        self, schedule_name: str, start: datetime, end: datetime
    ) -> list[WorkflowHandle[Any]]:
        """Enqueue every tick strictly between ``start`` and ``end`` (naive times are UTC)
        with the ids the scheduler gives them, so ticks already run are not run again;
        handles in tick order. Refused inside a workflow; a missing schedule raises."""
        ids = await ops.backfill_schedule(self._reach, schedule_name, start, end)
        return [handle_for(self._require_executor("handle"), workflow_id) for workflow_id in ids]

    async def trigger_schedule(self, schedule_name: str) -> WorkflowHandle[Any]:
        """Enqueue one run of the schedule now (id ``sched-{name}-trigger-{now}``, its
        ``scheduled_time`` now). Refused inside a workflow; a missing schedule raises."""
        workflow_id = await ops.trigger_schedule(self._reach, schedule_name)
        return handle_for(self._require_executor("handle"), workflow_id)
