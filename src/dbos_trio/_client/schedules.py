"""Schedules, as methods of :class:`~dbos_trio.Client`: the same rows ``DBOS`` writes, with
the workflow named (a client has no workflow code).

The scheduler of every executor of the owning application sees a client's change at its
next poll (``Config.scheduler_polling_interval_sec``). Nothing here is checkpointed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._engine.schedules import definitions as schedules
from dbos_trio._engine.schedules import firing
from dbos_trio._engine.schedules.definitions import (
    ACTIVE,
    PAUSED,
    ClientScheduleInput,
    WorkflowSchedule,
)
from dbos_trio.errors import DBOSException


class ClientSchedules(ClientBase):
    async def create_schedule(
        self,
        *,
        schedule_name: str,
        workflow_name: str,
        schedule: str,
        context: Any = None,
        workflow_class_name: str | None = None,
        automatic_backfill: bool = False,
        cron_timezone: str | None = None,
        queue_name: str | None = None,
        application_name: str | None = None,
    ) -> None:
        """Create a schedule of the workflow registered as ``workflow_name``, owned by
        ``application_name`` (default: the client's; with neither, an unclaimed schedule
        that every application sharing the database runs). Checked as
        :meth:`DBOS.create_schedule <dbos_trio.DBOS.create_schedule>` checks, except the
        workflow, which only an executor knows; the queue must be in the ``queues`` table.
        """
        runtime = self._require("create_schedule")
        spec = schedules.client_spec(
            ClientScheduleInput(
                schedule_name=schedule_name,
                workflow_name=workflow_name,
                schedule=schedule,
                context=context,
                workflow_class_name=workflow_class_name,
                automatic_backfill=automatic_backfill,
                cron_timezone=cron_timezone,
                queue_name=queue_name,
                application_name=application_name,
            ),
            runtime.app_name,
        )
        await schedules.create(runtime, await schedules.check_spec(runtime, spec, {}))

    async def apply_schedules(self, entries: Sequence[ClientScheduleInput]) -> None:
        """Create or redefine several schedules atomically (all or none), keeping each
        existing one's id, status and ``last_fired_at``."""
        runtime = self._require("apply_schedules")
        specs = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, ClientScheduleInput):
                raise DBOSException(
                    f"apply_schedules: entry {index} must be a ClientScheduleInput, not "
                    f"{type(entry).__name__}"
                )
            specs.append(schedules.client_spec(entry, runtime.app_name))
        rows = [await schedules.check_spec(runtime, spec, {}) for spec in specs]
        await schedules.apply(runtime, rows)

    async def list_schedules(
        self,
        *,
        status: str | Sequence[str] | None = None,
        workflow_name: str | Sequence[str] | None = None,
        schedule_name_prefix: str | Sequence[str] | None = None,
        application_name: str | Sequence[str] | None = None,
    ) -> list[WorkflowSchedule]:
        """Stored schedules by name: by default the client's application's and unclaimed
        ones (all of them for a client of no application)."""
        runtime = self._require("list_schedules")
        filters = schedules.list_filters(
            status=status,
            workflow_name=workflow_name,
            schedule_name_prefix=schedule_name_prefix,
            application_name=application_name,
            default_application=runtime.app_name,
        )
        return await schedules.listing(runtime, filters)

    async def get_schedule(self, name: str) -> WorkflowSchedule | None:
        """The stored schedule called ``name``, or None (one read; cancellation writes
        nothing, a database failure raises :class:`~dbos_trio.SystemDatabaseError`)."""
        return await schedules.get(self._require("get_schedule"), name)

    async def delete_schedule(self, name: str) -> None:
        """Delete the schedule (a missing one is not an error); runs it already enqueued
        stay. One statement: cancelled, it happened or it did not."""
        await schedules.delete(self._require("delete_schedule"), name)

    async def pause_schedule(self, name: str) -> None:
        """Stop the schedule firing until :meth:`resume_schedule`; executors see the change
        at their next poll of the schedules table. One statement."""
        await schedules.set_status(self._require("pause_schedule"), name, PAUSED)

    async def resume_schedule(self, name: str) -> None:
        """Let a paused schedule fire again: ticks while paused are skipped unless it has
        ``automatic_backfill`` (or see :meth:`backfill_schedule`). One statement."""
        await schedules.set_status(self._require("resume_schedule"), name, ACTIVE)

    async def backfill_schedule(
        self, schedule_name: str, start: datetime, end: datetime
    ) -> list[ClientWorkflowHandle[Any]]:
        """Enqueue every tick strictly between ``start`` and ``end`` not run yet; handles in
        tick order (see :meth:`DBOS.backfill_schedule <dbos_trio.DBOS.backfill_schedule>`)."""
        runtime = self._require("backfill_schedule")
        ids = await firing.backfill(runtime, schedule_name, start, end)
        return [self._handle(workflow_id) for workflow_id in ids]

    async def trigger_schedule(self, schedule_name: str) -> ClientWorkflowHandle[Any]:
        """Enqueue one run of the schedule now."""
        runtime = self._require("trigger_schedule")
        return self._handle(await firing.trigger(runtime, schedule_name))
