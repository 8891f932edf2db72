"""The scheduler: a task of the executor's nursery that fires this application's schedules.

Invariants, and why:

* The set of running schedules follows the ``workflow_schedules`` table. Every polling
  interval (``Config.scheduler_polling_interval_sec``; every second during the first
  minute after launch, so schedules created around launch start promptly) the scheduler
  lists the schedules of its application and the unclaimed ones, and keeps one task per
  ACTIVE schedule: started for a new or resumed one, restarted when its definition
  (workflow, class, cron, context, time zone, queue) changes, stopped when it is paused or
  deleted. So a change made by any process — another executor, the official SDK, a
  Client, the CLI — takes effect within one interval; one made through this executor
  wakes the scheduler at once. A failed poll keeps the running set as it was.
* Each schedule task sleeps on the Trio clock until its next tick, plus a jitter (see
  :func:`dbos_trio._core.cron.jitter`), then fires it (:func:`.firing.fire`). The clock is
  :class:`~dbos_trio._clock.Clock`, so ``MockClock`` drives a day of ticks in seconds.
* Ticks are never skipped while the task runs: if a firing is slow (the database is
  down, and the write retries), the ticks passed meanwhile fire once it is back, each
  with its own id. Ticks that passed while no task ran — the process was down, or the
  schedule paused — are skipped, unless the schedule has ``automatic_backfill``: then a
  task starting for it first fires the ticks after its ``last_fired_at``, at most
  :data:`MAX_CATCH_UP_TICKS` of them (the latest; a WARNING names the schedule when older
  ones are left out). The ticks are counted back from now, so a ``last_fired_at`` decades
  old costs no more than one a minute old, and each firing is a round trip where Trio may
  switch: one hostile row never holds up the other schedules or the executor's shutdown.
* Nothing a schedule does stops the scheduler: a firing that fails is logged and the next
  tick comes; a schedule whose row cannot be read (its context, its cron) is logged and
  left stopped until its definition changes.
"""

from __future__ import annotations

import logging
import random
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs
import trio

from dbos_trio._core import cron
from dbos_trio._engine.schedules import definitions as schedules
from dbos_trio._engine.schedules.definitions import ACTIVE, SCHEDULES_KEY, ScheduleSpec
from dbos_trio._engine.schedules.firing import fire
from dbos_trio._sysdb.records import ScheduleFilters, ScheduleRow

if TYPE_CHECKING:
    from dbos_trio._engine.state import Executor

logger = logging.getLogger("dbos_trio.scheduler")

STARTUP_SECONDS = 60.0
# The most missed ticks a schedule with automatic_backfill fires when its task starts.
MAX_CATCH_UP_TICKS = 1_000
STARTUP_POLL_SECONDS = 1.0


def signature(row: ScheduleRow) -> tuple[Any, ...]:
    """What a schedule task was started from: a change of any of these restarts it."""
    return (
        row.workflow_name,
        row.workflow_class_name,
        row.schedule,
        row.context,
        row.cron_timezone,
        row.queue_name,
    )


@attrs.define(eq=False)
class _Running:
    signature: tuple[Any, ...]
    scope: trio.CancelScope


async def start(executor: Executor) -> None:
    """At launch: upsert the schedules declared with ``@dbos.scheduled`` (all or none; an
    undeclared queue fails the launch before any is written), then start the scheduler."""
    declared = executor.registry.schedules.values()
    specs = [
        ScheduleSpec(
            schedule_name=d.schedule_name,
            workflow_name=d.workflow_name,
            class_name=d.class_name,
            schedule=d.schedule,
            context=d.context,
            automatic_backfill=d.automatic_backfill,
            cron_timezone=d.cron_timezone,
            queue_name=d.queue_name,
            application_name=executor.app_name,
        )
        for d in declared
    ]
    if specs:
        rows = [await schedules.check_spec(executor, spec, {}) for spec in specs]
        await schedules.apply(executor, rows)
    await executor.nursery.start(supervise, executor)


async def supervise(
    executor: Executor, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Run this application's schedules until cancelled (with the executor's nursery)."""
    interval = executor.config.scheduler_polling_interval_sec
    started = trio.current_time()
    running: dict[str, _Running] = {}
    filters = ScheduleFilters(application_names=(executor.app_name,))
    async with trio.open_nursery() as tasks:
        with executor.wakeups.subscribe(SCHEDULES_KEY) as wakeup:
            task_status.started()
            while True:
                try:
                    rows: list[ScheduleRow] | None = await executor.sysdb.list_schedules(filters)
                except Exception as error:
                    logger.warning("cannot list schedules (keeping the running ones): %r", error)
                    rows = None
                if rows is not None:
                    _reconcile(executor, tasks, running, rows)
                startup = trio.current_time() - started < STARTUP_SECONDS
                await wakeup.wait(min(interval, STARTUP_POLL_SECONDS) if startup else interval)


def _reconcile(
    executor: Executor, tasks: trio.Nursery, running: dict[str, _Running], rows: list[ScheduleRow]
) -> None:
    """Start, restart and stop schedule tasks to match the rows just read."""
    current = {row.schedule_id for row in rows}
    for schedule_id in [sid for sid in running if sid not in current]:
        running.pop(schedule_id).scope.cancel()
    for row in rows:
        task = running.get(row.schedule_id)
        if row.status != ACTIVE:
            if task is not None:
                running.pop(row.schedule_id).scope.cancel()
            continue
        if task is not None and task.signature == signature(row):
            continue
        if task is not None:
            # Redefined: the new definition starts from now, with no catching up.
            task.scope.cancel()
        scope = trio.CancelScope()
        running[row.schedule_id] = _Running(signature(row), scope)
        tasks.start_soon(_run, executor, row, scope, task is None)


async def _run(
    executor: Executor, row: ScheduleRow, scope: trio.CancelScope, catch_up: bool
) -> None:
    with scope:
        try:
            context = executor.codec.decode(
                row.context, None, f"the context of schedule {row.schedule_name}"
            )
            tz = cron.zone(row.cron_timezone)
            cron.check_cron(row.schedule)
        except Exception as error:
            logger.error(
                "cannot run schedule %r (it stays stopped until it is redefined): %r",
                row.schedule_name,
                error,
            )
            return
        clock = executor.clock
        if catch_up and row.automatic_backfill and row.last_fired_at:
            await _catch_up(executor, row, context, clock.now())
        start = cron.epoch_datetime(clock.now(), tz)
        for tick in cron.ticks_after(row.schedule, start, tz):
            at = tick.timestamp()
            await clock.sleep_until(at + cron.jitter(at - clock.now(), random.random()))
            try:
                await fire(executor, row, tick, context, record=True)
            except Exception as error:
                logger.warning(
                    "schedule %r: firing %s failed: %r", row.schedule_name, tick.isoformat(), error
                )


async def _catch_up(executor: Executor, row: ScheduleRow, context: Any, now: float) -> None:
    """Fire the ticks missed since the schedule last fired (``automatic_backfill``), the
    latest :data:`MAX_CATCH_UP_TICKS` of them at most."""
    try:
        last = datetime.fromisoformat(row.last_fired_at or "")
        if last.tzinfo is None:
            last = last.replace(tzinfo=UTC)
        tz = cron.zone(row.cron_timezone)
        ticks, older = cron.latest_ticks(
            row.schedule, last, cron.epoch_datetime(now), tz, MAX_CATCH_UP_TICKS
        )
        if older:
            logger.warning(
                "schedule %r missed more than %d ticks since it last fired (%s): catching up "
                "only the latest %d; backfill_schedule fires older ones if they are wanted",
                row.schedule_name,
                MAX_CATCH_UP_TICKS,
                row.last_fired_at,
                MAX_CATCH_UP_TICKS,
            )
        for tick in ticks:
            await fire(executor, row, tick, context)
        if ticks:
            logger.info("schedule %r: caught up %d ticks", row.schedule_name, len(ticks))
    except Exception as error:
        logger.warning("schedule %r: catching up failed: %r", row.schedule_name, error)
