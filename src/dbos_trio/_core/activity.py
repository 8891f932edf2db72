"""Work over time, as a person reads it: the arithmetic behind the dashboard's overview.

Pure logic, no I/O: the system database hands over raw aggregates (rows finished per
minute and status, latency ranks, queue activity; see
:mod:`dbos_trio._sysdb.interfaces.activity`), and this module makes buckets of a chart,
percentiles of a table and the findings of the health panel from them.

Invariants, and why:

* **A chart has every bucket.** A minute in which nothing finished is a zero, not a gap:
  a chart that skipped it would draw a quiet minute as no time at all.
* **Percentiles are nearest-rank.** The database returns the row at rank
  ``ceil(n * p / 100)`` (an observed latency, never an interpolation), computed there so
  only four rows a name cross the wire however many ran.
* **A queue is served when there is evidence of a worker.** An idle executor writes
  nothing (liveness is the rows' heartbeat stamps, :mod:`dbos_trio._engine.recovery.adoption`),
  so "no live worker" can only be read as: work has waited longer than the liveness
  window, and in that window no row of the queue was dequeued and no running row of it was
  stamped. Each finding says so in those terms, with what to do.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo

import attrs

from dbos_trio._core import cron
from dbos_trio._core.statuses import CANCELLED, ENQUEUED, ERROR, PENDING, SUCCESS

MINUTE_MS = 60_000
PERCENTILES = (50, 95, 99)
FAILED = frozenset({ERROR, "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})
STARTED = "STARTED"


@attrs.frozen(kw_only=True)
class Bucket:
    """What finished from ``start_ms`` for ``width_ms``: succeeded, failed (ERROR or
    dead-lettered), cancelled."""

    start_ms: int
    width_ms: int
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0


@attrs.frozen(kw_only=True)
class Latency:
    """A workflow name's latencies (ms, created to completed) over ``count`` runs."""

    name: str
    count: int
    p50: int
    p95: int
    p99: int
    slowest: int


@attrs.frozen(kw_only=True)
class QueueLoad:
    """One queue now: waiting rows and the oldest one's creation, running rows and their
    newest heartbeat stamp, rows dequeued within the window and the newest start."""

    queue_name: str
    enqueued: int = 0
    oldest_enqueued_ms: int | None = None
    running: int = 0
    newest_stamp_ms: int | None = None
    started: int = 0
    newest_start_ms: int | None = None

    def served(self, now_ms: int, window_ms: int) -> bool:
        """Whether a worker is known to have served this queue within the window."""
        recent = now_ms - window_ms
        return bool(
            (self.started and (self.newest_start_ms or 0) >= recent)
            or (self.running and (self.newest_stamp_ms or 0) >= recent)
        )


def buckets(
    rows: Iterable[tuple[int, str, int]], since_ms: int, until_ms: int, width_ms: int
) -> list[Bucket]:
    """Every bucket of ``width_ms`` from ``since_ms`` up to ``until_ms`` (the last one may
    be partial), with ``rows`` of (minute, status, count) added in. ``width_ms`` is a whole
    number of minutes; a row outside the range is dropped."""
    if width_ms <= 0 or width_ms % MINUTE_MS:
        raise ValueError(f"bucket width {width_ms} ms is not a whole number of minutes")
    starts = list(range(since_ms, until_ms, width_ms))
    counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for minute, status, count in rows:
        at = minute * MINUTE_MS
        if since_ms <= at < until_ms:
            counts[(at - since_ms) // width_ms][status] += count
    result = []
    for index, start in enumerate(starts):
        by_status = counts.get(index, {})
        result.append(
            Bucket(
                start_ms=start,
                width_ms=width_ms,
                succeeded=by_status.get(SUCCESS, 0),
                failed=sum(n for s, n in by_status.items() if s in FAILED),
                cancelled=by_status.get(CANCELLED, 0),
            )
        )
    return result


def latencies(ranks: Iterable[tuple[str | None, int, int, int]]) -> list[Latency]:
    """Per name, from rows of (name, total, position, duration ms) at the nearest ranks of
    :data:`PERCENTILES` and the slowest (see the module docs), busiest names first."""
    by_name: dict[str | None, tuple[int, dict[int, int]]] = {}
    for name, total, position, duration in ranks:
        by_name.setdefault(name, (total, {}))[1][position] = duration
    result = []
    for name, (total, at) in by_name.items():
        values = [at.get(rank(total, p)) for p in PERCENTILES]
        slowest = at.get(total)
        if slowest is None or any(v is None for v in values):
            continue  # cut by the statement's LIMIT: an incomplete name is left out
        p50, p95, p99 = (v or 0 for v in values)
        result.append(
            Latency(name=name or "", count=total, p50=p50, p95=p95, p99=p99, slowest=slowest)
        )
    return sorted(result, key=lambda latency: (-latency.count, latency.name))


def rank(total: int, percentile: int) -> int:
    """The nearest rank of ``percentile`` among ``total`` values (1-based)."""
    return max(1, (total * percentile + 99) // 100)


def queue_loads(rows: Iterable[tuple[str, str, int, int | None]]) -> list[QueueLoad]:
    """Per queue, from rows of (queue, kind, count, stamp): kind ENQUEUED (stamp: the
    oldest's creation), PENDING (the newest heartbeat) or STARTED (the newest start)."""
    loads: dict[str, QueueLoad] = {}
    for queue, kind, count, stamp in rows:
        load = loads.get(queue) or QueueLoad(queue_name=queue)
        if kind == ENQUEUED:
            load = attrs.evolve(load, enqueued=count, oldest_enqueued_ms=stamp)
        elif kind == PENDING:
            load = attrs.evolve(load, running=count, newest_stamp_ms=stamp)
        elif kind == STARTED:
            load = attrs.evolve(load, started=count, newest_start_ms=stamp)
        loads[queue] = load
    return [loads[name] for name in sorted(loads)]


def unserved(loads: Iterable[QueueLoad], now_ms: int, window_ms: int) -> list[QueueLoad]:
    """Queues whose oldest ENQUEUED row has waited longer than ``window_ms`` with no sign
    of a worker within it (see the module docs)."""
    return [
        load
        for load in loads
        if load.enqueued
        and load.oldest_enqueued_ms is not None
        and load.oldest_enqueued_ms < now_ms - window_ms
        and not load.served(now_ms, window_ms)
    ]


def parse_fired(text: str | None) -> datetime | None:
    """A schedule's ``last_fired_at`` (ISO 8601) as an aware datetime; None if absent or
    unreadable (a hand-written value is shown, never fails the page)."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def next_fire(expression: str, timezone: str | None, now: datetime) -> datetime | None:
    """The schedule's next tick strictly after ``now``; None when its cron expression or
    time zone cannot be read here (the scheduler leaves such a schedule stopped)."""
    try:
        zone: tzinfo = cron.zone(timezone)
        return next(cron.ticks_after(expression, now, zone))
    except Exception:
        return None


def overdue_since(
    expression: str, timezone: str | None, last_fired: datetime, now: datetime, grace_s: float
) -> datetime | None:
    """The tick after ``last_fired`` if it passed more than ``grace_s`` before ``now`` (a
    schedule that should have fired again and did not), else None."""
    due = next_fire(expression, timezone, last_fired)
    if due is None or (now - due).total_seconds() <= grace_s:
        return None
    return due
