"""Schedules as users see them, checked before anything is written, and their management.

A schedule is a row of ``workflow_schedules`` (the official SDK's table and row shape):
a name, the workflow it runs (by registered name, with the class for a class method), a
cron expression and time zone, a serialized context passed to every run, the queue its
runs go on, and whether missed ticks are caught up at launch. The scheduler of every
executor of the owning application (:mod:`.scheduler`) fires it; this module creates,
redefines, lists and changes rows, for :class:`~dbos_trio.DBOS` and the Client alike.

Invariants, and why:

* Every value is checked before the first write (:func:`spec_of`, :func:`check_spec`):
  the cron expression, the time zone, the workflow (registered here, not an instance
  method, callable as ``(scheduled_time, context)``), the queue (declared here, or present
  in the ``queues`` table), and that the context can be serialized. A bad one raises an
  error naming it and the database is untouched.
* A change made through this process's executor wakes its scheduler at once; another
  process's changes are seen at the scheduler's next poll.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs

from dbos_trio._core import cron, validate
from dbos_trio._core.admission import QueueConfig
from dbos_trio._core.ids import random_uuid
from dbos_trio._registry import DBOSConfiguredInstance, Registry, resolve_workflow
from dbos_trio._serialization import Codec
from dbos_trio._sysdb.records import INTERNAL_QUEUE, ScheduleFilters, ScheduleRow
from dbos_trio.errors import DBOSArgumentTypeError, DBOSException, DBOSInvalidArgumentError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime

ACTIVE = "ACTIVE"
PAUSED = "PAUSED"
SCHEDULES_KEY = "x::schedules"
"""The wakeup key of this process's scheduler: woken when a schedule changes here."""


@attrs.frozen(kw_only=True)
class WorkflowSchedule:
    """A stored schedule (the fields of ``dbos`` 3.4's ``WorkflowSchedule``).

    ``context`` is decoded with this process's serializer; one it cannot decode is given
    as its stored string. ``last_fired_at`` is the ISO 8601 time of the latest tick whose
    workflow was created by the scheduler (None before the first).
    """

    schedule_id: str
    schedule_name: str
    workflow_name: str
    workflow_class_name: str | None
    schedule: str
    status: str
    context: Any
    last_fired_at: str | None
    automatic_backfill: bool
    cron_timezone: str | None
    queue_name: str | None
    application_name: str | None


@attrs.frozen(kw_only=True)
class ScheduleInput:
    """One schedule for :meth:`DBOS.apply_schedules <dbos_trio.DBOS.apply_schedules>`."""

    schedule_name: str
    workflow: Callable[..., Any]
    schedule: str
    context: Any = None
    automatic_backfill: bool = False
    cron_timezone: str | None = None
    queue_name: str | None = None


@attrs.frozen(kw_only=True)
class ClientScheduleInput:
    """One schedule for :meth:`Client.apply_schedules <dbos_trio.Client.apply_schedules>`:
    the workflow is named, since a client has no workflow code."""

    schedule_name: str
    workflow_name: str
    schedule: str
    context: Any = None
    workflow_class_name: str | None = None
    automatic_backfill: bool = False
    cron_timezone: str | None = None
    queue_name: str | None = None
    application_name: str | None = None


@attrs.frozen(kw_only=True)
class ScheduleSpec:
    """A schedule's definition, checked (except its queue, see :func:`check_spec`)."""

    schedule_name: str
    workflow_name: str
    class_name: str | None
    schedule: str
    context: Any
    automatic_backfill: bool
    cron_timezone: str | None
    queue_name: str | None
    application_name: str | None


def check_definition(
    schedule_name: object,
    schedule: object,
    automatic_backfill: object,
    cron_timezone: object,
    queue_name: object,
) -> None:
    """The parts of a definition every form shares (raises naming the bad one)."""
    validate.text(schedule_name, "schedule_name")
    cron.check_cron(schedule)
    validate.boolean(automatic_backfill, "automatic_backfill")
    cron.check_timezone(cron_timezone)
    validate.optional_text(queue_name, "queue_name")


def check_signature(fn: Callable[..., Any], name: str) -> None:
    """A scheduled workflow is called as ``fn(scheduled_time, context)``."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # nothing to check against: a builtin or C callable
    try:
        signature.bind(datetime(2000, 1, 1, tzinfo=UTC), None)
    except TypeError:
        raise DBOSArgumentTypeError(
            f"workflow {name} cannot be scheduled: a scheduled workflow is called as "
            f"(scheduled_time: datetime, context), but its signature is {signature}"
        ) from None


def workflow_of(registry: Registry, fn: Callable[..., Any]) -> tuple[str, str | None]:
    """The registered name of ``fn`` (a workflow of ``registry``) and the class name a
    class-method workflow is stored with; instance methods cannot be scheduled."""
    if not callable(fn):
        raise DBOSArgumentTypeError(f"workflow must be a workflow function, not {fn!r}")
    registered, bound = resolve_workflow(fn, ())
    if registry.find(registered.name) is not registered:
        raise DBOSException(f"Workflow function '{registered.name}' is not registered")
    if bound and isinstance(bound[0], DBOSConfiguredInstance):
        raise DBOSException("Configured instance methods cannot be used as scheduled workflows")
    class_name = None
    if bound and isinstance(bound[0], type):
        registered.kind = "class"
        # The class is in hand: dispatch of the schedule's rows finds it even when it is
        # not importable by name (defined in a function), as a bound call's dispatch does.
        if registered.owner is None:
            registered.owner = bound[0]
        class_name = registered.class_name
    check_signature(fn, registered.name)
    return registered.name, class_name


def spec_of(
    registry: Registry,
    *,
    schedule_name: str,
    workflow: Callable[..., Any],
    schedule: str,
    context: Any,
    automatic_backfill: bool,
    cron_timezone: str | None,
    queue_name: str | None,
    application_name: str | None,
) -> ScheduleSpec:
    """A schedule of a registered workflow function, checked (the queue by
    :func:`check_spec`)."""
    check_definition(schedule_name, schedule, automatic_backfill, cron_timezone, queue_name)
    workflow_name, class_name = workflow_of(registry, workflow)
    return ScheduleSpec(
        schedule_name=schedule_name,
        workflow_name=workflow_name,
        class_name=class_name,
        schedule=schedule,
        context=context,
        automatic_backfill=automatic_backfill,
        cron_timezone=cron_timezone,
        queue_name=queue_name,
        application_name=application_name,
    )


def client_spec(entry: ClientScheduleInput, default_application: str | None) -> ScheduleSpec:
    """A schedule named by a client (no workflow code: the name is taken as given)."""
    check_definition(
        entry.schedule_name,
        entry.schedule,
        entry.automatic_backfill,
        entry.cron_timezone,
        entry.queue_name,
    )
    validate.text(entry.workflow_name, "workflow_name")
    validate.optional_text(entry.workflow_class_name, "workflow_class_name")
    validate.optional_text(entry.application_name, "application_name")
    return ScheduleSpec(
        schedule_name=entry.schedule_name,
        workflow_name=entry.workflow_name,
        class_name=entry.workflow_class_name,
        schedule=entry.schedule,
        context=entry.context,
        automatic_backfill=entry.automatic_backfill,
        cron_timezone=entry.cron_timezone,
        queue_name=entry.queue_name,
        application_name=entry.application_name or default_application,
    )


async def check_spec(
    runtime: Runtime, spec: ScheduleSpec, declared: Mapping[str, QueueConfig]
) -> ScheduleRow:
    """The row for ``spec``, once its queue is known to exist (internal, declared in this
    process, or in the ``queues`` table) and its context serializes."""
    queue = spec.queue_name
    if (
        queue is not None
        and queue != INTERNAL_QUEUE
        and queue not in declared
        and await runtime.sysdb.get_queue(queue) is None
    ):
        raise DBOSException(
            f"Queue '{queue}' is not declared. Please create the queue before using it in a "
            "schedule."
        )
    return ScheduleRow(
        schedule_id=random_uuid(),
        schedule_name=spec.schedule_name,
        workflow_name=spec.workflow_name,
        workflow_class_name=spec.class_name,
        schedule=spec.schedule,
        status=ACTIVE,
        context=encode_context(runtime.codec, spec.context, spec.schedule_name),
        last_fired_at=None,
        automatic_backfill=spec.automatic_backfill,
        cron_timezone=spec.cron_timezone,
        queue_name=queue,
        application_name=spec.application_name,
    )


def encode_context(codec: Codec, context: Any, schedule_name: str) -> str:
    """The context as stored: in this process's serializer (the column has no format
    name, so every reader assumes its own, as the official SDK's do)."""
    try:
        return codec.encode(context, None)
    except Exception as error:
        raise DBOSInvalidArgumentError(
            f"context of schedule {schedule_name!r} cannot be serialized: {error}"
        ) from error


def decode_context(codec: Codec, row: ScheduleRow) -> Any:
    """The stored context, or (unreadable here) the stored string itself."""
    try:
        return codec.decode(row.context, None, f"the context of schedule {row.schedule_name}")
    except Exception:
        return row.context


def view(codec: Codec, row: ScheduleRow) -> WorkflowSchedule:
    return WorkflowSchedule(
        schedule_id=row.schedule_id,
        schedule_name=row.schedule_name,
        workflow_name=row.workflow_name,
        workflow_class_name=row.workflow_class_name,
        schedule=row.schedule,
        status=row.status,
        context=decode_context(codec, row),
        last_fired_at=row.last_fired_at,
        automatic_backfill=row.automatic_backfill,
        cron_timezone=row.cron_timezone,
        queue_name=row.queue_name,
        application_name=row.application_name,
    )


def _names(value: Any, argument: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (validate.text(value, argument),)
    return tuple(validate.texts(value, argument))


def list_filters(
    *,
    status: str | Sequence[str] | None,
    workflow_name: str | Sequence[str] | None,
    schedule_name_prefix: str | Sequence[str] | None,
    application_name: str | Sequence[str] | None,
    default_application: str | None,
) -> ScheduleFilters:
    """``list_schedules`` filters; by default the caller's application's (and unclaimed)
    schedules, or all of them for a caller of no application."""
    # A status no schedule has (not ACTIVE or PAUSED) lists nothing, as in dbos 3.4.
    statuses = _names(status, "status")
    applications = _names(application_name, "application_name")
    if applications is None and default_application is not None:
        applications = (default_application,)
    return ScheduleFilters(
        statuses=statuses,
        workflow_names=_names(workflow_name, "workflow_name"),
        name_prefixes=_names(schedule_name_prefix, "schedule_name_prefix"),
        application_names=applications,
    )


async def create(runtime: Runtime, row: ScheduleRow) -> None:
    await runtime.sysdb.create_schedule(row)
    runtime.wakeups.wake(SCHEDULES_KEY)


async def apply(runtime: Runtime, rows: list[ScheduleRow]) -> None:
    names = [row.schedule_name for row in rows]
    if len(set(names)) != len(names):
        raise DBOSInvalidArgumentError("apply_schedules: a schedule name is given twice")
    await runtime.sysdb.apply_schedules(rows)
    runtime.wakeups.wake(SCHEDULES_KEY)


async def set_status(runtime: Runtime, name: str, status: str) -> None:
    validate.text(name, "name")
    await runtime.sysdb.set_schedule_status(name, status)
    runtime.wakeups.wake(SCHEDULES_KEY)


async def delete(runtime: Runtime, name: str) -> None:
    validate.text(name, "name")
    await runtime.sysdb.delete_schedule(name)
    runtime.wakeups.wake(SCHEDULES_KEY)


async def get(runtime: Runtime, name: str) -> WorkflowSchedule | None:
    validate.text(name, "name")
    row = await runtime.sysdb.get_schedule(name)
    return None if row is None else view(runtime.codec, row)


async def listing(runtime: Runtime, filters: ScheduleFilters) -> list[WorkflowSchedule]:
    return [view(runtime.codec, row) for row in await runtime.sysdb.list_schedules(filters)]


async def existing(runtime: Runtime, name: str) -> ScheduleRow:
    """The stored schedule called ``name``; :class:`DBOSException` if there is none."""
    validate.text(name, "schedule_name")
    row = await runtime.sysdb.get_schedule(name)
    if row is None:
        raise DBOSException(f"Schedule '{name}' does not exist")
    return row
