"""Firing a schedule: the ENQUEUED row one tick makes, for the scheduler, backfill and
trigger alike.

Invariants, and why:

* A tick's workflow id is ``sched-{name}-{tick.isoformat()}`` (a trigger's,
  ``sched-{name}-trigger-{now.isoformat()}``), exactly as the official SDK makes them, and
  the row is inserted or found in one idempotent write: any number of executors — of
  either SDK — firing one tick, and any number of backfills over it, make one workflow.
* The row is the official SDK's: ENQUEUED on the schedule's queue (the internal queue by
  default), no executor, the owning application (the schedule's, else the firing
  process's) and that application's latest version, ``schedule_name`` set, and inputs
  ``(scheduled_time, context)`` in this process's serializer. Any executor of the owner
  that registers the workflow name runs it.
* A backfill is bounded and never blocks the executor: its ticks are taken one at a time
  (each firing is a database round trip, a point where Trio may switch and cancel), and a
  range holding more than :data:`MAX_BACKFILL_TICKS` is refused, naming the schedule,
  before anything is written — a per-second cron over three days is 259,200 workflows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import trio

from dbos_trio._core import cron
from dbos_trio._engine.schedules.definitions import decode_context, existing
from dbos_trio._engine.workflows.rows import Placement, Writer, new_row
from dbos_trio._sysdb.records import INTERNAL_QUEUE, ScheduleRow
from dbos_trio._sysdb.wakeups import queue_key
from dbos_trio.errors import DBOSArgumentTypeError, DBOSInvalidArgumentError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime

# The most ticks one backfill may fire (docs/schedules.md): a larger range is refused.
MAX_BACKFILL_TICKS = 10_000


async def fire(
    runtime: Runtime,
    row: ScheduleRow,
    tick: datetime,
    context: Any,
    *,
    workflow_id: str | None = None,
    record: bool = False,
) -> bool:
    """Make (or find) the workflow of ``row`` for ``tick``; True if this call made it.

    ``record``: a regular firing, remembered as the schedule's ``last_fired_at`` when it
    made the row (backfills and triggers are not).
    """
    codec = runtime.codec
    fmt = codec.default_format
    queue = row.queue_name or INTERNAL_QUEUE
    owner = row.application_name if row.application_name is not None else runtime.app_name
    new = new_row(
        workflow_id=workflow_id or cron.firing_id(row.schedule_name, tick),
        name=row.workflow_name,
        class_name=row.workflow_class_name,
        config_name=None,
        inputs=codec.encode_inputs((tick, context), {}, fmt),
        serialization=fmt,
        now_ms=runtime.clock.now_ms(),
        writer=Writer(
            executor_id=None,
            application_version=None,  # the owner's latest, looked up in the write
            application_id=None,
            application_name=owner,
        ),
        placement=Placement(queue_name=queue),
        schedule_name=row.schedule_name,
    )
    init = await runtime.sysdb.fire_schedule(
        new,
        fired_at=tick.isoformat() if record else None,
        version_of=owner,
    )
    if init.created:
        runtime.wakeups.wake(queue_key(queue))
    return init.created


async def backfill(runtime: Runtime, name: str, start: datetime, end: datetime) -> list[str]:
    """Fire every tick strictly between ``start`` and ``end`` (naive times are UTC) that has
    no workflow yet; the ids of all of them, made now or before, in tick order."""
    for moment, argument in ((start, "start"), (end, "end")):
        if not isinstance(moment, datetime):
            raise DBOSArgumentTypeError(
                f"{argument} must be a datetime, not {type(moment).__name__}"
            )
    row = await existing(runtime, name)
    context = decode_context(runtime.codec, row)
    tz = cron.zone(row.cron_timezone)
    ticks: list[datetime] = []
    for tick in cron.ticks_between(row.schedule, start, end, tz):
        if len(ticks) == MAX_BACKFILL_TICKS:
            raise DBOSInvalidArgumentError(
                f"backfilling schedule {row.schedule_name!r} from {start.isoformat()} to "
                f"{end.isoformat()} would fire more than {MAX_BACKFILL_TICKS:,} ticks of "
                f"{row.schedule!r}: nothing was written; backfill a shorter range, in parts"
            )
        ticks.append(tick)
        if len(ticks) % 256 == 0:
            await trio.lowlevel.checkpoint()  # counting is CPU work: let others run
    ids = []
    for tick in ticks:
        await fire(runtime, row, tick, context)
        ids.append(cron.firing_id(row.schedule_name, tick))
    return ids


async def trigger(runtime: Runtime, name: str) -> str:
    """Fire the schedule once now, outside its cron; the new workflow's id."""
    row = await existing(runtime, name)
    now = datetime.fromtimestamp(runtime.clock.now(), UTC)
    workflow_id = cron.trigger_id(row.schedule_name, now)
    await fire(runtime, row, now, decode_context(runtime.codec, row), workflow_id=workflow_id)
    return workflow_id
