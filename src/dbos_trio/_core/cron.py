"""Cron arithmetic for schedules: which instants a schedule fires at, and their ids.

Pure logic, no I/O. The tick times come from ``croniter`` with ``second_at_beginning=True``
(a 6-field expression has its seconds first), iterated in the schedule's time zone — the
library and the options the official ``dbos`` 3.4 SDK uses. That is the point: a workflow id
is ``sched-{schedule name}-{tick.isoformat()}``, so two executors firing the same tick, of
either SDK, must compute the *same* instant with the *same* UTC offset to make one workflow.
On a daylight-saving day the ticks are croniter's: a wall time that does not exist (spring
forward) fires at the first instant after the gap, and a wall time that happens twice (fall
back) fires twice, once per offset (``01:00:00-04:00`` and ``01:00:00-05:00``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo

from croniter import croniter  # type: ignore[import-untyped]

from dbos_trio._core import validate
from dbos_trio.errors import DBOSInvalidArgumentError

# croniter's own aliases (@hourly, @daily, ...), accepted as the official SDK accepts them.
_ALIASES = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
# The most jitter a firing is delayed by, and its share of the wait before it (see jitter).
MAX_JITTER_SECONDS = 10.0
JITTER_SHARE = 0.1


def check_cron(expression: object, argument: str = "schedule") -> str:
    """A cron expression of 5 fields, or 6 with seconds first (or an ``@`` alias);
    :class:`~dbos_trio.DBOSInvalidArgumentError` naming ``argument`` otherwise."""
    text = validate.text(expression, argument)
    fields = text.split()
    if text.strip().lower() not in _ALIASES and len(fields) not in (5, 6):
        raise DBOSInvalidArgumentError(
            f"Invalid cron schedule: {argument} {text!r} must have 5 fields, or 6 with "
            "seconds first"
        )
    if not croniter.is_valid(text, second_at_beginning=True):
        raise DBOSInvalidArgumentError(f"Invalid cron schedule: {argument} {text!r}")
    return text


def check_timezone(name: object, argument: str = "cron_timezone") -> str | None:
    """None (UTC), or the name of an IANA time zone this machine knows."""
    if name is None:
        return None
    text = validate.text(name, argument)
    try:
        ZoneInfo(text)
    except Exception:
        raise DBOSInvalidArgumentError(
            f"Invalid timezone: {argument} {text!r} is not an IANA time zone name"
        ) from None
    return text


def zone(name: str | None) -> tzinfo:
    """The time zone a schedule's cron expression is read in (UTC when None)."""
    return UTC if name is None else ZoneInfo(name)


def ticks_after(expression: str, after: datetime, tz: tzinfo) -> Iterator[datetime]:
    """Every firing instant strictly after ``after``, in order, as aware datetimes in ``tz``
    (for ever: the caller stops)."""
    if after.tzinfo is None:
        after = after.replace(tzinfo=UTC)
    ticks = croniter(expression, after.astimezone(tz), second_at_beginning=True)
    while True:
        tick: datetime = ticks.get_next(datetime)
        yield tick


def ticks_between(
    expression: str, start: datetime, end: datetime, tz: tzinfo
) -> Iterator[datetime]:
    """The firing instants strictly between ``start`` and ``end`` (naive times are UTC), in
    order, one at a time: a per-second cron over years is billions of ticks, so a caller
    that could meet such a range takes them lazily and bounds how many it takes."""
    if end.tzinfo is None:
        end = end.replace(tzinfo=UTC)
    for tick in ticks_after(expression, start, tz):
        if tick >= end:
            return
        yield tick


def latest_ticks(
    expression: str, after: datetime, before: datetime, tz: tzinfo, most: int
) -> tuple[list[datetime], bool]:
    """Up to ``most`` of the latest firing instants strictly between ``after`` and
    ``before``, in order, and whether older ones were left out.

    Counted back from ``before``, so the work is bounded by ``most`` however far back
    ``after`` lies (a schedule last fired in 1970 costs no more than one last fired a
    minute ago)."""
    for moment in (after, before):
        if moment.tzinfo is None:
            raise ValueError("latest_ticks needs aware datetimes")
    ticks = croniter(expression, before.astimezone(tz), second_at_beginning=True)
    found: list[datetime] = []
    while len(found) < most:
        tick: datetime = ticks.get_prev(datetime)
        if tick <= after:
            return found[::-1], False
        if tick < before:
            found.append(tick)
    older: datetime = ticks.get_prev(datetime)
    return found[::-1], older > after


def firing_id(schedule_name: str, tick: datetime) -> str:
    """The workflow id of a schedule's regular firing at ``tick`` (the cross-SDK form)."""
    return f"sched-{schedule_name}-{tick.isoformat()}"


def trigger_id(schedule_name: str, now: datetime) -> str:
    """The workflow id of a schedule triggered by hand at ``now`` (the cross-SDK form)."""
    return f"sched-{schedule_name}-trigger-{now.isoformat()}"


def jitter(wait_seconds: float, fraction: float) -> float:
    """How much later than its tick a firing is made, for ``fraction`` in [0, 1).

    As the official SDK does: up to a tenth of the wait before the tick, at most 10 s, so
    executors of one application firing the same tick do not all write at the same
    instant. The tick itself (the id and ``scheduled_time``) is never moved.
    """
    return max(0.0, fraction * min(max(wait_seconds, 0.0) * JITTER_SHARE, MAX_JITTER_SECONDS))


def epoch_datetime(epoch_seconds: float, tz: tzinfo = UTC) -> datetime:
    """An aware datetime for seconds since the epoch."""
    return datetime.fromtimestamp(epoch_seconds, tz)
