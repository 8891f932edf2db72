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
from dbos_trio._ops import schedules as ops
from dbos_trio._ops.schedules import ClientScheduleInput, WorkflowSchedule


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
        entry = ClientScheduleInput(
            schedule_name=schedule_name,
            workflow_name=workflow_name,
            schedule=schedule,
            context=context,
            workflow_class_name=workflow_class_name,
            automatic_backfill=automatic_backfill,
            cron_timezone=cron_timezone,
            queue_name=queue_name,
            application_name=application_name,
        )
        await ops.create_schedule(self._reach, entry)

    async def apply_schedules(self, entries: Sequence[ClientScheduleInput]) -> None:
        """Create or redefine several schedules atomically (all or none), keeping each
        existing one's id, status and ``last_fired_at``."""
        await ops.apply_schedules(self._reach, entries)

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
        return await ops.list_schedules(
            self._reach,
            status=status,
            workflow_name=workflow_name,
            schedule_name_prefix=schedule_name_prefix,
            application_name=application_name,
        )

    async def get_schedule(self, name: str) -> WorkflowSchedule | None:
        """The stored schedule called ``name``, or None (one read; cancellation writes
        nothing, a database failure raises :class:`~dbos_trio.SystemDatabaseError`)."""
        return await ops.get_schedule(self._reach, name)

    async def delete_schedule(self, name: str) -> None:
        """Delete the schedule (a missing one is not an error); runs it already enqueued
        stay. One statement: cancelled, it happened or it did not."""
        await ops.delete_schedule(self._reach, name)

    async def pause_schedule(self, name: str) -> None:
        """Stop the schedule firing until :meth:`resume_schedule`; executors see the change
        at their next poll of the schedules table. One statement."""
        await ops.pause_schedule(self._reach, name)

    async def resume_schedule(self, name: str) -> None:
        """Let a paused schedule fire again: ticks while paused are skipped unless it has
        ``automatic_backfill`` (or see :meth:`backfill_schedule`). One statement."""
        await ops.resume_schedule(self._reach, name)

    async def backfill_schedule(
        self, schedule_name: str, start: datetime, end: datetime
    ) -> list[ClientWorkflowHandle[Any]]:
        """Enqueue every tick strictly between ``start`` and ``end`` not run yet; handles in
        tick order (see :meth:`DBOS.backfill_schedule <dbos_trio.DBOS.backfill_schedule>`)."""
        ids = await ops.backfill_schedule(self._reach, schedule_name, start, end)
        return [self._handle(workflow_id) for workflow_id in ids]

    async def trigger_schedule(self, schedule_name: str) -> ClientWorkflowHandle[Any]:
        """Enqueue one run of the schedule now."""
        return self._handle(await ops.trigger_schedule(self._reach, schedule_name))
