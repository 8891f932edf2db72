"""Schedules every face shares: create, apply, list, get, delete, pause, resume, backfill,
trigger (what ``DBOS``, ``Client`` and ``dbos-trio schedule`` run).

Each function checks its arguments and asks the :class:`~.reach.Reach` for its runtime at
the call (see :mod:`dbos_trio._engine.schedules.definitions` for what is checked and
:mod:`dbos_trio._engine.schedules.scheduler` for how schedules fire), then returns the
coroutine that acts.

Invariants, and why:

* **A schedule names its workflow.** ``DBOS`` passes :class:`ScheduleInput` entries (the
  workflow function, resolved through its registry: an unregistered function, an instance
  method or a signature other than ``(scheduled_time, context)`` is refused) and the queues
  it declared; a client passes :class:`ClientScheduleInput` (the workflow by name, as the
  official client does: only an executor knows its code) and its queue must be in the
  ``queues`` table. Either way the row owns the entry's application, else the face's.
* **Checkpoints as dbos 3.4 records them.** From a ``DBOS`` workflow body, create, list,
  get, delete, pause and resume are checkpoints (``DBOS.createSchedule``, ...), their step
  ids taken at the call; ``apply_schedules``, ``backfill_schedule`` and
  ``trigger_schedule`` are refused there (they are not replayable as one answer), which
  the faces that never checkpoint (a client, the command line) need not refuse.

Cancellation: every change is one transaction, so a cancelled call committed or changed
nothing (``apply_schedules`` all of its batch or none); a cancelled backfill leaves the
ticks it fired so far, and running it again fires only the rest (the ids are the ticks').
A database failure raises :class:`~dbos_trio.SystemDatabaseError` after the retries.
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from datetime import datetime
from typing import Any

from dbos_trio._core import validate
from dbos_trio._core.admission import QueueConfig
from dbos_trio._engine.context import current_workflow
from dbos_trio._engine.schedules import definitions, firing
from dbos_trio._engine.schedules.definitions import (
    ACTIVE,
    PAUSED,
    ClientScheduleInput,
    ScheduleInput,
    ScheduleSpec,
    WorkflowSchedule,
)
from dbos_trio._engine.state import Executor, Runtime
from dbos_trio._ops.reach import Reach
from dbos_trio._registry import Registry
from dbos_trio.errors import DBOSException

__all__ = [
    "ClientScheduleInput",
    "ScheduleInput",
    "WorkflowSchedule",
    "apply_schedules",
    "backfill_schedule",
    "create_schedule",
    "delete_schedule",
    "get_schedule",
    "list_schedules",
    "pause_schedule",
    "resume_schedule",
    "trigger_schedule",
]

NO_QUEUES: Mapping[str, QueueConfig] = {}


def _spec(
    entry: ScheduleInput | ClientScheduleInput,
    registry: Registry | None,
    default_application: str | None,
) -> ScheduleSpec:
    if isinstance(entry, ClientScheduleInput):
        return definitions.client_spec(entry, default_application)
    if registry is None:  # a face without workflow code names its workflows
        raise DBOSException("a schedule of a workflow function needs the DBOS that registered it")
    return definitions.spec_of(
        registry,
        schedule_name=entry.schedule_name,
        workflow=entry.workflow,
        schedule=entry.schedule,
        context=entry.context,
        automatic_backfill=entry.automatic_backfill,
        cron_timezone=entry.cron_timezone,
        queue_name=entry.queue_name,
        application_name=default_application,
    )


def _outside_workflow(runtime: Runtime, operation: str) -> None:
    # Only DBOS reaches an executor, and only its calls would be recorded.
    if isinstance(runtime, Executor) and current_workflow.get() is not None:
        raise DBOSException(f"DBOS.{operation} cannot be called from within a workflow")


def create_schedule(
    reach: Reach,
    entry: ScheduleInput | ClientScheduleInput,
    *,
    registry: Registry | None = None,
    declared: Mapping[str, QueueConfig] = NO_QUEUES,
) -> Coroutine[Any, Any, None]:
    """Create the schedule ``entry`` defines (see the module docs for how its workflow is
    named). A bad cron expression, time zone, workflow or context raises before anything
    is written; a name that exists raises :class:`~dbos_trio.DBOSException` and changes
    nothing. Step ``DBOS.createSchedule``."""
    runtime = reach.runtime("create_schedule")
    spec = _spec(entry, registry, runtime.app_name)

    async def create() -> None:
        row = await definitions.check_spec(runtime, spec, declared)
        await definitions.create(runtime, row)

    return reach.checkpoint("DBOS.createSchedule", create)


def apply_schedules(
    reach: Reach,
    entries: Sequence[ScheduleInput] | Sequence[ClientScheduleInput],
    *,
    registry: Registry | None = None,
    declared: Mapping[str, QueueConfig] = NO_QUEUES,
) -> Coroutine[Any, Any, None]:
    """Create or redefine every schedule of ``entries`` atomically (all or none), each
    existing one keeping its id, status and ``last_fired_at``. Entries are
    :class:`ScheduleInput` with a ``registry``, :class:`ClientScheduleInput` without;
    every one is checked first. Refused inside a ``DBOS`` workflow body."""
    runtime = reach.runtime("apply_schedules")
    _outside_workflow(runtime, "apply_schedules")
    kind = ScheduleInput if registry is not None else ClientScheduleInput
    specs = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, kind):
            raise DBOSException(
                f"apply_schedules: entry {index} must be a {kind.__name__}, not "
                f"{type(entry).__name__}"
            )
        specs.append(_spec(entry, registry, runtime.app_name))

    async def apply() -> None:
        rows = [await definitions.check_spec(runtime, spec, declared) for spec in specs]
        await definitions.apply(runtime, rows)

    return apply()


def list_schedules(
    reach: Reach,
    *,
    status: str | Sequence[str] | None = None,
    workflow_name: str | Sequence[str] | None = None,
    schedule_name_prefix: str | Sequence[str] | None = None,
    application_name: str | Sequence[str] | None = None,
) -> Coroutine[Any, Any, list[WorkflowSchedule]]:
    """Stored schedules by name: by default the face's application's and unclaimed ones
    (all of them for a face of no application). Step ``DBOS.listSchedules``."""
    runtime = reach.runtime("list_schedules")
    filters = definitions.list_filters(
        status=status,
        workflow_name=workflow_name,
        schedule_name_prefix=schedule_name_prefix,
        application_name=application_name,
        default_application=runtime.app_name,
    )
    return reach.checkpoint("DBOS.listSchedules", lambda: definitions.listing(runtime, filters))


def get_schedule(reach: Reach, name: str) -> Coroutine[Any, Any, WorkflowSchedule | None]:
    """The schedule called ``name``, or None. Step ``DBOS.getSchedule``."""
    validate.text(name, "name")
    runtime = reach.runtime("get_schedule")
    return reach.checkpoint("DBOS.getSchedule", lambda: definitions.get(runtime, name))


def delete_schedule(reach: Reach, name: str) -> Coroutine[Any, Any, None]:
    """Delete the schedule (a missing one is not an error); runs already enqueued stay.
    Step ``DBOS.deleteSchedule``."""
    validate.text(name, "name")
    runtime = reach.runtime("delete_schedule")
    return reach.checkpoint("DBOS.deleteSchedule", lambda: definitions.delete(runtime, name))


def pause_schedule(reach: Reach, name: str) -> Coroutine[Any, Any, None]:
    """Stop the schedule firing (every executor stops within its scheduler's polling
    interval). Step ``DBOS.pauseSchedule``."""
    validate.text(name, "name")
    runtime = reach.runtime("pause_schedule")
    return reach.checkpoint(
        "DBOS.pauseSchedule", lambda: definitions.set_status(runtime, name, PAUSED)
    )


def resume_schedule(reach: Reach, name: str) -> Coroutine[Any, Any, None]:
    """Let a paused schedule fire again from its next tick (ticks while paused are
    skipped unless it has ``automatic_backfill``). Step ``DBOS.resumeSchedule``."""
    validate.text(name, "name")
    runtime = reach.runtime("resume_schedule")
    return reach.checkpoint(
        "DBOS.resumeSchedule", lambda: definitions.set_status(runtime, name, ACTIVE)
    )


def backfill_schedule(
    reach: Reach, schedule_name: str, start: datetime, end: datetime
) -> Coroutine[Any, Any, list[str]]:
    """Enqueue every tick strictly between ``start`` and ``end`` (naive times are UTC)
    with the ids the scheduler gives them, so ticks already run are not run again; the
    ids in tick order. A missing schedule raises; refused inside a ``DBOS`` body."""
    runtime = reach.runtime("backfill_schedule")
    _outside_workflow(runtime, "backfill_schedule")
    return firing.backfill(runtime, schedule_name, start, end)


def trigger_schedule(reach: Reach, schedule_name: str) -> Coroutine[Any, Any, str]:
    """Enqueue one run of the schedule now (id ``sched-{name}-trigger-{now}``, its
    ``scheduled_time`` now); its id. A missing schedule raises; refused inside a ``DBOS``
    body."""
    runtime = reach.runtime("trigger_schedule")
    _outside_workflow(runtime, "trigger_schedule")
    return firing.trigger(runtime, schedule_name)
