"""Work over time and what needs attention, from the system tables alone: the reads behind
the dashboard's overview (any face may call them; none is checkpointed).

* :func:`overview` — what finished per bucket of a window (succeeded, failed, cancelled),
  latency percentiles by workflow name, every queue's backlog (count, oldest waiting) and
  service, and counts by status.
* :func:`health` — findings, each with what to do: a queue whose work waits with no live
  worker (or that is paused with work waiting), work pinned to a version no live
  executor runs, PENDING work of a silent executor (the doctor's rules,
  :mod:`dbos_trio._engine.recovery.doctor`), and a schedule whose last run failed or that
  stopped firing.

Invariants, and why:

* **Bounded reads.** Every statement is a range of a time index over the window, an
  in-flight partial index, or a lookup by primary key (a schedule's last run: its id is
  ``sched-{name}-{last_fired_at}``), so a page costs what the window and the work still
  to run hold, not the table's history. The window is at most :data:`MAX_WINDOW_MINUTES`.
* **Liveness is the heartbeat's.** "Live" means seen within three heartbeat intervals
  (the recovery's own window, :func:`~dbos_trio._engine.recovery.adoption.window_ms`), of
  the ``heartbeat_interval`` given (the executors' setting; 10 s by default).

Arguments are checked at the call (a bad window raises
:class:`~dbos_trio.DBOSInvalidArgumentError` before anything is read). Cancellation raises
``trio.Cancelled`` and leaves nothing behind (reads only); a database failure raises
:class:`~dbos_trio.SystemDatabaseError` after the retries.
"""

from __future__ import annotations

from collections.abc import Coroutine
from datetime import UTC, datetime
from typing import Any

import attrs

from dbos_trio._config import DEFAULT_HEARTBEAT_INTERVAL
from dbos_trio._core import activity, validate
from dbos_trio._core.activity import Bucket, Latency, QueueLoad
from dbos_trio._core.pickled import one_line, read_error
from dbos_trio._engine.recovery import doctor
from dbos_trio._engine.recovery.adoption import window_ms
from dbos_trio._engine.recovery.doctor import Finding
from dbos_trio._engine.schedules.definitions import ACTIVE
from dbos_trio._engine.state import Runtime
from dbos_trio._ops.reach import Reach
from dbos_trio._sysdb.records import ScheduleFilters, ScheduleRow, WorkflowFilters

__all__ = ["Finding", "Overview", "health", "overview"]

MAX_WINDOW_MINUTES = 7 * 24 * 60
BUCKETS = 60
LATENCY_ROWS = 4 * 50  # four ranks a name: the 50 busiest names
# Latency percentiles are of the latest this many runs finished in the window: a bounded
# read of the completed_at index, however busy the window was.
LATENCY_SAMPLE = 10_000
# The overview's "dequeued lately" column counts starts within this last stretch.
RECENT_STARTS_MS = 60_000
MAX_APPLICATIONS = 20
MAX_SCHEDULES = 500
# A schedule more than this late for its next tick is reported as stopped: the scheduler
# polls every 30 s by default and jitters a firing by up to 10 s.
SCHEDULE_GRACE_SECONDS = 120.0


@attrs.frozen(kw_only=True)
class Overview:
    """The window [``since_ms``, ``until_ms``) read at ``now_ms``: ``buckets`` of what
    finished, ``latencies`` by name (of the latest :data:`LATENCY_SAMPLE` runs), ``queues``
    now (``started``: dequeued in the last :data:`RECENT_STARTS_MS`), ``statuses``
    (in-flight and DELAYED rows now; final ones finished in the window)."""

    now_ms: int
    since_ms: int
    until_ms: int
    buckets: list[Bucket]
    latencies: list[Latency]
    queues: list[QueueLoad]
    statuses: dict[str, int]


def _minute_floor(ms: int) -> int:
    return ms - ms % activity.MINUTE_MS


def overview(reach: Reach, *, minutes: int = 60) -> Coroutine[Any, Any, Overview]:
    """The last ``minutes`` (1 to a week) in :data:`BUCKETS` buckets of whole minutes (one
    a minute up to an hour), the latest one the current, partial minute."""
    validate.integer(minutes, "minutes", low=1, high=MAX_WINDOW_MINUTES)
    runtime = reach.runtime("overview")

    async def read() -> Overview:
        now = runtime.clock.now_ms()
        width = max(1, -(-minutes // BUCKETS)) * activity.MINUTE_MS
        until = _minute_floor(now) + activity.MINUTE_MS
        count = -(-minutes * activity.MINUTE_MS // width)
        since = until - count * width
        sysdb = runtime.sysdb
        finished = await sysdb.finished_per_minute(since, until)
        ranks = await sysdb.latency_ranks(since, until, LATENCY_SAMPLE, LATENCY_ROWS)
        queues = await sysdb.queue_activity(now - RECENT_STARTS_MS)
        statuses = {s.status: s.count for s in await sysdb.status_counts()}
        for minute in finished:  # the final statuses of the window: the chart's own rows
            statuses[minute.status] = statuses.get(minute.status, 0) + minute.count
        return Overview(
            now_ms=now,
            since_ms=since,
            until_ms=until,
            buckets=activity.buckets(
                ((m.minute, m.status, m.count) for m in finished), since, until, width
            ),
            latencies=activity.latencies(
                (r.name, r.total, r.position, r.duration_ms) for r in ranks
            ),
            queues=activity.queue_loads(
                (q.queue_name, q.kind, q.count, q.stamp_ms) for q in queues
            ),
            statuses=statuses,
        )

    return read()


def health(
    reach: Reach,
    *,
    heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
    all_applications: bool = False,
) -> Coroutine[Any, Any, list[Finding]]:
    """Everything that needs an operator now (see the module docs), each finding with its
    fix; an empty list when nothing does. The runtime's application's (and unclaimed
    rows'); every application's for a face of none or with ``all_applications`` (the
    dashboard's view: the whole database). Queues are judged across applications."""
    validate.seconds(heartbeat_interval, "heartbeat_interval", positive=True)
    validate.boolean(all_applications, "all_applications")
    runtime = reach.runtime("health")
    live_ms = window_ms(heartbeat_interval)
    scope = None if all_applications else runtime.app_name

    async def read() -> list[Finding]:
        now = runtime.clock.now_ms()
        found = await _queues(runtime, now, live_ms)
        found += await _executors_and_versions(runtime, scope, now, live_ms)
        found += await _schedules(runtime, scope, now)
        return found

    return read()


async def _queues(runtime: Runtime, now: int, live_ms: int) -> list[Finding]:
    rows = await runtime.sysdb.queue_activity(now - live_ms)
    loads = activity.queue_loads((q.queue_name, q.kind, q.count, q.stamp_ms) for q in rows)
    # A paused queue's work waits by the operator's choice: said as such, not as a queue
    # nobody serves.
    paused = {q.name for q in await runtime.sysdb.list_queues(None) if q.paused}
    held = [
        Finding(
            kind="paused-queue",
            subject=load.queue_name,
            count=load.enqueued,
            detail=(
                f"paused, with {load.enqueued} ENQUEUED waiting (the oldest "
                f"{_seconds(now - (load.oldest_enqueued_ms or now))})"
            ),
            fix=f"dbos-trio queue unpause {load.queue_name} when it should run again",
        )
        for load in loads
        if load.queue_name in paused and load.enqueued
    ]
    loads = [load for load in loads if load.queue_name not in paused]
    return held + [
        Finding(
            kind="unserved-queue",
            subject=load.queue_name,
            count=load.enqueued,
            detail=(
                f"{load.enqueued} ENQUEUED, the oldest waiting "
                f"{_seconds(now - (load.oldest_enqueued_ms or now))}; no row of it was "
                f"dequeued or stamped as running in the last {_seconds(live_ms)}: no live "
                "worker serves it"
            ),
            fix=(
                f"start an executor of the application that declares queue "
                f"{load.queue_name!r} and registers its workflows (or check its limits: "
                "dbos-trio queue list)"
            ),
        )
        for load in activity.unserved(loads, now, live_ms)
    ]


async def _executors_and_versions(
    runtime: Runtime, scope: str | None, now: int, live_ms: int
) -> list[Finding]:
    sysdb = runtime.sysdb
    versions = await sysdb.list_application_versions(scope)
    if scope is not None:
        applications: list[str | None] = [scope]
    else:
        names = sorted({v.application_name for v in versions if v.application_name})
        applications = list(names[:MAX_APPLICATIONS]) or [None]
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for application in applications:
        latest = next(
            (
                v.version_name
                for v in versions  # newest first; unclaimed ones are everyone's
                if v.application_name in (application, None)
            ),
            None,
        )
        counts = await sysdb.active_counts(application)
        flag = f" -a {application}" if application else ""
        for finding in doctor.silent_executors(counts, now, live_ms, flag) + (
            doctor.unrun_versions(counts, latest, now, live_ms)
        ):
            if (finding.kind, finding.subject) not in seen:
                seen.add((finding.kind, finding.subject))
                findings.append(finding)
    return findings


async def _schedules(runtime: Runtime, scope: str | None, now_ms: int) -> list[Finding]:
    rows = await runtime.sysdb.list_schedules(
        ScheduleFilters(statuses=(ACTIVE,), application_names=None if scope is None else (scope,))
    )
    rows = rows[:MAX_SCHEDULES]
    now = datetime.fromtimestamp(now_ms / 1000, UTC)
    last_runs = {
        f"sched-{row.schedule_name}-{row.last_fired_at}": row for row in rows if row.last_fired_at
    }
    runs = (
        await runtime.sysdb.list_workflows(
            WorkflowFilters(workflow_ids=tuple(last_runs), load_input=False, load_output=True)
        )
        if last_runs
        else []
    )
    findings = []
    for run in runs:
        row = last_runs[run.workflow_id]
        if run.status in activity.FAILED:
            reading = read_error(run.error) if run.error else None
            why = f": {one_line(reading.error)}" if reading is not None else ""
            findings.append(
                Finding(
                    kind="schedule-failed",
                    subject=row.schedule_name,
                    count=1,
                    detail=f"its last run {run.workflow_id} ended in {run.status}{why}",
                    fix=(
                        "open the run to see why, fix the workflow and retry it (dbos-trio "
                        f"workflow retry ID); the schedule keeps firing unless paused "
                        f"(dbos-trio schedule pause {row.schedule_name})"
                    ),
                )
            )
    for row in rows:
        findings += _overdue(row, now)
    return findings


def _overdue(row: ScheduleRow, now: datetime) -> list[Finding]:
    fired = activity.parse_fired(row.last_fired_at)
    if fired is None:
        return []
    due = activity.overdue_since(
        row.schedule, row.cron_timezone, fired, now, SCHEDULE_GRACE_SECONDS
    )
    if due is None:
        return []
    late = (now - due).total_seconds()
    upcoming = activity.next_fire(row.schedule, row.cron_timezone, now)
    # The rows cannot tell a schedule resumed since its missed ticks (they are skipped
    # unless it backfills) from one nobody fires: the detail says both, with the next tick.
    return [
        Finding(
            kind="schedule-stopped",
            subject=row.schedule_name,
            count=1,
            detail=(
                f"ACTIVE but not fired since {fired.isoformat()}; its next tick "
                f"{due.isoformat()} passed {_seconds(late * 1000)} ago with no run (if it "
                "was paused until lately, ticks while paused are skipped: it fires next at "
                f"{upcoming.isoformat() if upcoming else 'an unknown time'})"
            ),
            fix=(
                "run an executor of the schedule's application"
                + (f" ({row.application_name})" if row.application_name else "")
                + f" that registers workflow {row.workflow_name!r}; its log names the "
                "schedule if its row cannot be read"
            ),
        )
    ]


def _seconds(ms: float) -> str:
    seconds = max(0.0, ms / 1000)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
