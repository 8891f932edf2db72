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

from dbos_trio._core import validate
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.context import current_workflow
from dbos_trio._engine.schedules import definitions as schedules
from dbos_trio._engine.schedules import firing
from dbos_trio._engine.schedules.definitions import PAUSED, ScheduleInput, WorkflowSchedule
from dbos_trio._engine.workflows.checkpoint import as_step
from dbos_trio._engine.workflows.handle import WorkflowHandle, handle_for
from dbos_trio._registry import DeclaredSchedule
from dbos_trio.errors import DBOSException

F = TypeVar("F", bound=Callable[..., Any])


def _outside_workflow(operation: str) -> None:
    if current_workflow.get() is not None:
        raise DBOSException(f"DBOS.{operation} cannot be called from within a workflow")


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
        workflow: Callable[..., Any],
        schedule: str,
        context: Any = None,
        automatic_backfill: bool = False,
        cron_timezone: str | None = None,
        queue_name: str | None = None,
    ) -> Coroutine[Any, Any, None]:
        """Create a schedule running ``workflow(scheduled_time, context)`` at every tick of
        ``schedule`` (5 cron fields, or 6 with seconds first) in ``cron_timezone`` (an IANA
        name; UTC by default), on ``queue_name`` (the internal queue by default).

        Raises before anything is written for a bad cron expression, time zone, workflow
        (unregistered, an instance method, or not callable as ``(scheduled_time,
        context)``), an undeclared queue, or a context that cannot be serialized; a name
        that exists raises :class:`DBOSException` and changes nothing.
        """
        executor = self._require_executor("create_schedule")
        spec = schedules.spec_of(
            self._registry,
            schedule_name=schedule_name,
            workflow=workflow,
            schedule=schedule,
            context=context,
            automatic_backfill=automatic_backfill,
            cron_timezone=cron_timezone,
            queue_name=queue_name,
            application_name=executor.app_name,
        )

        async def create() -> None:
            row = await schedules.check_spec(executor, spec, self._queues)
            await schedules.create(executor, row)

        return as_step("DBOS.createSchedule", create)

    async def apply_schedules(self, entries: Sequence[ScheduleInput]) -> None:
        """Create or redefine several schedules at once, atomically (all or none).

        A redefined schedule keeps its id, its status (a paused one stays paused) and its
        ``last_fired_at``. Every entry is checked first, as by :meth:`create_schedule`;
        refused inside a workflow.
        """
        _outside_workflow("apply_schedules")
        executor = self._require_executor("apply_schedules")
        specs = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, ScheduleInput):
                raise DBOSException(
                    f"apply_schedules: entry {index} must be a ScheduleInput, not "
                    f"{type(entry).__name__}"
                )
            specs.append(
                schedules.spec_of(
                    self._registry,
                    schedule_name=entry.schedule_name,
                    workflow=entry.workflow,
                    schedule=entry.schedule,
                    context=entry.context,
                    automatic_backfill=entry.automatic_backfill,
                    cron_timezone=entry.cron_timezone,
                    queue_name=entry.queue_name,
                    application_name=executor.app_name,
                )
            )
        rows = [await schedules.check_spec(executor, spec, self._queues) for spec in specs]
        await schedules.apply(executor, rows)

    def list_schedules(
        self,
        *,
        status: str | Sequence[str] | None = None,
        workflow_name: str | Sequence[str] | None = None,
        schedule_name_prefix: str | Sequence[str] | None = None,
        application_name: str | Sequence[str] | None = None,
    ) -> Coroutine[Any, Any, list[WorkflowSchedule]]:
        """Stored schedules, by name: by default this application's and unclaimed ones."""
        executor = self._require_executor("list_schedules")
        filters = schedules.list_filters(
            status=status,
            workflow_name=workflow_name,
            schedule_name_prefix=schedule_name_prefix,
            application_name=application_name,
            default_application=executor.app_name,
        )
        return as_step("DBOS.listSchedules", lambda: schedules.listing(executor, filters))

    def get_schedule(self, name: str) -> Coroutine[Any, Any, WorkflowSchedule | None]:
        """The schedule called ``name``, or None."""
        validate.text(name, "name")
        executor = self._require_executor("get_schedule")
        return as_step("DBOS.getSchedule", lambda: schedules.get(executor, name))

    def delete_schedule(self, name: str) -> Coroutine[Any, Any, None]:
        """Delete the schedule (no error if there is none); runs already made stay."""
        validate.text(name, "name")
        executor = self._require_executor("delete_schedule")
        return as_step("DBOS.deleteSchedule", lambda: schedules.delete(executor, name))

    def pause_schedule(self, name: str) -> Coroutine[Any, Any, None]:
        """Stop the schedule firing (every executor stops within one polling interval)."""
        validate.text(name, "name")
        executor = self._require_executor("pause_schedule")
        return as_step("DBOS.pauseSchedule", lambda: schedules.set_status(executor, name, PAUSED))

    def resume_schedule(self, name: str) -> Coroutine[Any, Any, None]:
        """Let a paused schedule fire again, from its next tick (paused ticks are skipped)."""
        validate.text(name, "name")
        executor = self._require_executor("resume_schedule")
        return as_step(
            "DBOS.resumeSchedule", lambda: schedules.set_status(executor, name, schedules.ACTIVE)
        )

    async def backfill_schedule(
        self, schedule_name: str, start: datetime, end: datetime
    ) -> list[WorkflowHandle[Any]]:
        """Enqueue every tick strictly between ``start`` and ``end`` (naive times are UTC)
        with the ids the scheduler gives them, so ticks already run are not run again;
        handles in tick order. Refused inside a workflow; a missing schedule raises."""
        _outside_workflow("backfill_schedule")
        executor = self._require_executor("backfill_schedule")
        ids = await firing.backfill(executor, schedule_name, start, end)
        return [handle_for(executor, workflow_id) for workflow_id in ids]

    async def trigger_schedule(self, schedule_name: str) -> WorkflowHandle[Any]:
        """Enqueue one run of the schedule now (id ``sched-{name}-trigger-{now}``, its
        ``scheduled_time`` now). Refused inside a workflow; a missing schedule raises."""
        _outside_workflow("trigger_schedule")
        executor = self._require_executor("trigger_schedule")
        return handle_for(executor, await firing.trigger(executor, schedule_name))
